"""The github build backend: builds run by the workflow ``release.builds.workflow`` writes.

``dispatch_build`` triggers it with ``workflow_dispatch`` at the branch being built (the
dispatch ref; inputs: the branch, the pytorch and companion matrix entries as JSON —
``{"package", "platform", "runs_on"}`` each — and a request id that appears in the run name so
torchbot finds its run). A branch larger than one run can hold (GitHub: 256 jobs per matrix,
65,535 characters of inputs) is dispatched as several runs, each pytorch variant together with
the companions that wait for it. Unless ``wait=False`` it then follows the runs until every
build has a result.

Following is durable: before a dispatch is sent, its ``GithubRun`` row and its builds
(``queued``) are in the state DB; every poll records what it saw (run id, each job's state in
its build row, last poll, requests spent). ``poll_once`` works from the DB alone, so a
restarted torchbot (``poll_active``: the scheduler's ``poll-builds`` job, or ``follow``) picks
up where the last one was. Each result is recorded exactly once: a build row moves to a final
state only from an active one (a conditional UPDATE), and ``progress`` is called for the
changes this process made.

Polling is bounded: per run, the jobs listing, 100 per page (``ceil(jobs / 100)`` requests),
plus one GET of the run only when a variant has no job yet and every listed job has ended,
plus one runs listing per poll while a dispatched run has not been seen. For a 237-variant
release that is 3 requests per poll: at ``TORCHBOT_GITHUB_POLL_SECONDS=30`` 360 an hour, of
GitHub's 5,000. When less than half the rate limit is left, polls space out so that at most
half of what is left is spent before the reset; with none left, polling waits for
``x-ratelimit-reset`` (``next_poll``, which every process honours). There is no fixed
give-up: a run in which nothing changed for ``TORCHBOT_GITHUB_STALE_HOURS`` (default a week)
is no longer followed, and its builds say so.

May import: config, release.state, release.adapters.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from release.adapters.github import Actions, github_time
from release.adapters.http import RateLimit, RateLimited, Unavailable

log = logging.getLogger("torchbot.builds.github")
FINAL = ("succeeded", "failed", "interrupted")
ACTIVE = ("queued", "running")
OPEN = ("dispatching", "dispatched", "queued", "in_progress")  # GithubRun states still followed
MAX_MATRIX_JOBS = 256  # GitHub: a matrix generates at most 256 jobs per workflow run
MAX_INPUT_CHARS = 60_000  # GitHub caps a dispatch's inputs at 65,535 characters; keep a margin
DISPATCH_GRACE = timedelta(minutes=10)  # a dispatch torchbot may not have sent: how long to look for its run
RATE_SHARE = 0.5  # polling spends at most this share of the requests left until the reset

Progress = Callable[[dict], None]


def matrix_entry(item) -> dict:
    return {"package": item.package, "platform": item.platform, "runs_on": list(item.runs_on)}


def _encode(entries: list[dict]) -> str:
    return json.dumps(entries, separators=(",", ":"))


def batches(items) -> list[tuple[list[dict], list[dict]]]:
    """The dispatches a plan needs: (pytorch entries, companion entries) per run, each within
    GitHub's limits, a companion in the same run as the pytorch variant it waits for (pure)."""
    torch = [i for i in items if i.after is None and i.kind == "pytorch"]
    names = {i.package for i in torch}
    waiting: dict[str, list] = {}
    loose = []
    for i in items:
        if i.package in names and i.after is None:
            continue
        if i.after in names:
            waiting.setdefault(i.after, []).append(i)
        else:
            loose.append(i)
    units = [([matrix_entry(t)], [matrix_entry(c) for c in waiting.get(t.package, [])]) for t in torch]
    units += [([], [matrix_entry(c)]) for c in loose]
    out: list[tuple[list[dict], list[dict]]] = []
    for t, c in units:
        if out:
            bt, bc = out[-1]
            fits = (len(bt) + len(t) <= MAX_MATRIX_JOBS and len(bc) + len(c) <= MAX_MATRIX_JOBS
                    and len(_encode(bt + t)) + len(_encode(bc + c)) <= MAX_INPUT_CHARS)
            if fits:
                bt.extend(t)
                bc.extend(c)
                continue
        out.append((list(t), list(c)))
    return out


def job_state(job: dict) -> str:
    """A GitHub job's status/conclusion as a build state (pure)."""
    status = job.get("status")
    if status == "completed":
        return "succeeded" if job.get("conclusion") == "success" else "failed"
    if status == "in_progress":
        return "running"
    return "queued"


def requests_per_poll(jobs: int) -> int:
    """API requests one poll of a run with ``jobs`` jobs costs (pure): the jobs listing's pages."""
    return max(1, math.ceil(jobs / 100))


def poll_wait(base: float, rate: RateLimit | None, spent: int, now: float | None = None) -> float:
    """Seconds until the next poll (pure): ``base`` while more than half the rate limit is
    left; below that, long enough that polling spends at most RATE_SHARE of the requests left
    until the reset; with too few left for one more poll, until the reset."""
    if rate is None:
        return base
    now = time.time() if now is None else now
    to_reset = max(1.0, rate.reset - now)
    if rate.remaining <= max(1, spent):
        return max(base, to_reset + 1.0)
    if rate.remaining >= rate.limit * 0.5:
        return base
    return max(base, max(1, spent) * to_reset / (rate.remaining * RATE_SHARE))


# ---------------------------------------------------------------------------------------
# Dispatch


def dispatch_build(ctx, plan, wait: bool = True, actions: Actions | None = None,
                   progress: Progress | None = None) -> list[dict]:
    from release.state import Build, state_for

    if not plan.items:
        return []
    gh = actions or Actions(ctx.settings)
    st = state_for(ctx)
    keys = [_dispatch_one(ctx, st, gh, plan, torch, comps) for torch, comps in batches(plan.items)]
    _resolve(ctx, gh, keys)
    if wait:
        follow(ctx, keys, gh, progress)
    with st.session() as s:
        return [b.to_dict() for b in s.query(Build).filter(Build.run_key.in_(keys)).order_by(Build.id)]


def _dispatch_one(ctx, st, gh: Actions, plan, torch: list[dict], comps: list[dict]) -> str:
    """Record the run and its builds, then dispatch; a refused dispatch leaves no trace."""
    from release.state import Build, GithubRun, owner_id

    by_name = {i.package: i for i in plan.items}
    request_id = uuid.uuid4().hex[:16]
    with st.session() as s:
        s.add(GithubRun(request_id=request_id, branch=plan.branch, ref=plan.ref,
                        workflow=ctx.settings.github_workflow_file, jobs=len(torch) + len(comps)))
        s.add_all(Build(package=i.package, branch=plan.branch, state="queued", backend="github", recipe_blob=i.blob,
                        pin=i.pin, commit=plan.commit, owner=owner_id(), run_key=request_id)
                  for i in (by_name[e["package"]] for e in torch + comps))
    try:
        gh.dispatch({"branch": plan.branch, "pytorch": _encode(torch), "companions": _encode(comps),
                     "request_id": request_id}, ref=plan.ref)
    except BaseException:
        with st.session() as s:
            s.query(Build).filter(Build.run_key == request_id).delete()
            s.query(GithubRun).filter(GithubRun.request_id == request_id).delete()
        raise
    with st.session() as s:
        s.query(GithubRun).filter(GithubRun.request_id == request_id).update({"status": "dispatched"})
    return request_id


def _resolve(ctx, gh: Actions, keys: list[str], tries: int = 3) -> None:
    """Find the runs of fresh dispatches (GitHub shows a run a moment after the dispatch);
    what is not seen yet the next poll looks for."""
    from release.state import GithubRun, state_for

    st = state_for(ctx)
    for attempt in range(tries):
        with st.session() as s:
            pending = list(s.query(GithubRun).filter(GithubRun.request_id.in_(keys), GithubRun.run_id.is_(None)))
        if not pending:
            return
        try:
            _find_runs(st, gh, pending)
        except Unavailable as err:
            log.warning("looking for dispatched runs: %s", err)
            return
        if attempt < tries - 1:
            time.sleep(min(2.0 ** attempt, ctx.settings.github_poll_seconds))


def _find_runs(st, gh: Actions, pending: list) -> None:
    from release.state import Build, GithubRun

    found = gh.find_runs({r.request_id for r in pending}, since=min(r.dispatched for r in pending))
    with st.session() as s:
        for rid, run in found.items():
            row = s.query(GithubRun).filter(GithubRun.request_id == rid).one()
            row.run_id, row.html_url = str(run["id"]), run.get("html_url")
            row.status, row.last_change = run.get("status") or "queued", _now()
            s.query(Build).filter(Build.run_key == rid).update(
                {"external_id": str(run["id"]), "log": run.get("html_url")})


# ---------------------------------------------------------------------------------------
# Following


@dataclass
class PollReport:
    runs: int = 0  # runs polled
    requests: int = 0  # API requests this poll
    changed: int = 0  # builds whose state changed
    open: int = 0  # runs still followed afterwards
    wait: float = 0.0  # seconds until the next poll is due


def _now() -> datetime:
    from release.state import utcnow

    return utcnow()


def poll_once(ctx, gh: Actions, keys: list[str] | None = None, progress: Progress | None = None,
              force: bool = False) -> PollReport:
    """One poll of every open run (of ``keys`` when given) that is due (or all with ``force``)."""
    from release.state import GithubRun, state_for

    st = state_for(ctx)
    base = float(ctx.settings.github_poll_seconds)
    report = PollReport()
    before = gh.requests
    with st.session() as s:
        q = s.query(GithubRun).filter(GithubRun.status.in_(OPEN))
        if keys is not None:
            q = q.filter(GithubRun.request_id.in_(keys))
        runs = [r for r in q.order_by(GithubRun.id) if force or r.next_poll is None or r.next_poll <= _now()]
    try:
        unseen = [r for r in runs if r.run_id is None]
        if unseen:
            _find_runs(st, gh, unseen)
        for run in runs:
            report.changed += _poll_run(ctx, st, gh, run.request_id, progress)
            report.runs += 1
    except RateLimited as err:
        _note_error(st, runs, str(err), datetime.fromtimestamp(err.until, UTC).replace(tzinfo=None))
    except Unavailable as err:
        _note_error(st, runs, str(err), None)
    report.requests = gh.requests - before
    report.changed += _give_up_stale(ctx, st, keys, progress)
    report.wait = poll_wait(base, gh.rate, report.requests)
    paced = _now() + timedelta(seconds=report.wait) if report.wait > base else None
    with st.session() as s:
        q = s.query(GithubRun).filter(GithubRun.status.in_(OPEN))
        if keys is not None:
            q = q.filter(GithubRun.request_id.in_(keys))
        still = list(q)
        report.open = len(still)
        for row in still:
            if paced and (row.next_poll is None or row.next_poll < paced):
                row.next_poll = paced
        due = [max(0.0, (r.next_poll - _now()).total_seconds()) for r in still if r.next_poll]
    report.wait = max([report.wait, *due])
    return report


def _note_error(st, runs: list, error: str, until: datetime | None) -> None:
    from release.state import GithubRun

    log.warning("polling GitHub: %s", error)
    with st.session() as s:
        for r in runs:
            row = s.get(GithubRun, r.id)
            row.last_error = error[:2000]
            if until is not None:
                row.next_poll = until


def _poll_run(ctx, st, gh: Actions, request_id: str, progress: Progress | None) -> int:
    """Update one run's builds from its jobs; returns how many changed state."""
    from release.state import Build, GithubRun

    with st.session() as s:
        row = s.query(GithubRun).filter(GithubRun.request_id == request_id).one()
        run_id = row.run_id
    if run_id is None:
        return 0
    before = gh.requests
    jobs = {j.get("name"): j for j in gh.jobs(run_id)}
    with st.session() as s:
        waiting = [p for (p,) in s.query(Build.package).filter(Build.run_key == request_id, Build.state.in_(ACTIVE))]
    run = None
    missing = [p for p in waiting if p not in jobs]
    if missing and all(j.get("status") == "completed" for j in jobs.values()):
        run = gh.run(run_id)  # only a completed run can have ended without a job
    events: list[dict] = []
    with st.session() as s:
        for b in list(s.query(Build).filter(Build.run_key == request_id, Build.state.in_(ACTIVE))):
            event = _apply(s, b, jobs.get(b.package), run)
            if event:
                events.append(event)
        row = s.query(GithubRun).filter(GithubRun.request_id == request_id).one()
        now = _now()
        row.last_poll, row.polls, row.last_error = now, row.polls + 1, None
        row.requests += gh.requests - before
        if events:
            row.last_change = now
        if run is not None:
            row.status, row.conclusion = run.get("status") or row.status, run.get("conclusion")
        elif jobs:
            row.status = "in_progress" if any(j.get("status") != "queued" for j in jobs.values()) else "queued"
        left = s.query(Build).filter(Build.run_key == request_id, Build.state.in_(ACTIVE)).count()
        if not left:
            row.status, row.finished = "completed", now
            failed = s.query(Build).filter(Build.run_key == request_id, Build.state != "succeeded").count()
            row.conclusion = row.conclusion or ("failure" if failed else "success")
    for event in events:
        if progress:
            progress(event)
    return len(events)


def _apply(s, b, job: dict | None, run: dict | None) -> dict | None:
    """Move one build to what GitHub shows, exactly once (a conditional UPDATE: a build
    another process already moved is left alone). Returns the new row, or None."""
    now = _now()
    if job is None:
        if run is None or run.get("status") != "completed":
            return None
        values = {"state": "failed", "finished": now,
                  "message": f"the run ended ({run.get('conclusion')}) without a job for this variant"}
    else:
        new = job_state(job)
        if new == b.state:
            return None
        values = {"state": new, "started": github_time(job.get("started_at")) or b.started or now,
                  "log": job.get("html_url") or b.log}
        if new in FINAL:
            values["finished"] = github_time(job.get("completed_at")) or now
            values["message"] = None if new == "succeeded" else f"GitHub job {job.get('conclusion')}"
    return _move(s, b, values)


_MOVES: dict[tuple[str, ...], object] = {}


def _move_statement(keys: tuple[str, ...]):
    """``UPDATE builds SET <keys> WHERE id = :_id AND state = :_from``, built once per key set."""
    stmt = _MOVES.get(keys)
    if stmt is None:
        from sqlalchemy import bindparam, update

        from release.state import Build

        table = Build.__table__
        stmt = _MOVES[keys] = (update(table).where(table.c.id == bindparam("_id"), table.c.state == bindparam("_from"))
                               .values({k: bindparam(k) for k in keys}))
    return stmt


def _move(s, b, values: dict) -> dict | None:
    """UPDATE one build from the state it was read in; the row dict when this call moved it."""
    s.expunge(b)  # later changes to ``b`` are for the report only, never flushed
    stmt = _move_statement(tuple(sorted(values)))
    done = s.connection().execute(stmt, {"_id": b.id, "_from": b.state, **values})
    if done.rowcount != 1:
        return None
    for key, value in values.items():
        setattr(b, key, value)
    return b.to_dict()


def _give_up_stale(ctx, st, keys: list[str] | None, progress: Progress | None) -> int:
    """Runs with no change for TORCHBOT_GITHUB_STALE_HOURS (a dispatch never seen: after
    DISPATCH_GRACE) are no longer followed; their builds become interrupted, saying why."""
    from release.state import Build, GithubRun

    hours = float(ctx.settings.github_stale_hours)
    now = _now()
    events: list[dict] = []
    with st.session() as s:
        q = s.query(GithubRun).filter(GithubRun.status.in_(OPEN))
        if keys is not None:
            q = q.filter(GithubRun.request_id.in_(keys))
        for row in list(q):
            if row.status == "dispatching" and row.run_id is None and now - row.dispatched > DISPATCH_GRACE:
                why = ("torchbot stopped while dispatching this run and GitHub shows no run for it; "
                       "`release build --resume` dispatches it again")
            elif now - row.last_change > timedelta(hours=hours):
                where = f"GitHub run {row.run_id} ({row.html_url})" if row.run_id else f"dispatch {row.request_id}"
                why = (f"torchbot saw no change in {where} for {hours:g} h (TORCHBOT_GITHUB_STALE_HOURS) "
                       "and stopped following it")
            else:
                continue
            row.status, row.finished, row.last_error = "stale", now, why
            for b in list(s.query(Build).filter(Build.run_key == row.request_id, Build.state.in_(ACTIVE))):
                event = _move(s, b, {"state": "interrupted", "finished": now, "message": why})
                if event:
                    events.append(event)
    for event in events:
        if progress:
            progress(event)
    return len(events)


def follow(ctx, keys: list[str], gh: Actions, progress: Progress | None = None) -> None:
    """Poll the runs of ``keys`` until every build has a result (or its run went stale)."""
    while True:
        report = poll_once(ctx, gh, keys, progress)
        if not report.open:
            return
        time.sleep(report.wait)


def poll_active(ctx, actions: Actions | None = None, progress: Progress | None = None) -> int:
    """One polling pass over every open GitHub run (the scheduler's ``poll-builds`` job and a
    restarted torchbot); returns how many builds changed state."""
    from release.state import GithubRun, state_for

    with state_for(ctx).session() as s:
        if not s.query(GithubRun).filter(GithubRun.status.in_(OPEN)).count():
            return 0
    gh = actions or Actions(ctx.settings)
    return poll_once(ctx, gh, None, progress).changed


def runs(ctx, branch: str | None = None) -> list[dict]:
    """The GitHub runs torchbot dispatched, newest first (for status)."""
    from release.state import GithubRun, state_for

    with state_for(ctx).session() as s:
        q = s.query(GithubRun).order_by(GithubRun.id.desc())
        if branch:
            q = q.filter(GithubRun.branch == branch)
        return [r.to_dict() for r in q]

