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
its build row, last poll, requests spent). ``poll_once`` (``release.builds.github_poll``)
works from the DB alone, so a restarted torchbot (``poll_active``: the scheduler's
``poll-builds`` job, or ``follow``) picks up where the last one was, and follows every run
until it is closed, whatever GitHub calls it first (``requested``, ``pending``, ``waiting``) or
how fast it ends. Each result is recorded exactly once (a conditional UPDATE), and every
follower's ``progress`` hears each change of its builds once, read from the DB, whichever
poller made it (:class:`Watch`).

A dispatch is sent once. GitHub refusing it (a 4xx, a rate limit, no connection) leaves no
trace; a dispatch whose answer was lost (a 5xx or a timeout after it was sent: GitHub may have
made the run) stays ``dispatching`` and is followed like the others: its run is looked for by
its request id, and a run not seen within DISPATCH_GRACE is given up, saying so.

``notice`` (where a front end reports the build, e.g. a Slack message) is kept with each run
and the process following it; when that follower is gone before the run ends (a restart),
``release.builds.recover.pending_notices`` hands the run's outcome to the front end.

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
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable

from config.errors import ExternalError
from release.adapters.github import AccessRefused, Actions
from release.adapters.http import Refused, Unavailable
from release.builds import pr_status
from release.builds.github_poll import (  # noqa: F401  (CLOSED, DISPATCH_GRACE, poll_once: re-exported)
    CLOSED,
    DISPATCH_GRACE,
    WAITING,
    find_runs,
    followed,
    poll_once,
    resume_waiting,
)

log = logging.getLogger("torchbot.builds.github")
MAX_MATRIX_JOBS = 256  # GitHub: a matrix generates at most 256 jobs per workflow run
MAX_INPUT_CHARS = 60_000  # GitHub caps a dispatch's inputs at 65,535 characters; keep a margin

Progress = Callable[[dict], None]
FOLLOWING: Counter[str] = Counter()  # request ids a caller in this process follows to their end (and reports)
_following_lock = threading.Lock()


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


# ---------------------------------------------------------------------------------------
# Dispatch


def dispatch_build(ctx, plan, wait: bool = True, actions: Actions | None = None,
                   progress: Progress | None = None, notice: dict | None = None) -> list[dict]:
    """Dispatch ``plan`` (one run per batch) and, unless ``wait=False``, follow the runs until
    every build has a result; ``progress`` hears every change of a build; ``notice`` is kept
    with the runs for a restarted front end (see the module docstring)."""
    from release.state import Build, GithubRun, state_for, utcnow

    if not plan.items:
        return []
    gh = actions or Actions(ctx.settings, repo=plan.github)
    st = state_for(ctx)
    keys: list[str] = []
    try:
        for torch, comps in batches(plan.items):
            keys.append(_dispatch_one(ctx, st, gh, plan, torch, comps, notice))
        watch = Watch(st, keys, progress, seen={})
        _resolve(ctx, gh, keys)
        pr_status.report(ctx, gh, keys)  # a pull request's head shows "0/N built" at once
        watch.tell()
        if wait:
            follow(ctx, keys, gh, watch=watch)
            with st.session() as s:  # the caller reports the end itself
                s.query(GithubRun).filter(GithubRun.request_id.in_(keys), GithubRun.notice.is_not(None)).update(
                    {"notified": utcnow()})
    finally:
        _unfollow(keys)
    with st.session() as s:
        return [b.to_dict() for b in s.query(Build).filter(Build.run_key.in_(keys)).order_by(Build.id)]


def _dispatch_one(ctx, st, gh: Actions, plan, torch: list[dict], comps: list[dict], notice: dict | None) -> str:
    """Record the run and its builds, then dispatch. A refused dispatch leaves no trace; one
    whose answer was lost stays ``dispatching``, to be found by its request id."""
    from release.state import Build, GithubRun, owner_id

    by_name = {i.package: i for i in plan.items}
    request_id = uuid.uuid4().hex[:16]
    with st.session() as s:
        s.add(GithubRun(request_id=request_id, branch=plan.branch, ref=plan.ref, repo=plan.github,
                        workflow=ctx.settings.github_workflow_file, jobs=len(torch) + len(comps),
                        notice=json.dumps(notice) if notice else None, follower=owner_id()))
        s.add_all(Build(package=i.package, branch=plan.branch, state="queued", backend="github", recipe_blob=i.blob,
                        pin=i.pin, commit=plan.commit, owner=owner_id(), run_key=request_id, repo=plan.github)
                  for i in (by_name[e["package"]] for e in torch + comps))
    _follow([request_id])
    try:
        made = gh.dispatch({"branch": plan.branch, "pytorch": _encode(torch), "companions": _encode(comps),
                            "request_id": request_id, "publish": "true" if plan.publishes else "false",
                            **_cache_inputs(ctx.settings, plan)},
                           ref=plan.ref)
    except ExternalError as err:
        if not refused(err):
            _answer_lost(st, request_id, err)
            return request_id
        _unfollow([request_id])
        with st.session() as s:
            s.query(Build).filter(Build.run_key == request_id).delete()
            s.query(GithubRun).filter(GithubRun.request_id == request_id).delete()
        raise
    with st.session() as s:
        s.query(GithubRun).filter(GithubRun.request_id == request_id).update({"status": "dispatched"})
        if made:  # GitHub named its run (return_run_details): no lookup by title
            s.query(GithubRun).filter(GithubRun.request_id == request_id).update(
                {"run_id": str(made["id"]), "html_url": made.get("html_url")})
            s.query(Build).filter(Build.run_key == request_id).update(
                {"external_id": str(made["id"]), "log": made.get("html_url")})
    return request_id


def _cache_inputs(settings, plan) -> dict[str, str]:
    """The cache inputs of a dispatch (only when a cache is configured: a workflow rendered
    before them still takes a dispatch without one)."""
    if not settings.build_cache:
        return {}
    return {"cache": settings.build_cache, "cache_public_key": settings.build_cache_public_key or "",
            "substitute": "true" if plan.substitute else "false"}


def refused(err: ExternalError) -> bool:
    """Whether a failed dispatch certainly made no run: GitHub said no (a 4xx, a rate limit)
    or the request never left (a connect error)."""
    return isinstance(err, Refused) or (isinstance(err, Unavailable) and not err.may_have_acted)


def _answer_lost(st, request_id: str, err: ExternalError) -> None:
    from release.state import GithubRun

    log.warning("dispatch %s: %s; GitHub may have made its run, so it is looked for, not sent again",
                request_id, err)
    with st.session() as s:
        s.query(GithubRun).filter(GithubRun.request_id == request_id).update({"last_error": str(err)[:2000]})


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
            find_runs(st, gh, pending)
        except ExternalError as err:
            log.warning("looking for dispatched runs: %s", err)
            return
        if attempt < tries - 1:
            time.sleep(min(2.0 ** attempt, ctx.settings.github_poll_seconds))


# ---------------------------------------------------------------------------------------
# Following


def _follow(keys: list[str]) -> None:
    with _following_lock:
        FOLLOWING.update(keys)


def _unfollow(keys: list[str]) -> None:
    with _following_lock:
        FOLLOWING.subtract(keys)
        for k in [k for k, n in FOLLOWING.items() if n <= 0]:
            del FOLLOWING[k]


def following(request_id: str) -> bool:
    """Whether a caller in this process follows the run to its end (and reports it itself)."""
    with _following_lock:
        return FOLLOWING[request_id] > 0


class Watch:
    """What one follower told its ``progress`` of its runs' builds: every change of a build's
    state, read from the state DB (whichever poller made it: this follower, the scheduler's
    ``poll-builds``, another process), each told once. ``seen``: build id -> state already
    told (``{}``: every build's first state counts as news; None: what the DB holds now)."""

    def __init__(self, st, keys: list[str], progress: Progress | None, seen: dict[int, str] | None = None):
        self.st, self.keys, self.progress = st, list(keys), progress
        self.seen = self._states() if seen is None and progress else dict(seen or {})

    def _rows(self) -> list:
        from release.state import Build

        with self.st.session() as s:
            return list(s.query(Build).filter(Build.run_key.in_(self.keys)).order_by(Build.id))

    def _states(self) -> dict[int, str]:
        return {b.id: b.state for b in self._rows()}

    def tell(self) -> int:
        """Tell ``progress`` what changed since the last call; how many builds changed."""
        if self.progress is None:
            return 0
        news = [b for b in self._rows() if self.seen.get(b.id, "queued") != b.state]
        for b in news:
            self.seen[b.id] = b.state
            self.progress(b.to_dict())
        return len(news)


def follow(ctx, keys: list[str], gh: Actions, progress: Progress | None = None, watch: Watch | None = None) -> None:
    """Poll the runs of ``keys`` until every one is closed (each build has a result, or its run
    was given up), waiting for each run's ``next_poll`` as every poller does."""
    from release.state import state_for

    watch = watch or Watch(state_for(ctx), keys, progress)
    _follow(keys)
    try:
        while True:
            report = poll_once(ctx, gh, keys)
            watch.tell()
            if report.refused:  # one line naming the setting; the runs wait (not failed) and resume later
                raise ExternalError(f"{report.refused} The builds wait on credentials (not failed) and are "
                                    "followed again once a working token is configured.")
            if not report.open:
                return
            time.sleep(report.wait)
    finally:
        _unfollow(keys)


def poll_active(ctx, actions: Actions | None = None) -> int:
    """One polling pass over every followed GitHub run that is due (the scheduler's
    ``poll-builds`` job and a restarted torchbot), each repository's runs (build-pytorch's, a
    companion build-torchvision's) through that repository; returns how many builds it moved."""
    from release.state import GithubRun, state_for

    st = state_for(ctx)
    gh = actions or Actions(ctx.settings)
    try:
        resume_waiting(st, gh)
    except AccessRefused as err:
        log.warning("GitHub runs still wait on credentials: %s", err.message)
        return 0
    with st.session() as s:
        by_repo: dict[str | None, list[str]] = {}
        for rid, repo in s.query(GithubRun.request_id, GithubRun.repo).filter(
                GithubRun.request_id.in_(followed(s, None).with_entities(GithubRun.request_id))):
            by_repo.setdefault(repo, []).append(rid)
    changed = 0
    for repo, keys in sorted(by_repo.items(), key=lambda kv: kv[0] or ""):  # each repository with its own client
        changed += poll_once(ctx, gh if repo is None else Actions(ctx.settings, repo=repo), keys).changed
    return changed


def runs(ctx, branch: str | None = None) -> list[dict]:
    """The GitHub runs torchbot dispatched, newest first (for status)."""
    from release.state import GithubRun, state_for

    with state_for(ctx).session() as s:
        q = s.query(GithubRun).order_by(GithubRun.id.desc())
        if branch:
            q = q.filter(GithubRun.branch == branch)
        return [r.to_dict() for r in q]
