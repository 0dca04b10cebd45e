"""Builds reported back to the bump pull request they built: a commit status on the PR's head
commit (context ``torchbot/builds``, e.g. "57/237 built, 2 failed"), and, with
``TORCHBOT_BUMP_AUTOMERGE``, the merge of a bump PR whose builds all passed.

Only GitHub runs of a pull request's head are reported (their ``ref`` is not the branch they
build for); a branch's own builds are published, not reviewed. The status counts the latest
build of each variant at that commit, across every run dispatched for it. It is posted when
it changes, a ``pending`` one at most every :data:`MIN_SECONDS` per commit (a 237-variant
build moves many times a minute), the final one (success or failure) always. Automerge merges
only a ``bump/`` branch, only while its head is still the commit that was built (GitHub's
``sha`` check), with the merge method ``merge``; what merges is then published from the
branch (``release.publishing``) without being built again.

May import: config, release.state, release.adapters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from config.errors import ExternalError
from config.policy import FAILED, bucket, is_bump_head

log = logging.getLogger("torchbot.builds.github")
CONTEXT = "torchbot/builds"
MIN_SECONDS = 60.0
_posted: dict[str, tuple[str, float]] = {}  # commit -> (state and description posted, when)
_lock = threading.Lock()


def summary(states: list[str]) -> tuple[str, str]:
    """(GitHub status state, description) of the builds' states (pure)."""
    counts = Counter(states)
    failed = sum(1 for s in states if bucket(s) == FAILED)
    text = f"{counts['succeeded']}/{len(states)} built" + (f", {failed} failed" if failed else "")
    if counts["queued"] or counts["running"]:
        return "pending", text + (f", {counts['running']} running" if counts["running"] else "")
    return ("failure" if failed else "success"), text


def due(sha: str, state: str, text: str, now: float) -> bool:
    """Whether this status is worth posting: it changed, and a pending one not within
    MIN_SECONDS of the last post for the commit."""
    with _lock:
        last = _posted.get(sha)
    if last is not None and last[0] == f"{state} {text}":
        return False
    return not (state == "pending" and last is not None and now - last[1] < MIN_SECONDS)


def report(ctx, gh, keys: list[str] | None) -> list[dict]:
    """Post the status of every pull-request head the runs of ``keys`` (None: every run) built,
    and merge the bump PRs that passed when automerge is on. Returns what was posted
    (``{"sha", "state", "description", "merged"}``); a GitHub error is logged, never raised."""
    from release.state import Build, GithubRun, state_for

    with state_for(ctx).session() as s:
        q = s.query(GithubRun)
        if keys is not None:
            q = q.filter(GithubRun.request_id.in_(keys))
        runs = [r for r in q if r.ref and r.ref != r.branch]
        heads: dict[str, tuple] = {}
        for r in runs:
            row = s.query(Build).filter(Build.run_key == r.request_id).first()
            if row is not None and row.commit:
                heads.setdefault(row.commit, (r.branch, r.ref, r.html_url))
        states: dict[str, list[str]] = {}
        for sha, (branch, _, _) in heads.items():
            latest: dict[str, str] = {}
            for b in s.query(Build).filter(Build.commit == sha, Build.branch == branch,
                                           Build.backend == "github").order_by(Build.id):
                latest[b.package] = b.state
            states[sha] = list(latest.values())
    out = []
    for sha, (branch, ref, url) in heads.items():
        state, text = summary(states[sha])
        now = time.monotonic()
        if not due(sha, state, text, now):
            continue
        try:
            gh.post_status(sha, state, text, context=CONTEXT, target_url=url)
        except ExternalError as err:
            log.warning("reporting builds of %s to GitHub: %s", ref, err)
            continue
        with _lock:
            _posted[sha] = (f"{state} {text}", now)
        merged = automerge(ctx, gh, branch, ref, sha) if state == "success" else None
        out.append({"sha": sha, "ref": ref, "state": state, "description": text, "merged": merged})
    return out


def automerge(ctx, gh, branch: str, ref: str, sha: str) -> str | None:
    """Merge the bump PR ``ref`` -> ``branch`` at ``sha`` when TORCHBOT_BUMP_AUTOMERGE is on;
    the merge commit, or None (off, not a bump branch, no open PR, its head moved, refused)."""
    if not ctx.settings.bump_automerge or not is_bump_head(ref):
        return None
    pr = None
    try:
        pr = gh.find_pull(ref, branch)
        if pr is None or (pr.get("head") or {}).get("sha") != sha:
            log.info("automerge of %s: no open pull request with head %s", ref, sha[:12])
            return None
        merged = gh.merge_pull(int(pr["number"]), sha)
    except ExternalError as err:
        log.warning("automerge of %s into %s: %s", ref, branch, err)
        if getattr(err, "status", None) == 405 and pr is not None:  # GitHub cannot merge it: a conflict
            _conflict(ctx, branch, int(pr["number"]), sha)
        return None
    log.info("automerge: merged %s into %s (%s)", ref, branch, merged.get("sha"))
    _merged(ctx, branch, int(pr["number"]), sha, merged.get("sha"))
    return merged.get("sha")


def _conflict(ctx, branch: str, number: int, head: str) -> None:
    """A bump pull request GitHub will not merge, in the release record (it needs a person)."""
    from sqlalchemy.exc import SQLAlchemyError

    from config.errors import TorchbotError
    from config.outcomes import PrState
    from release.state import state_for
    from release.state.record import set_pr_state

    try:
        set_pr_state(state_for(ctx), ctx.settings.repo_path, branch, number, PrState.CONFLICT, head_sha=head)
    except (TorchbotError, SQLAlchemyError) as err:
        log.warning("the conflict of #%s not kept: %s", number, getattr(err, "message", err))


def _merged(ctx, branch: str, number: int, head: str, merge: str | None) -> None:
    """What the merge changed, kept where the views read it: the pull request merged in the release
    record, and the clone's ``<remote>/<branch>`` at the merge commit (the remote's truth, without
    waiting for the next fetch). Best effort: the merge is done."""
    from pathlib import Path

    from sqlalchemy.exc import SQLAlchemyError

    from config.errors import TorchbotError
    from config.outcomes import PrState
    from release.adapters.remote import track_remote_branch
    from release.state import state_for
    from release.state.record import set_pr_state

    s = ctx.settings
    try:
        set_pr_state(state_for(ctx), s.repo_path, branch, number, PrState.MERGED, head_sha=head)
        if merge and s.repo_path is not None:
            track_remote_branch(Path(s.repo_path), s.repo_remote, branch)
    except (TorchbotError, SQLAlchemyError) as err:
        log.warning("after merging into %s: %s", branch, getattr(err, "message", err))
