"""Following GitHub runs: one poll of the runs still followed, recorded in the state DB.

A ``GithubRun`` row is followed until torchbot has closed it (:data:`CLOSED`), whatever
GitHub calls the run meanwhile (``requested``, ``pending``, ``waiting``, ``queued``,
``in_progress``, ``ended``: GitHub says it completed and its results are still being read).
Only :func:`_poll_run` closes a run ``completed``, once none of its builds is left queued or
running; :func:`_give_up_stale` closes a run no longer worth following (``stale``), and a run
GitHub no longer has (404: deleted) is closed ``gone``. Either way its builds say why.

Every poller (a ``follow``, the scheduler's ``poll-builds``, another torchbot process) honours
``next_poll``: a due run is claimed with a conditional UPDATE that moves its ``next_poll`` on
by ``TORCHBOT_GITHUB_POLL_SECONDS``, so two pollers never spend requests on the same poll. An
error of one run (a refusal, a deleted run, a server that does not answer) is noted on that
run and the others are still polled; a rate limit stops the pass and paces every run until it
lifts. Builds move exactly once (a conditional UPDATE from the state they were read in);
``PollReport.changed`` counts the moves this process made. Who reports progress reads it from
the DB (``release.builds.github.Watch``), so it sees every move, whoever made it.

May import: config, release.state, release.adapters.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from config.errors import ExternalError
from release.adapters.github import AccessRefused, Actions, github_time
from release.adapters.http import RateLimit, RateLimited, Refused
from release.builds import pr_status
from release.builds.failures import retry_command

log = logging.getLogger("torchbot.builds.github")
FINAL = ("succeeded", "failed", "interrupted")
ACTIVE = ("queued", "running")
CLOSED = ("completed", "stale", "gone")  # GithubRun statuses no longer followed; every other one is
WAITING = "credentials"  # not polled until a working token is configured (``resume_waiting``); not closed
DISPATCH_GRACE = timedelta(minutes=10)  # a dispatch torchbot may not have sent: how long to look for its run
RATE_SHARE = 0.5  # polling spends at most this share of the requests left until the reset


def job_state(job: dict) -> str:
    """A GitHub job's status/conclusion as a build state (pure): waiting, pending and requested
    jobs have not started, so they are queued."""
    status = job.get("status")
    if status == "completed":
        return "succeeded" if job.get("conclusion") == "success" else "failed"
    if status == "in_progress":
        return "running"
    return "queued"


def run_status(github_status: str | None) -> str:
    """The status torchbot records for a run GitHub shows (pure): GitHub's own while the run
    goes on; ``ended`` for a completed run, which only torchbot closes, once it has read every
    build's result."""
    if github_status == "completed":
        return "ended"
    return github_status or "queued"


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


@dataclass
class PollReport:
    runs: int = 0  # runs polled
    requests: int = 0  # API requests this poll
    changed: int = 0  # builds whose state this process changed
    open: int = 0  # runs still followed afterwards
    wait: float = 0.0  # seconds until the next poll is due
    refused: str | None = None  # GitHub refused the token or the repository: the one line saying so


def _now() -> datetime:
    from release.state import utcnow

    return utcnow()


def followed(s, keys: list[str] | None):
    """The GithubRun rows still followed (of ``keys`` when given), as a query."""
    from release.state import GithubRun

    q = s.query(GithubRun).filter(GithubRun.status.not_in((*CLOSED, WAITING)))
    return q if keys is None else q.filter(GithubRun.request_id.in_(keys))


def poll_once(ctx, gh: Actions, keys: list[str] | None = None, force: bool = False) -> PollReport:
    """One poll of every followed run (of ``keys`` when given) that is due (or all with
    ``force``) and that no other poller claimed first."""
    from release.state import state_for

    st = state_for(ctx)
    base = float(ctx.settings.github_poll_seconds)
    report = PollReport()
    before = gh.requests
    runs = _claim(st, keys, base, force)
    try:
        _look_for(st, gh, [r for r in runs if r.run_id is None])
        for run in runs:
            report.changed += _poll_run(st, gh, run.request_id)
            report.runs += 1
    except RateLimited as err:
        _note_error(st, runs, str(err), datetime.fromtimestamp(err.until, UTC).replace(tzinfo=None))
    except AccessRefused as err:  # every run on this repository waits for a working setting
        report.refused = err.message
        wait_for_credentials(st, keys, err.message)
    report.changed += _give_up_stale(ctx, st, keys)
    if report.changed and runs:
        pr_status.report(ctx, gh, [r.request_id for r in runs])  # a pull request's head shows its builds
    report.requests = gh.requests - before
    report.wait = poll_wait(base, gh.rate, report.requests)
    _pace(st, keys, base, report)
    return report


def _claim(st, keys: list[str] | None, base: float, force: bool) -> list:
    """The followed runs due now, each claimed for this poll: its ``next_poll`` moved on by
    ``base`` with a conditional UPDATE (from the value read), so one poller wins each poll."""
    from sqlalchemy import update

    from release.state import GithubRun

    table = GithubRun.__table__
    now = _now()
    claimed = []
    with st.session() as s:
        for row in list(followed(s, keys).order_by(GithubRun.id)):
            if not force and row.next_poll is not None and row.next_poll > now:
                continue
            same = table.c.next_poll.is_(None) if row.next_poll is None else table.c.next_poll == row.next_poll
            done = s.execute(update(table).where(table.c.id == row.id, same)
                             .values(next_poll=now + timedelta(seconds=base)))
            if done.rowcount == 1:
                claimed.append(row)
    return claimed


def _pace(st, keys: list[str] | None, base: float, report: PollReport) -> None:
    """After a poll: slow every followed run down when the rate limit asks for it; count what
    is still followed and when the next of them is due."""
    paced = _now() + timedelta(seconds=report.wait) if report.wait > base else None
    with st.session() as s:
        still = list(followed(s, keys))
        report.open = len(still)
        for row in still:
            if paced and (row.next_poll is None or row.next_poll < paced):
                row.next_poll = paced
        now = _now()
        due = [max(0.0, (r.next_poll - now).total_seconds()) for r in still if r.next_poll]
    if due:
        report.wait = max(report.wait, min(due))


def _note_error(st, runs: list, error: str, until: datetime | None) -> None:
    from release.state import GithubRun

    log.warning("polling GitHub: %s", error)
    with st.session() as s:
        for r in runs:
            row = s.get(GithubRun, r.id)
            row.last_error = error[:2000]
            if until is not None:
                row.next_poll = max(until, row.next_poll or until)


def _look_for(st, gh: Actions, unseen: list) -> None:
    """Find the runs of dispatches not seen yet (one runs listing); an error other than a rate
    limit is noted on them and the runs already seen are still polled."""
    if not unseen:
        return
    try:
        find_runs(st, gh, unseen)
    except (RateLimited, AccessRefused):
        raise
    except ExternalError as err:
        _note_error(st, unseen, str(err), None)


def find_runs(st, gh: Actions, pending: list) -> None:
    """Record the runs GitHub shows for ``pending`` dispatches (its run id, link and status)."""
    from release.state import Build, GithubRun

    found = gh.find_runs({r.request_id for r in pending}, since=min(r.dispatched for r in pending))
    with st.session() as s:
        for rid, run in found.items():
            row = s.query(GithubRun).filter(GithubRun.request_id == rid).one()
            row.run_id, row.html_url = str(run["id"]), run.get("html_url")
            row.status, row.last_change = run_status(run.get("status")), _now()
            s.query(Build).filter(Build.run_key == rid).update(
                {"external_id": str(run["id"]), "log": run.get("html_url")})


def _poll_run(st, gh: Actions, request_id: str) -> int:
    """Update one run's builds from its jobs; returns how many this process moved. A rate limit
    is raised (it stops the pass); any other error is noted on this run alone."""
    from release.state import Build, GithubRun

    with st.session() as s:
        row = s.query(GithubRun).filter(GithubRun.request_id == request_id).one()
        run_id = row.run_id
        waiting = [p for (p,) in s.query(Build.package).filter(Build.run_key == request_id, Build.state.in_(ACTIVE))]
    if run_id is None:
        return 0
    before = gh.requests
    try:
        jobs, run = _read(gh, run_id, waiting)
    except (RateLimited, AccessRefused):
        raise
    except Refused as err:
        if err.status == 404:
            gh.check_access()  # a run deleted, or the repository gone from the token's sight (AccessRefused)
            return _gone(st, request_id, err)
        return _run_error(st, request_id, err, gh.requests - before)
    except ExternalError as err:
        return _run_error(st, request_id, err, gh.requests - before)
    moved = 0
    with st.session() as s:
        row = s.query(GithubRun).filter(GithubRun.request_id == request_id).one()
        head = row.ref if row.ref and row.ref != row.branch else None
        for b in list(s.query(Build).filter(Build.run_key == request_id, Build.state.in_(ACTIVE))):
            moved += _apply(s, b, jobs.get(b.package), run, head)
        now = _now()
        row.last_poll, row.polls, row.last_error = now, row.polls + 1, None
        row.requests += gh.requests - before
        if moved:
            row.last_change = now
        row.status = run_status(run.get("status")) if run is not None else _jobs_status(jobs, row.status)
        if run is not None and run.get("conclusion"):
            row.conclusion = run["conclusion"]
        _close_if_done(s, row, now)
    return moved


def _read(gh: Actions, run_id: str, waiting: list[str]) -> tuple[dict[str, dict], dict | None]:
    """(package -> its job, the run or None): every page of the jobs; the run itself only when
    a variant still waiting has no job and every listed job has ended (a run that ended, or
    never started: GitHub lists no job of a run still pending or one that failed at start-up)."""
    jobs = {j.get("name"): j for j in gh.jobs(run_id)}
    missing = [p for p in waiting if p not in jobs]
    run = None
    if missing and all(j.get("status") == "completed" for j in jobs.values()):
        run = gh.run(run_id)
    return jobs, run


def _jobs_status(jobs: dict[str, dict], current: str) -> str:
    """A run's status as its jobs show it: in_progress once one started, else what they all say."""
    statuses = {j.get("status") for j in jobs.values()}
    if not statuses:
        return current
    if statuses & {"in_progress", "completed"}:
        return "in_progress"
    return statuses.pop() if len(statuses) == 1 else "queued"


def _close_if_done(s, row, now: datetime) -> None:
    """A run none of whose builds is queued or running any more is completed."""
    from release.state import Build

    states = {b.package: b.state for b in s.query(Build).filter(Build.run_key == row.request_id)}
    if any(state in ACTIVE for state in states.values()):
        return
    row.status, row.finished = "completed", now
    failed = any(state != "succeeded" for state in states.values())
    row.conclusion = row.conclusion or ("failure" if failed else "success")
    row.outcome = outcome_text(row, states)


def _run_error(st, request_id: str, err: ExternalError, spent: int) -> int:
    """Note an error of one run (it is polled again when next due) and go on with the others."""
    from release.state import GithubRun

    log.warning("polling GitHub run of dispatch %s: %s", request_id, err)
    with st.session() as s:
        row = s.query(GithubRun).filter(GithubRun.request_id == request_id).one()
        row.last_error, row.requests = str(err)[:2000], row.requests + spent
    return 0


def wait_for_credentials(st, keys: list[str] | None, why: str) -> None:
    """Every followed run (of ``keys``) waits on credentials: no longer polled, not closed, its
    builds left as they are (not failed), saying why; ``resume_waiting`` takes them up again."""
    from release.state import Build

    log.warning("GitHub runs wait on credentials: %s", why)
    with st.session() as s:
        for row in list(followed(s, keys)):
            row.status, row.last_error = WAITING, why[:2000]
            s.query(Build).filter(Build.run_key == row.request_id, Build.state.in_(ACTIVE)).update(
                {"message": f"waiting on GitHub credentials: {why}"[:2000]})


def resume_waiting(st, gh: Actions) -> int:
    """Runs waiting on credentials are followed again once one request shows the token works
    (one request per call, so a still broken token costs one request per scheduled poll).
    Returns how many resumed; AccessRefused when the token still does not work."""
    from release.state import Build, GithubRun

    with st.session() as s:
        if not s.query(GithubRun).filter(GithubRun.status == WAITING).count():
            return 0
    gh.check_access()
    with st.session() as s:
        rows = list(s.query(GithubRun).filter(GithubRun.status == WAITING))
        for row in rows:
            row.status = "queued" if row.run_id else "dispatched"
            row.last_error, row.next_poll = None, None
            s.query(Build).filter(Build.run_key == row.request_id, Build.state.in_(ACTIVE)).update({"message": None})
    return len(rows)


def _gone(st, request_id: str, err: ExternalError) -> int:
    """GitHub no longer has the run (404: deleted): closed ``gone``, its builds interrupted."""
    from release.state import GithubRun

    with st.session() as s:
        row = s.query(GithubRun).filter(GithubRun.request_id == request_id).one()
        why = (f"GitHub no longer has run {row.run_id} ({err.message.rstrip('.')}: deleted, or the token can no "
               "longer see it); torchbot stopped following it; `release build --resume` builds these again")
        return _close(s, row, "gone", why)


def _close(s, row, status: str, why: str) -> int:
    """Close a run that did not complete: its builds still active become interrupted, saying why."""
    from release.state import Build

    now = _now()
    row.status, row.finished, row.last_error = status, now, why
    moved = 0
    for b in list(s.query(Build).filter(Build.run_key == row.request_id, Build.state.in_(ACTIVE))):
        moved += _move(s, b, {"state": "interrupted", "finished": now, "message": why})
    states = {b.package: b.state for b in s.query(Build).filter(Build.run_key == row.request_id)}
    row.outcome = outcome_text(row, states)
    return moved


def outcome_text(row, states: dict[str, str]) -> str:
    """What became of a run, for a front end that could not follow it to its end (pure)."""
    counts = Counter(states.values())
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no build"
    failed = sorted(p for p, s in states.items() if s in ("failed", "interrupted"))
    where = f"GitHub run {row.run_id}" + (f" ({row.html_url})" if row.html_url else "") if row.run_id \
        else f"the GitHub dispatch {row.request_id}"
    if row.status == "completed":
        text = f"{where} of {row.branch} ended: {summary}."
    else:
        text = f"{row.last_error}. {where} of {row.branch}: {summary}."
    if failed:
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        text += " Not built: " + ", ".join(failed[:5]) + more + "."
    if counts.get("interrupted"):
        text += f" Resume with `/build {row.branch} --resume`."
    return text


def _apply(s, b, job: dict | None, run: dict | None, head: str | None = None) -> int:
    """Move one build to what GitHub shows; 1 when this call moved it. A failed one says how
    to retry it (``head``: the pull request branch the run built)."""
    now = _now()
    if job is None:
        if run is None or run.get("status") != "completed":
            return 0
        values = {"state": "failed", "finished": now,
                  "message": f"the run ended ({run.get('conclusion')}) without a job for this variant"}
    else:
        new = job_state(job)
        if new == b.state:
            return 0
        values = {"state": new, "started": github_time(job.get("started_at")) or b.started or now,
                  "log": job.get("html_url") or b.log}
        if new in FINAL:
            values["finished"] = github_time(job.get("completed_at")) or now
            values["message"] = None if new == "succeeded" else (
                f"GitHub job {job.get('conclusion')} (retry: "
                f"{retry_command(b.branch, b.package, 'github', head)}; log: {job.get('html_url') or 'the run'})")
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


def _move(s, b, values: dict) -> int:
    """UPDATE one build from the state it was read in, exactly once (a build another process
    already moved is left alone); 1 when this call moved it."""
    s.expunge(b)  # the ORM copy is never flushed
    done = s.connection().execute(_move_statement(tuple(sorted(values))), {"_id": b.id, "_from": b.state, **values})
    return int(done.rowcount == 1)


def _give_up_stale(ctx, st, keys: list[str] | None) -> int:
    """Runs with no change for TORCHBOT_GITHUB_STALE_HOURS (a dispatch never seen: after
    DISPATCH_GRACE) are no longer followed; their builds become interrupted, saying why."""
    hours = float(ctx.settings.github_stale_hours)
    now = _now()
    moved = 0
    with st.session() as s:
        for row in list(followed(s, keys)):
            if row.run_id is None and row.status == "dispatching" and now - row.dispatched > DISPATCH_GRACE:
                why = (f"GitHub shows no run for dispatch {row.request_id} {_minutes(DISPATCH_GRACE)} min after it "
                       "was sent, and torchbot never had GitHub's answer to it (torchbot stopped while sending it, "
                       "or the answer was lost); `release build --resume` dispatches it again")
            elif now - row.last_change > timedelta(hours=hours):
                where = f"GitHub run {row.run_id} ({row.html_url})" if row.run_id else f"dispatch {row.request_id}"
                why = (f"torchbot saw no change in {where} for {hours:g} h (TORCHBOT_GITHUB_STALE_HOURS) "
                       "and stopped following it")
            else:
                continue
            moved += _close(s, row, "stale", why)
    return moved


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)
