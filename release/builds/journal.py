"""Results are never lost to the state store: the journal of one local build run.

Every state change of a run (a build started, a build ended, its variant lock released, the
run finished) goes through :class:`Journal`. It is written to the state DB at once when the DB
answers; when it does not (PostgreSQL restarting, a locked SQLite file), the change is kept in
memory and appended to the run's spool file beside its logs (one JSON object a line), and the
whole backlog is written, in order, the next time the DB answers. The rows as last changed are
kept in memory too, so a run that ends during an outage still reports what really happened.
A spool left by a torchbot that died is replayed by ``release.builds.recover`` when torchbot
starts again (:func:`replay`).

May import: config, release.state.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from datetime import datetime
from pathlib import Path

from sqlalchemy import delete, update
from sqlalchemy.exc import InterfaceError, OperationalError

from release.state import Build, BuildLock, BuildRun

log = logging.getLogger("torchbot.builds")

UNAVAILABLE = (OperationalError, InterfaceError)  # the store does not answer (not: the change is wrong)
_ISO = "%Y-%m-%dT%H:%M:%S.%f"


def _encode(fields: dict) -> dict:
    return {k: (v.strftime(_ISO) if isinstance(v, datetime) else v) for k, v in fields.items()}


def _decode(fields: dict) -> dict:
    out = {}
    for k, v in fields.items():
        out[k] = datetime.strptime(v, _ISO) if k in ("started", "finished") and isinstance(v, str) else v
    return out


_BUILDS, _LOCKS, _RUNS = Build.__table__, BuildLock.__table__, BuildRun.__table__  # plain SQL, no ORM bookkeeping


def _apply(ses, change: dict) -> None:
    """One journal entry as SQL: ``build`` + ``set`` (Build fields), ``unlock`` (its lock row),
    ``pgid`` (its lock's process group), ``run`` + ``run_set`` (BuildRun fields)."""
    if change.get("set"):
        ses.execute(update(_BUILDS).where(_BUILDS.c.id == change["build"]).values(**_decode(change["set"])))
    if change.get("pgid") is not None:
        ses.execute(update(_LOCKS).where(_LOCKS.c.build_id == change["build"]).values(pgid=change["pgid"]))
    if change.get("unlock"):
        ses.execute(delete(_LOCKS).where(_LOCKS.c.build_id == change["build"]))
    if change.get("run_set"):
        ses.execute(update(_RUNS).where(_RUNS.c.run_key == change["run"]).values(**_decode(change["run_set"])))


class Journal:
    def __init__(self, st, run_key: str, spool: Path, rows: dict[int, dict]):
        self.st = st
        self.run_key = run_key
        self.spool = spool
        self.rows = rows  # build id -> the row as last changed (to_dict shape)
        self._backlog: list[dict] = []  # changes not yet in the DB, oldest first
        self._spooled = 0  # how many of the backlog are already in the spool file
        self._lazy_since: float | None = None  # when the oldest unwritten process group came
        self._lock = threading.Lock()
        self.outage_since: float | None = None

    # -- recording ---------------------------------------------------------------------------

    def build(self, build_id: int, *, unlock: bool = False, **fields) -> None:
        row = self.rows.get(build_id)
        if row is not None:
            row.update({k: (v.isoformat(timespec="seconds") + "Z" if isinstance(v, datetime) else v)
                        for k, v in fields.items() if k in row})
        with self._lock:
            self._backlog.append({"build": build_id, "set": _encode(fields), "unlock": unlock})

    def process_group(self, build_id: int, pgid: int) -> None:
        """A build's process group: written with the next change, or by ``write(lazy=True)``
        a second later (no transaction of its own for every build that starts)."""
        with self._lock:
            self._backlog.append({"build": build_id, "pgid": pgid})
            self._lazy_since = self._lazy_since or time.monotonic()

    def run(self, **fields) -> None:
        with self._lock:
            self._backlog.append({"run": self.run_key, "run_set": _encode(fields)})

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._backlog)

    def due(self) -> bool:
        """Whether ``write(lazy=True)`` would write now: a change other than a process group, or
        a process group waiting for a second."""
        with self._lock:
            if any("pgid" not in c for c in self._backlog):
                return True
            return bool(self._backlog) and time.monotonic() - (self._lazy_since or 0) >= 1.0

    # -- writing -----------------------------------------------------------------------------

    def write(self, lazy: bool = False) -> bool:
        """Write the backlog in one transaction (``lazy``: only when :meth:`due`). False when the
        store does not answer: the backlog is then in memory and in the spool file."""
        if lazy and not self.due():
            return True
        with self._lock:
            todo = list(self._backlog)
            self._lazy_since = None
        if not todo:
            return True
        try:
            with self.st.session() as ses:
                for change in todo:
                    _apply(ses, change)
        except UNAVAILABLE as err:
            self._to_spool(err)
            return False
        with self._lock:  # the spool held only changes now written: it goes
            del self._backlog[: len(todo)]
            self._spooled = 0
            with contextlib.suppress(OSError):  # none was written (a full or unusable TORCHBOT_LOG_DIR)
                self.spool.unlink(missing_ok=True)
        if self.outage_since is not None:
            log.warning("the state DB answers again; %d change(s) of build run %s written", len(todo), self.run_key)
            self.outage_since = None
        return True

    def settle(self, wait: float, interval: float = 2.0) -> bool:
        """Write the backlog, retrying for up to ``wait`` seconds. True when all is written."""
        end = time.monotonic() + wait
        while not self.write():
            if time.monotonic() >= end:
                return False
            time.sleep(min(interval, max(0.05, end - time.monotonic())))
        return True

    def keep_trying(self, interval: float = 15.0) -> None:
        """Go on writing the backlog in a daemon thread until the store answers (a long-running
        torchbot; a CLI leaves it to the next start, which replays the spool)."""
        def loop() -> None:
            while not self.write():
                time.sleep(interval)

        threading.Thread(target=loop, name=f"torchbot-spool-{self.run_key[:8]}", daemon=True).start()

    def _to_spool(self, err: BaseException) -> None:
        if self.outage_since is None:
            self.outage_since = time.monotonic()
            log.warning("the state DB does not answer (%s); build results are kept in %s until it does",
                        " ".join(str(getattr(err, "orig", err)).split())[:200], self.spool)
        with self._lock:
            new = self._backlog[self._spooled:]
            self._spooled = len(self._backlog)
        if new:
            try:
                self.spool.parent.mkdir(parents=True, exist_ok=True)
                with self.spool.open("a", encoding="utf-8") as fh:
                    for change in new:
                        fh.write(json.dumps(change) + "\n")
            except OSError as err:  # a full or unwritable TORCHBOT_LOG_DIR: the backlog stays in memory
                with self._lock:
                    self._spooled -= len(new)
                log.warning("the spool %s cannot be written (TORCHBOT_LOG_DIR: %s); %d change(s) kept in memory "
                            "until the state DB answers", self.spool, err.strerror or err, len(new))


def replay(st, spool: Path) -> int:
    """Write a dead run's spool file into the state DB and remove it; how many changes it held.
    Raises the store's error when it does not answer (the spool stays for the next try)."""
    try:
        lines = spool.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0
    changes = []
    for line in lines:
        try:
            changes.append(json.loads(line))
        except ValueError:  # a line cut short by the crash: everything before it still counts
            break
    with st.session() as ses:
        for change in changes:
            _apply(ses, change)
    spool.unlink(missing_ok=True)
    return len(changes)
