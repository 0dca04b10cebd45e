"""Builds reported back to the bump pull request they built: a commit status on the PR's head
commit (context ``torchbot/builds``, e.g. "57/237 built, 2 failed"), and, with
``TORCHBOT_BUMP_AUTOMERGE``, the merge of a bump PR whose builds all passed.

Only GitHub runs of a pull request's head are reported (their ``ref`` is not the branch they
build for); a branch's own builds are published, not reviewed. The status counts the latest
build of each variant at that commit, across every run dispatched for it. It is posted when
it changes, a ``pending`` one at most every :data:`MIN_SECONDS` per commit (a 237-variant
build moves many times a minute), the final one (success or failure) always. Automerge merges
only a ``bump/`` branch, only while its head is still the commit that was built (GitHub's
``sha`` check), with the merge method ``merge``; a build-torchvision bump PR only once its
build-pytorch pair merged, and then in the same run (``release.builds.pairing``); while it waits
its head has a ``torchbot/pair`` status naming the pair and why, worded from the typed
``PairWait`` (pending; failure once the pair failed or was closed; success once it merged). A
variant the changed-only rule finds unchanged since its success at an earlier head of the same PR (a rebase, a
maintainer's comment-only commit) counts as built at the new head (``release.state.carried``), and the description says
so ("131/131 built (131 unchanged since 1a2b3c4d5e6f)"); what merges is then published from the
branch (``release.publishing``) without being built again.

May import: config, release.state, release.adapters, release.builds.pairing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from config.errors import ExternalError
from config.outcomes import PAIR_WORDS, PairWait
from config.policy import FAILED, bucket, is_bump_head

log = logging.getLogger("torchbot.builds.github")
CONTEXT = "torchbot/builds"
PAIR_CONTEXT = "torchbot/pair"  # a build-torchvision PR's wait for its build-pytorch pair
MIN_SECONDS = 60.0
_posted: dict[str, tuple[str, float]] = {}  # commit -> (state and description posted, when)
_pair_posted: dict[str, str] = {}  # commit -> the torchbot/pair state and description posted
_lock = threading.Lock()


def summary(states: list[str], carried: dict[str, str] | None = None) -> tuple[str, str]:
    """(GitHub status state, description) of the builds' states (pure). ``carried`` (package ->
    earlier head) are counted as built, and said: "(N unchanged since <earlier head>)"."""
    counts = Counter(states)
    failed = sum(1 for s in states if bucket(s) == FAILED)
    text = f"{counts['succeeded']}/{len(states)} built" + (f", {failed} failed" if failed else "")
    if carried:
        since = sorted({c[:12] for c in carried.values()})
        text += f" ({len(carried)} unchanged since {since[0] if len(since) == 1 else 'an earlier head'})"
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
                heads.setdefault(row.commit, (r.branch, r.ref, r.html_url, getattr(r, "repo", None)))
    return _post(ctx, gh, heads)


def report_head(ctx, gh, branch: str, ref: str, sha: str, repo: str | None = None) -> list[dict]:
    """Post the status of the pull-request head ``ref`` at ``sha`` though no run was dispatched
    for it (every variant unchanged since an earlier head of the PR: ``release.state.carried``),
    and automerge it as :func:`report` would."""
    return _post(ctx, gh, {sha: (branch, ref, None, repo)})


def _states(ctx, sha: str, branch: str, repo: str | None = None) -> tuple[list[str], dict[str, str]]:
    from release.builds.pairing import states_at

    return states_at(ctx, sha, branch, repo)


def _post(ctx, gh, heads: dict[str, tuple]) -> list[dict]:
    out = []
    for sha, (branch, ref, url, repo) in heads.items():
        states, kept = _states(ctx, sha, branch, repo)
        if not states:
            continue
        state, text = summary(states, kept)
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
        merged = automerge(ctx, gh, branch, ref, sha, repo) if state == "success" else None
        if state == "failure" and repo is None:  # build-torchvision's PRs waiting for this one: it failed
            _pair_failed(ctx, sha)
        out.append({"sha": sha, "ref": ref, "state": state, "description": text, "merged": merged})
    return out


def automerge(ctx, gh, branch: str, ref: str, sha: str, repo: str | None = None) -> str | None:
    """Merge the bump PR ``ref`` -> ``branch`` at ``sha`` when TORCHBOT_BUMP_AUTOMERGE is on;
    the merge commit, or None (off, not a bump branch, no open PR, its head moved, refused).
    ``repo``: a companion's GitHub repository (None: TORCHBOT_GITHUB_REPO's); the record's rows
    of that repository's clone are the ones it changes."""
    if not ctx.settings.bump_automerge or not is_bump_head(ref):
        return None
    path = _path_of(ctx, repo)
    pr = None
    try:
        pr = gh.find_pull(ref, branch)
        if pr is None or (pr.get("head") or {}).get("sha") != sha:
            log.info("automerge of %s: no open pull request with head %s", ref, sha[:12])
            return None
        if repo is not None and _waits(ctx, gh, path, branch, int(pr["number"]), sha):
            return None
        merged = gh.merge_pull(int(pr["number"]), sha)
    except ExternalError as err:
        log.warning("automerge of %s into %s: %s", ref, branch, err)
        if getattr(err, "status", None) in (405, 409, 422) and pr is not None:  # GitHub will not merge it
            if _in_conflict(ctx, path, branch, sha):  # a conflict, not a review missing: the record says so
                _conflict(ctx, path, branch, int(pr["number"]), sha)
            _refused(ctx, gh, path, branch, int(pr["number"]), ref, sha, err.message)
        return None
    log.info("automerge: merged %s into %s (%s)", ref, branch, merged.get("sha"))
    _merged(ctx, path, branch, int(pr["number"]), sha, merged.get("sha"))
    if repo is None:  # build-torchvision's PRs that waited for this one merge with it, in this run
        _merge_waiting(ctx, int(pr["number"]))
        tell_waiting(ctx, int(pr["number"]))  # those whose builds have not all passed: their pair merged
    return merged.get("sha")


def _pair_failed(ctx, sha: str) -> None:
    from release.builds.pairing import pair_at

    number = pair_at(ctx, sha)
    if number is not None:
        tell_waiting(ctx, number)


def _merge_waiting(ctx, number: int) -> None:
    from release.adapters.github import Actions
    from release.builds.pairing import ready

    for github, branch, ref, sha in ready(ctx, number):  # each into its own branch
        gh = Actions(ctx.settings, repo=github)
        try:
            automerge(ctx, gh, branch, ref, sha, github)
        finally:
            gh.close()


def _waits(ctx, gh, path: str | None, branch: str, number: int, sha: str) -> bool:
    """A companion's bump PR waits for its build-pytorch pair (``release.builds.pairing``); its
    ``torchbot/pair`` status says so."""
    from release.builds.pairing import wait

    why, pair = wait(ctx, path, branch, number)
    if why:
        log.info("automerge of #%s into %s: waits for build-pytorch's #%s (%s)", number, branch, pair, why)
    post_pair(gh, sha, why, pair)
    return bool(why)


def pair_status(why: PairWait, pair: int) -> tuple[str, str]:
    """(GitHub status state, description) of a build-torchvision PR whose build-pytorch pair is
    PR ``pair`` and which waits for it ``why`` (pure; words from ``PAIR_WORDS``): pending while
    the pair may still merge, failure once it cannot (failed, closed), success once it merged."""
    if not why:
        return "success", f"build-pytorch's #{pair} merged: this merges with it"
    if why in (PairWait.FAILED, PairWait.CLOSED):
        return "failure", f"build-pytorch's #{pair} {PAIR_WORDS[why]}: this merges only with its pair"
    return "pending", f"waits for build-pytorch's #{pair}, which {PAIR_WORDS[why]}: it merges only with its pair"


def post_pair(gh, sha: str, why: PairWait, pair: int | None) -> None:
    """Post the ``torchbot/pair`` status of a companion PR's head ``sha`` when it changed (none
    when the PR has no pair); a GitHub error is logged."""
    if pair is None:
        return
    state, text = pair_status(why, pair)
    with _lock:
        if _pair_posted.get(sha) == f"{state} {text}":
            return
    try:
        gh.post_status(sha, state, text, context=PAIR_CONTEXT)
    except ExternalError as err:
        log.warning("telling %s of its pair #%s: %s", sha[:12], pair, err)
        return
    with _lock:
        _pair_posted[sha] = f"{state} {text}"


def tell_waiting(ctx, pair_pr: int) -> None:
    """The companion PRs still held for build-pytorch's PR ``pair_pr``: their wait looked at again
    and said on their heads (``torchbot/pair``), after the pair merged or its builds failed."""
    from release.adapters.github import Actions
    from release.builds.pairing import waiting

    for github, row in waiting(ctx, pair_pr):
        why, pair = _wait(ctx, row)
        gh = Actions(ctx.settings, repo=github)
        try:
            post_pair(gh, row.head_sha, why, pair)
        finally:
            gh.close()


def _wait(ctx, row) -> tuple[PairWait, int | None]:
    from release.builds.pairing import wait

    return wait(ctx, row.repo, row.branch, row.pr_number)


def _path_of(ctx, repo: str | None) -> str | None:
    """The clone of GitHub repository ``repo`` among the configured ones (None: the first)."""
    from pathlib import Path

    from config.policy import github_name
    from release.adapters.remote import remote_url

    repos = ctx.settings.repositories()
    if not repos:
        return None
    if repo is None:
        return str(repos[0])
    for p in repos[1:]:
        try:
            name = github_name(ctx.settings, first=False, remote_url=remote_url(Path(p), ctx.settings.repo_remote))
        except ExternalError:
            continue
        if name and name.lower() == repo.lower():
            return str(p)
    return None


def _in_conflict(ctx, path: str | None, branch: str, sha: str) -> bool:
    """Whether the PR's head ``sha`` conflicts with ``branch`` on the remote (git's merge-tree in
    the repository's clone), rather than waiting for a review."""
    from pathlib import Path

    from release.adapters.remote import conflicts

    return path is not None and conflicts(Path(path), ctx.settings.repo_remote, branch, sha) is True


def _conflict(ctx, path: str | None, branch: str, number: int, head: str) -> None:
    """A bump pull request GitHub will not merge, in the release record (it needs a person)."""
    from sqlalchemy.exc import SQLAlchemyError

    from config.errors import TorchbotError
    from config.outcomes import PrState
    from release.state import state_for
    from release.state.record import set_pr_state

    if path is None:
        return
    try:
        set_pr_state(state_for(ctx), path, branch, number, PrState.CONFLICT, head_sha=head)
    except (TorchbotError, SQLAlchemyError) as err:
        log.warning("the conflict of #%s not kept: %s", number, getattr(err, "message", err))


def _merged(ctx, path: str | None, branch: str, number: int, head: str, merge: str | None) -> None:
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
    if path is None:
        return
    try:
        set_pr_state(state_for(ctx), path, branch, number, PrState.MERGED, head_sha=head)
        if merge:
            track_remote_branch(Path(path), s.repo_remote, branch)
    except (TorchbotError, SQLAlchemyError) as err:
        log.warning("after merging into %s: %s", branch, getattr(err, "message", err))


def _refused(ctx, gh, path: str | None, branch: str, number: int, ref: str, sha: str, said: str) -> None:
    """GitHub refused the automerge (a conflict, a review missing): kept in the state
    (release.state.decisions ``merge-refused``, which the dashboard lists) and said once on the PR
    and as its ``torchbot/automerge`` status, so the PR does not just show "success"."""
    from pathlib import Path

    from release.state import decisions, state_for

    name = Path(path).name if path else ""
    row = decisions.record(state_for(ctx), name, branch, "merge-refused", number=number, head=sha, note=said)
    if not decisions.mark_said(state_for(ctx), row.id):
        return
    try:
        gh.post_status(sha, "failure", "automerge refused by GitHub", context="torchbot/automerge")
        gh.comment_issue(number, f"torchbot could not merge this pull request at `{sha[:12]}`: {said}\n\n"
                                 "Every build passed; a maintainer's review or merge is needed.")
    except ExternalError as err:
        log.warning("telling #%s that its merge was refused: %s", number, err)
