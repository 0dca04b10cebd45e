"""The local backend: a plan's builds on this host.

``run_local`` runs the build command (``release.adapters.flox.local_builder``: flox build,
else nix-build of the recipe) for each variant in a temporary ``git worktree`` of the
branch, at most N at once, one log per build, a companion after its pytorch variant. In steps:

1. **open**: one transaction records the run (owner, worktree, spool file, where a front end
   reports it), a queued build row per variant and the variant's lock; variants another build
   holds are skipped ("already building since …");
2. **loop**: start what is ready, collect what ended; each build runs in its own process group
   that dies with torchbot (the flox adapter) and its group is recorded in its lock;
3. **close**: builds that did not end are interrupted, locks released, the run finished.

Every change goes through the run's :class:`~release.builds.journal.Journal`, written from this
one thread: when the state DB does not answer, results wait in memory and in a spool file and
are written when it answers again, and the rows returned are the ones in memory. Progress goes
to a :class:`config.progress.Progress` as the builds start and end.

May import: config, release.state, release.adapters, release.builds.plan, release.builds.journal,
release.builds.failures.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import shutil
import signal
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from config.errors import ExternalError, RefusedError, UsageError
from config.progress import Progress
from release.adapters.flox import Outcome, local_builder, run_build
from release.adapters.worktrees import worktree, worktree_home
from release.builds.failures import SAME_FETCH, explain, failed_fetch, log_tail
from release.builds.journal import UNAVAILABLE, Journal
from release.builds.plan import BuildItem, BuildPlan, hold_back
from release.state import RUNNING, Build, BuildLock, BuildRun, owner_id, process_start, state_for, utcnow
from release.state.tables import same_repo

ACTIVE_RUNS: set[str] = set()  # run keys this process is running now (a restart check leaves them alone)


def format_command(template: str, package: str, ctx) -> str:
    return template.format(package=shlex.quote(package), org=shlex.quote(ctx.settings.flox_org))


def busy_reason(lock: BuildLock) -> str:
    return f"already building since {lock.since:%Y-%m-%d %H:%M} UTC (build {lock.build_id}, torchbot {lock.owner})"


def run_local(ctx, plan: BuildPlan, jobs: int | None = None, *, progress: Progress | None = None,
              notice: dict | None = None) -> list[dict]:
    """Build ``plan`` with the local backend; returns the build rows as dicts (variants another
    build holds as ``skipped``). ``notice`` is stored with the run for the front end that
    reports it (a restart tells it what became of the run)."""
    return LocalRun(ctx, plan, jobs, progress, notice).execute()


class LocalRun:
    def __init__(self, ctx, plan: BuildPlan, jobs: int | None, progress: Progress | None, notice: dict | None):
        s = ctx.settings
        self.ctx, self.plan, self.notice = ctx, plan, notice
        self.st = state_for(ctx)
        self.jobs = max(1, int(jobs or s.build_jobs or 1))
        self.command = local_builder(s.build_command).command
        self.log_dir = Path(s.log_dir).expanduser().resolve() / plan.branch
        self.run_key = uuid.uuid4().hex
        self.progress = progress or Progress(verb="built")
        self.ids: dict[str, int] = {}
        self.done: dict[str, str] = {}
        self.groups: set[int] = set()  # process groups of builds running now
        self.busy: list[dict] = []
        self.journal: Journal | None = None
        self.stopping = False  # set (from the loop) when the run stops early: builds starting now stop at once
        self.fetches: dict[str, list[str]] = {}  # a download builds failed on -> those variants
        self.halted: str = ""  # why no more builds start (the same download failed for several)

    def log_path(self, package: str) -> Path:
        return self.log_dir / f"{package}-{self.ids[package]}.log"

    def execute(self) -> list[dict]:
        if not self.plan.items:
            return []
        if self.command is None:
            raise UsageError(local_builder(None).describe() + ".")
        home = worktree_home()
        ACTIVE_RUNS.add(self.run_key)  # before it is recorded: a restart check never takes it for dead
        try:
            items = self._open(home)
        except BaseException:
            ACTIVE_RUNS.discard(self.run_key)
            raise
        finally:
            if not self.ids:  # nothing recorded, nothing to build here: no worktree either
                shutil.rmtree(home, ignore_errors=True)
        for i in self.ids.values():
            RUNNING[i] = True
        try:
            if items:
                with worktree(self.plan.repo, self.plan.commit, home) as wt:
                    self._loop(wt, items)
        finally:
            try:
                self._close()
            finally:  # only once every result is recorded (or spooled): until then the run is live here
                ACTIVE_RUNS.discard(self.run_key)
                for i in self.ids.values():
                    RUNNING.pop(i, None)
        return list(self.journal.rows.values()) + self.busy

    # -- 1. open -----------------------------------------------------------------------------

    def _open(self, home: Path) -> list[BuildItem]:
        for attempt in range(3):
            try:
                return self._record_run(home)
            except IntegrityError:  # another torchbot locked one of these variants at the same moment
                if attempt == 2:
                    raise RefusedError(
                        f"Another build of {self.plan.branch} is starting right now; try again.") from None
            except UNAVAILABLE as err:
                raise ExternalError(f"TORCHBOT_STATE_DB does not answer ({_reason(err)}); nothing was built.") from None
        raise AssertionError("unreachable")

    def _record_run(self, home: Path) -> list[BuildItem]:
        plan, owner = self.plan, owner_id()
        spool = self.log_dir / f"spool-{self.run_key}.jsonl"
        with self.st.session() as ses:
            locks = {lk.package: lk for lk in ses.scalars(select(BuildLock).where(
                BuildLock.branch == plan.branch, same_repo(BuildLock.repo, plan.github)))}
            items, held = hold_back(plan.items, {p: busy_reason(lk) for p, lk in locks.items()})
            ses.add(BuildRun(run_key=self.run_key, branch=plan.branch, owner=owner, owner_start=process_start(),
                             repo=str(plan.repo), worktree=str(home), spool=str(spool),
                             notice=json.dumps(self.notice) if self.notice else None))
            rows = [Build(package=i.package, branch=plan.branch, state="queued", backend="local", recipe_blob=i.blob,
                          pin=i.pin, commit=plan.commit, owner=owner, run_key=self.run_key, repo=plan.github)
                    for i in items]
            ses.add_all(rows)
            ses.flush()
            for r in rows:
                self.ids[r.package] = r.id
                r.log = str(self.log_path(r.package))
            ses.add_all([BuildLock(branch=plan.branch, package=r.package, build_id=r.id, run_key=self.run_key,
                                   owner=owner, repo=plan.github) for r in rows])
        self.journal = Journal(self.st, self.run_key, spool, {r.id: r.to_dict() for r in rows})
        self.busy = [{"package": s.package, "branch": plan.branch, "backend": "local", "state": "skipped",
                      "platform": s.platform, "message": s.reason} for s in held]
        return items

    # -- 2. loop -----------------------------------------------------------------------------

    def _loop(self, wt: Path, items: list[BuildItem]) -> None:
        events: queue.Queue = queue.Queue()
        waiting, inflight = list(items), 0
        self.progress.begin(len(items))
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            try:
                while waiting or inflight:
                    for item in self._ready(waiting, self.jobs - inflight):
                        self._started(item)
                        pool.submit(self._work, item, wt, events)
                        inflight += 1
                    self.journal.write(lazy=True)
                    if not inflight:
                        continue
                    for kind, package, value in _drain(events, 1.0 if self.journal.pending else None):
                        if kind == "pgid":
                            self.groups.add(value)
                            self.journal.process_group(self.ids[package], value)
                        else:
                            self._finished(package, value)
                            inflight -= 1
            except BaseException:  # stopping (an error, Ctrl-C): the running builds stop too
                self.stopping = True
                pool.shutdown(wait=False, cancel_futures=True)  # what has not started never will
                for kind, _package, value in _drain(events, 0):  # groups started but not yet heard of
                    if kind == "pgid":
                        self.groups.add(value)
                self._stop_groups()
                raise

    def _ready(self, waiting: list[BuildItem], free: int) -> list[BuildItem]:
        """The items that can start now (at most ``free``); companions of a failed pytorch
        variant are recorded failed instead; once the first variants failed on the same download,
        none (the rest are recorded not built, saying why: every one would fail the same way)."""
        if self.halted:
            for item in list(waiting):
                waiting.remove(item)
                self._not_built(item, f"not built: {self.halted}", state="interrupted")  # --resume takes them
            return []
        ready = []
        for item in list(waiting):
            if len(ready) >= free:
                break
            if item.after and item.after not in self.done:
                continue
            waiting.remove(item)
            if item.after and self.done[item.after] != "succeeded":
                self._not_built(item, f"not built: its pytorch variant {item.after} {self.done[item.after]}")
                continue
            ready.append(item)
        return ready

    def _started(self, item: BuildItem) -> None:
        self.journal.build(self.ids[item.package], state="running", started=utcnow())
        self.progress.started(item.package)

    def _work(self, item: BuildItem, wt: Path, events: queue.Queue) -> None:
        s, pkg = self.ctx.settings, item.package
        check = getattr(s, "build_check_command", None)
        link = getattr(s, "build_result_link", "result-{package}").format(package=pkg)
        try:
            out = run_build(format_command(self.command, pkg, self.ctx), wt, self.log_path(pkg), s.build_timeout,
                            wt / link, format_command(check, pkg, self.ctx) if check else None, mark=self.run_key,
                            on_start=lambda pgid: self._group_started(pkg, pgid, events), kill_grace=s.build_kill_grace)
        except OSError as err:  # torchbot's own files (its log directory, a worktree): not the build's fault
            out = Outcome("interrupted", f"not a build failure: torchbot could not use {err.filename or 'a file'} "
                                         f"({err.strerror or err}; TORCHBOT_LOG_DIR is {s.log_dir}); resume it "
                                         "(--resume) once that is fixed")
        except Exception as err:  # noqa: BLE001  (a broken build must not stop the others)
            out = Outcome("failed", f"internal error: {type(err).__name__}: {err}")
        events.put(("done", pkg, out))

    def _group_started(self, package: str, pgid: int, events: queue.Queue) -> None:
        """A build's process group is up (told from its worker thread); one that starts while
        the run is stopping is stopped at once."""
        events.put(("pgid", package, pgid))
        if self.stopping:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)

    def _finished(self, package: str, out: Outcome) -> None:
        self.done[package] = out.state
        message = out.message
        if out.state == "failed":  # why, in the line that reports it (release.builds.failures)
            message = explain(out.message, self.log_path(package), self.plan.branch, package)
            self._same_fetch(package)
        self.journal.build(self.ids[package], unlock=True, state=out.state, finished=utcnow(),
                           message=message or None, out_path=out.out_path)
        self.progress.finished(package, out.state, message, log=str(self.log_path(package)),
                               url=self._log_url(package))

    def _same_fetch(self, package: str) -> None:
        """Stop starting builds once SAME_FETCH variants failed downloading the same URL and none
        succeeded yet (the source is gone or the network is: the rest would fail alike), saying so."""
        url = failed_fetch(log_tail(self.log_path(package)))
        if not url or self.halted:
            return
        self.fetches.setdefault(url, []).append(package)
        if len(self.fetches[url]) >= SAME_FETCH and "succeeded" not in self.done.values():
            self.halted = (f"the run stopped starting builds after {len(self.fetches[url])} variants failed to "
                           f"download {url}; fix the download, then --resume")
            self.progress.note(self.halted)

    def _not_built(self, item: BuildItem, message: str, state: str = "failed") -> None:
        path = self.log_path(item.package)
        with contextlib.suppress(OSError):  # a full log directory does not change what happened
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"torchbot: {message}\n")
        self.done[item.package] = state
        self.journal.build(self.ids[item.package], unlock=True, state=state, finished=utcnow(), message=message)
        self.progress.finished(item.package, state, message, log=str(path), url=self._log_url(item.package))

    def _log_url(self, package: str) -> str | None:
        base = getattr(self.ctx.settings, "log_url", None)
        return f"{base}{self.plan.branch}/{self.log_path(package).name}" if base else None

    def _stop_groups(self) -> None:
        for g in list(self.groups):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(g, signal.SIGTERM)

    # -- 3. close ----------------------------------------------------------------------------

    def _close(self) -> None:
        if self.journal is None:
            return
        now = utcnow()
        for build_id, row in self.journal.rows.items():
            if row["state"] in ("queued", "running"):
                self.journal.build(build_id, unlock=True, state="interrupted", finished=now,
                                   message="the build run stopped before this build ended")
        self.journal.run(state="finished", finished=now)
        wait = float(getattr(self.ctx.settings, "state_wait_seconds", 300.0))
        if not self.journal.settle(wait):
            self.journal.keep_trying()
            self.progress.note(f"the state DB does not answer: {self.journal.pending} change(s) are kept in "
                               f"{self.journal.spool} and written when it answers again")
        self.progress.end()


def _drain(events: queue.Queue, timeout: float | None) -> list[tuple]:
    """The next event (waiting up to ``timeout``; None: until one comes; 0: not at all) and all
    that follow it."""
    try:
        got = [events.get(timeout=timeout) if timeout != 0 else events.get_nowait()]
    except queue.Empty:
        return []
    while True:
        try:
            got.append(events.get_nowait())
        except queue.Empty:
            return got


def _reason(err: BaseException) -> str:
    return " ".join(str(getattr(err, "orig", None) or err).split())[:200]
