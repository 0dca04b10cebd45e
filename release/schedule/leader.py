"""One scheduler across processes: the leader lease.

Several ``torchbot serve`` processes may share one state DB (PostgreSQL: a second replica, a
rolling deploy). APScheduler 3 does not support two schedulers on one job store, so exactly one
process runs it: the holder of the ``leader:scheduler`` claim (``State.claim``, a
compare-and-set on one row with an expiry). ``Leader`` renews the claim every third of
``Settings.leader_lease_seconds``; it starts the scheduler when it gains the lease and stops it
when it loses it (the DB did not answer for a whole lease, or another process took over). A
leader that dies stops renewing, and another process takes over once the lease expired, i.e.
within ``leader_lease_seconds`` plus one renewal period. ``status(ctx)`` says who leads.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC

from sqlalchemy.exc import SQLAlchemyError

from release.timetable import LEADER_KEY

log = logging.getLogger("torchbot.schedule")
KEY = LEADER_KEY  # the claim (release.timetable: the dashboard reads who leads, never the schedule)


class Leader:
    """A thread holding (or waiting for) the lease; ``start(ctx)`` returns it started."""

    def __init__(self, ctx, start: Callable | None = None):
        from release.state import owner_id

        self.ctx = ctx
        self.me = f"{owner_id()}:{uuid.uuid4().hex[:6]}"
        self.ttl = float(ctx.settings.leader_lease_seconds)
        self._start = start
        self.scheduler = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="torchbot-leader", daemon=True)

    @property
    def leading(self) -> bool:
        return self.scheduler is not None

    def start(self) -> Leader:
        self._tick()
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            self._tick()

    def _tick(self) -> None:
        from release.state import state_for

        try:
            mine = state_for(self.ctx).claim(KEY, self.me, self.ttl)
        except SQLAlchemyError as err:  # the DB does not answer: keep leading only while the lease lasts
            log.warning("leader lease not renewed: %s", " ".join(str(err).split())[:200])
            mine = self.leading and self._renewed_recently()
        else:
            if mine:
                self._last = _now()
        if mine and not self.leading:
            log.info("this process leads: it runs the schedule")
            self.scheduler = self._start_scheduler()
        elif not mine and self.leading:
            log.warning("this process lost the lead: its schedule stops")
            self._halt()

    def _renewed_recently(self) -> bool:
        return (_now() - getattr(self, "_last", _now())).total_seconds() < self.ttl * 0.8

    def _start_scheduler(self):
        if self._start is not None:
            return self._start(self.ctx)
        from release.schedule.jobs import start_scheduler

        return start_scheduler(self.ctx)

    def _halt(self) -> None:
        sched, self.scheduler = self.scheduler, None
        if sched is not None:
            sched.shutdown(wait=False)

    def shutdown(self) -> None:
        """Stop leading (the lease is given up, so another process takes over at once)."""
        from release.state import state_for

        self._stop.set()
        self._halt()
        with contextlib.suppress(SQLAlchemyError):
            state_for(self.ctx).unclaim(KEY, self.me)


def _now():
    from datetime import datetime

    return datetime.now(UTC)


def status(ctx) -> str:
    """One line: which process runs the schedule (from the DB)."""
    from release.state import owner_id, state_for

    held = state_for(ctx).claim_holder(KEY)
    if held is None:
        return "schedule: no process leads (none running, or a new leader takes over within " \
               f"{ctx.settings.leader_lease_seconds:g} s)"
    host_pid = held.owner.rsplit(":", 1)[0]
    here = " (this process)" if host_pid == owner_id() else ""
    return f"schedule: led by {host_pid}{here}, lease until {held.until.isoformat(timespec='seconds')}Z"
