"""Progress of long work (builds, bumps, publishes, GitHub runs) as a plain stream of events.

The work reports through a :class:`Progress` it is handed: ``begin(total)``, ``started(item)``,
``finished(item, state, ...)``, ``end()``. Each call sends one :class:`Event` carrying a
:class:`Snapshot` (done, failed, running, elapsed, ETA) to a listener. Front ends render the
same events: the CLI with rich on a terminal or one line per finished item elsewhere
(``release.cli``), Slack by editing the job's message (``bot/``). Nothing here does I/O; a
listener that raises is logged and ignored, so a broken renderer never stops the work.

Imports nothing of torchbot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

log = logging.getLogger("torchbot.progress")

FAILED = ("failed", "interrupted")


@dataclass(frozen=True)
class Failure:
    item: str
    message: str = ""
    log: str | None = None  # a log file path
    url: str | None = None  # where the log can be read (a GitHub job, a log server)


@dataclass(frozen=True)
class Snapshot:
    """Counts at one moment: ``done`` finished well, ``failed`` finished badly, ``running``
    now, the rest waiting."""

    verb: str  # what a finished item is: "built", "published", "bumped"
    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    elapsed: float = 0.0
    eta: float | None = None  # seconds; None until something has finished
    failures: tuple[Failure, ...] = ()

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def waiting(self) -> int:
        return max(0, self.total - self.finished - self.running)

    def line(self) -> str:
        """``57/237 built, 2 failed, 4 running, ETA 3 h``"""
        parts = [f"{self.done}/{self.total} {self.verb}"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.running:
            parts.append(f"{self.running} running")
        if self.finished < self.total and self.eta is not None:
            parts.append(f"ETA {duration(self.eta)}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Event:
    """``kind``: begin | started | finished | note | end. ``item``/``state``/``message``/``log``
    /``url`` describe the item of a started or finished event (``message`` alone: a note)."""

    kind: str
    snapshot: Snapshot
    item: str | None = None
    state: str | None = None
    message: str = ""
    log: str | None = None
    url: str | None = None
    seconds: float | None = None  # how long a finished item took


Listener = Callable[[Event], None]


def duration(seconds: float) -> str:
    """A short human duration, as precise as an estimate deserves: ``45 s``, ``12 min``,
    ``2 h 20 min`` (to 10 minutes under 3 hours), ``3 h`` (whole hours from there)."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s >= 3 * 3600:
        return f"{round(s / 3600)} h"
    h, m = divmod(round(s / 600) * 10, 60)
    return f"{h} h {m} min" if m else f"{h} h"


@dataclass
class Progress:
    """Counts what it is told and passes every change on as an :class:`Event`. Thread-safe.
    The ETA is the remaining items at the throughput so far (finished per second since the
    first start), which accounts for parallel work without knowing the parallelism."""

    listener: Listener | None = None
    verb: str = "done"
    clock: Callable[[], float] = time.monotonic
    total: int = 0
    _started_at: float | None = None
    _item_started: dict[str, float] = field(default_factory=dict)
    _done: int = 0
    _failed: int = 0
    _failures: list[Failure] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, total: int, message: str = "") -> None:
        with self._lock:
            self.total = total
            self._started_at = self.clock()
            ev = Event("begin", self._snapshot(), message=message)
        self._send(ev)

    def started(self, item: str) -> None:
        with self._lock:
            self._item_started[item] = self.clock()
            ev = Event("started", self._snapshot(), item=item)
        self._send(ev)

    def finished(self, item: str, state: str, message: str = "", *, log: str | None = None,
                 url: str | None = None) -> None:
        with self._lock:
            began = self._item_started.pop(item, None)
            if state in FAILED:
                self._failed += 1
                self._failures.append(Failure(item, message, log, url))
            else:
                self._done += 1
            seconds = self.clock() - began if began is not None else None
            ev = Event("finished", self._snapshot(), item=item, state=state, message=message, log=log, url=url,
                       seconds=seconds)
        self._send(ev)

    def note(self, message: str) -> None:
        with self._lock:
            ev = Event("note", self._snapshot(), message=message)
        self._send(ev)

    def end(self, message: str = "") -> None:
        with self._lock:
            ev = Event("end", replace(self._snapshot(), eta=None), message=message)
        self._send(ev)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> Snapshot:
        now = self.clock()
        elapsed = now - self._started_at if self._started_at is not None else 0.0
        finished = self._done + self._failed
        eta = None
        if finished and elapsed > 0 and finished < self.total:
            eta = (self.total - finished) * elapsed / finished
        return Snapshot(self.verb, self.total, self._done, self._failed, len(self._item_started), elapsed, eta,
                        tuple(self._failures))

    def _send(self, event: Event) -> None:
        if self.listener is None:
            return
        try:
            self.listener(event)
        except Exception:
            log.exception("a progress listener failed on %s", event.kind)


def fan_out(*listeners: Listener | None) -> Listener | None:
    """One listener calling each of ``listeners`` (None ones left out)."""
    chosen = [fn for fn in listeners if fn is not None]
    if not chosen:
        return None
    if len(chosen) == 1:
        return chosen[0]

    def send(event: Event) -> None:
        for fn in chosen:
            fn(event)

    return send
