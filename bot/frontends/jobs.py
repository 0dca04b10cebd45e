"""The bounded job runner: slow chat work (confirmed builds, publishes, bumps) runs here,
never on a Slack listener thread. A fixed pool of ``Settings.job_workers`` threads takes
jobs in order; jobs sharing a ``key`` (one branch's builds, the repository's bumps) run one
after another, so a second build of a branch waits instead of being refused. Queued and
running jobs are listed for ``/torchbot status``. Each job reports through its callbacks:
``on_start(job)`` and ``on_done(job)`` (``job.result`` then holds a result object), and
``on_progress(event)`` while it works (``config.progress`` events).

Imports only ``bot.frontends.incidents`` and ``config``."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.frontends.incidents import report
from config.errors import TorchbotError
from config.results import MessageResult

log = logging.getLogger("torchbot.jobs")
_ids = itertools.count(1)


@dataclass
class Job:
    title: str
    fn: Callable[[Job], Any]
    key: str | None = None
    user: str = ""
    on_start: Callable[[Job], None] | None = None
    on_done: Callable[[Job], None] | None = None
    on_progress: Callable[[Any], None] | None = None  # the work's progress events (config.progress.Event)
    notice: Callable[[], dict | None] | None = None  # where the front end reports the job (kept with build runs)
    id: str = field(default_factory=lambda: f"j{next(_ids)}")
    state: str = "queued"  # queued | running | done
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    result: Any = None
    progress: str = ""  # the work's counts so far ("3/12 built, 1 failed, 2 running"), for /torchbot status
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    def heard(self, event: Any) -> None:
        """A progress event of the work (``config.progress.Event``): kept for ``describe()``
        and passed on to ``on_progress``."""
        self.progress = event.snapshot.line()
        if self.on_progress is not None:
            self.on_progress(event)

    def wait(self, timeout: float | None = None) -> Any:
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.id} ({self.title}) still {self.state} after {timeout} s")
        return self.result

    def describe(self, now: float | None = None) -> str:
        now = now or time.time()
        since = self.started if self.state == "running" else self.created
        mins = int((now - since) // 60)
        who = f", asked by {self.user}" if self.user else ""
        done = f": {self.progress}" if self.progress and self.state == "running" else ""
        return f"{self.id} {self.state} {self.title} ({mins} min{who}){done}"


class JobRunner:
    def __init__(self, workers: int = 2):
        self.workers = max(1, int(workers))
        self._cond = threading.Condition()
        self._queue: list[Job] = []
        self._running: list[Job] = []
        self._threads: list[threading.Thread] = []
        self._stopped = False

    # -- submitting and listing ------------------------------------------------------------

    def submit(self, job: Job) -> Job:
        with self._cond:
            if self._stopped:
                raise RuntimeError("the job runner is stopped")
            self._queue.append(job)
            if len(self._threads) < self.workers:
                t = threading.Thread(target=self._work, name=f"torchbot-job-{len(self._threads) + 1}", daemon=True)
                self._threads.append(t)
                t.start()
            self._cond.notify_all()
        return job

    def position(self, job: Job) -> int:
        """0 when the job is running, done or about to start on a free worker; else its place
        in the queue (1 = next)."""
        with self._cond:
            if job not in self._queue:
                return 0
            index = self._queue.index(job)
            ahead = sum(1 for j in self._queue[:index] if not self._blocked(j))
            if not self._blocked(job) and len(self._running) + ahead < self.workers:
                return 0
            return index + 1

    def running(self) -> int:
        with self._cond:
            return len(self._running)

    def jobs(self) -> list[Job]:
        with self._cond:
            return list(self._running) + list(self._queue)

    def shutdown(self, wait: bool = False) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if wait:
            for t in self._threads:
                t.join()

    # -- the workers -----------------------------------------------------------------------

    def _blocked(self, job: Job) -> bool:
        return job.key is not None and any(r.key == job.key for r in self._running)

    def _next(self) -> Job | None:
        with self._cond:
            while True:
                if self._stopped:
                    return None
                job = next((j for j in self._queue if not self._blocked(j)), None)
                if job is not None:
                    self._queue.remove(job)
                    job.state, job.started = "running", time.time()
                    self._running.append(job)
                    return job
                self._cond.wait()

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            self._call(job, job.on_start)
            try:
                job.result = job.fn(job)
            except TorchbotError as err:
                job.result = MessageResult(err.message, ok=False)
            except Exception:  # noqa: BLE001  a job's unexpected error is reported under an id, the runner goes on
                job.result = MessageResult(report(log, f"{job.title} (job {job.id})"), ok=False)
            with self._cond:
                job.state, job.finished = "done", time.time()
                self._running.remove(job)
                self._cond.notify_all()
            self._call(job, job.on_done)
            job._done.set()

    @staticmethod
    def _call(job: Job, callback: Callable[[Job], None] | None) -> None:
        if callback is None:
            return
        try:
            callback(job)
        except Exception:  # noqa: BLE001  a failed report must not stop the runner; the log has it
            report(log, f"reporting on job {job.id} ({job.title})")
