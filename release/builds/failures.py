"""Why a build failed, in the line that reports it: the last error lines of its log (Nix's
``error:`` lines, a few at most), and the command that retries it. The log path travels
beside the message (the terminal and Slack show it), so the message itself stays one line.

Pure but for reading the end of a log file.

May import: config.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

MAX_LINES = 3  # error lines kept
MAX_CHARS = 240  # per line
TAIL_BYTES = 64 * 1024  # how much of a log's end is read
_ERROR = re.compile(r"^\s*error:\s*(.+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def error_lines(text: str, limit: int = MAX_LINES) -> list[str]:
    """The last ``error:`` lines of a build log (Nix's), oldest first, without repeats; a log
    without any gives its last lines that are not torchbot's own (pure)."""
    lines = [_ANSI.sub("", raw).rstrip() for raw in text.splitlines()]
    found = [m.group(0).strip() for line in lines if (m := _ERROR.match(line))]
    if not found:
        found = [line.strip() for line in lines if line.strip() and not line.startswith(("torchbot:", "$ "))]
    out: list[str] = []
    for line in reversed(found):
        short = line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"
        if short not in out:
            out.append(short)
        if len(out) == limit:
            break
    return list(reversed(out))


def log_tail(path: str | Path) -> str:
    """The end of a log file ('' when it cannot be read)."""
    try:
        with Path(path).open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def retry_command(branch: str, package: str, backend: str = "local", head: str | None = None) -> str:
    """The command that builds this one variant again (pure)."""
    cmd = ["torchbot", "release", "build", "--branch", branch, "--variant", package]
    if backend != "local":
        cmd += ["--backend", backend]
    if head:
        cmd += ["--head", head]
    return shlex.join(cmd)


def explain(message: str, log: str | Path | None, branch: str, package: str, *, backend: str = "local",
            head: str | None = None) -> str:
    """A failed build's message: what ended it, its last error lines, how to retry it."""
    errors = error_lines(log_tail(log)) if log else []
    text = message.rstrip(".")
    if errors:
        text += ": " + " | ".join(errors)
    return f"{text} (retry: {retry_command(branch, package, backend, head)})"


_FETCH = re.compile(r"(?:unable to download|cannot download|error fetching|while fetching the input|"
                    r"Could not resolve host|failed to fetch)\D{0,40}?['‘\"]?((?:https?|git|ssh)://[^'’\"\s]+)", re.I)
SAME_FETCH = 2  # failed variants on one download that stop a local run from starting more


def failed_fetch(text: str) -> str | None:
    """The URL a build log says it could not download (Nix's ``unable to download 'URL'``,
    ``while fetching the input 'URL'``), or None (pure)."""
    found = _FETCH.findall(_ANSI.sub("", text))
    return found[-1] if found else None
