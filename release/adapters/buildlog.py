"""A build's log file that a full or unwritable log directory cannot turn into a failed build.

``open_log(path, header)`` opens the log (line-buffered, so torchbot's own lines reach the file
or fail at once). When it cannot be made or written (ENOSPC, EDQUOT, EACCES, EROFS: torchbot's
fault, not the build's), the build still runs, with its output on a pipe whose last
``TAIL_BYTES`` torchbot keeps in memory; ``close()`` writes them to the log if the directory
takes them by then. ``problem`` holds the first write error (None while all went to the file),
so the caller can tell a build that failed from one whose log directory filled up.
May import: nothing of torchbot.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from pathlib import Path

TAIL_BYTES = 256 * 1024


class BuildLog:
    def __init__(self, path: Path):
        self.path = path
        self.problem: OSError | None = None
        self._file = None
        self._tail: deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()
        self._pipe: tuple[int, int] | None = None
        self._pump: threading.Thread | None = None

    # -- for the child ---------------------------------------------------------------------

    def fileno(self) -> int:
        """The build's stdout/stderr: the log file, or the pipe to the in-memory tail."""
        if self._file is not None:
            return self._file.fileno()
        if self._pipe is None:
            self._pipe = os.pipe()
            self._pump = threading.Thread(target=self._read, args=(self._pipe[0],), daemon=True,
                                          name="torchbot-buildlog")
            self._pump.start()
        return self._pipe[1]

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                self._keep(chunk)

    def _keep(self, data: bytes) -> None:
        with self._lock:
            self._tail.append(data)
            self._size += len(data)
            while self._size > TAIL_BYTES and len(self._tail) > 1:
                self._size -= len(self._tail.popleft())

    # -- for torchbot ----------------------------------------------------------------------

    def write(self, text: str) -> bool:
        """One of torchbot's own lines; False when the file does not take it (kept in memory)."""
        if self._file is not None:
            try:
                self._file.write(text)
                self._file.flush()
                return True
            except OSError as err:
                self.problem = self.problem or err
                return False
        self._keep(text.encode(errors="replace"))
        return False

    def flush(self) -> None:  # file-like, for callers that flush
        return None

    def child_ended(self) -> None:
        """The build's processes are gone: the pipe's write end is closed so the tail is whole."""
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe[1])
            if self._pump is not None:
                self._pump.join(timeout=10)
            self._pipe = (self._pipe[0], -1)

    def close(self) -> None:
        """Close the file, or write the kept tail to it now if the directory takes it."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            return
        self.child_ended()
        with self._lock:
            data = b"".join(self._tail)
        try:
            self.path.write_bytes(b"torchbot: the log directory did not take this log while the build ran; "
                                  b"its last part follows\n" + data)
        except OSError:
            return

    def where(self) -> str:
        why = (self.problem.strerror or str(self.problem)) if self.problem else ""
        return f"TORCHBOT_LOG_DIR {self.path.parent}: {why}"


def open_log(path: Path, header: str) -> BuildLog:
    log = BuildLog(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log._file = path.open("w", buffering=1)
        log._file.write(header)
        log._file.flush()
    except OSError as err:
        log.problem = err
        if log._file is not None:
            with contextlib.suppress(OSError):
                log._file.close()
            log._file = None
        log._keep(header.encode(errors="replace"))
    return log
