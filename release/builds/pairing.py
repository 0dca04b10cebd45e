"""build-torchvision's bump pull requests merge with their build-pytorch pair (issue 33 point 4).

A companion repository's (build-torchvision's) bump PR into a branch is automerged only once its
pair merged: build-pytorch's bump PR to the same target pin of the branch it pairs with
(``pytorch_branches``: the reader's pairing by versions, the one ``bump-pins --with-companions``
bumps them by, else the branch of the same name), found in the release record
(``release.state.record.pair_of``: the rows the bump stage wrote, never GitHub's text). Until
then it waits, and its record row says why (``config.outcomes.PairWait``: the pair is still
building, failed, was closed by a person, or passed and is not merged), which the dashboard shows.
A companion PR whose pair the record does not know (build-pytorch's branch was not moved by a pull
request) merges as build-pytorch's do.

When build-pytorch's PR merges, the companion PRs waiting for it (``waiting``) whose builds all
passed at their head (``ready``) are merged in the same run by ``release.builds.pr_status``, each
in its own GitHub repository; that module also says the wait on each companion PR's head (its
``torchbot/pair`` commit status, worded from the PairWait). ``states_at``: the build states at a
PR's head that both read; ``pair_at``: the first repository's PR the record has at a head.

May import: config, release.state, release.adapters, release.recipes, release.builds.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from config.errors import TorchbotError
from config.outcomes import PairWait, PrState

log = logging.getLogger("torchbot.builds.pairing")


def first_repository(ctx) -> Path | None:
    repos = ctx.settings.repositories()
    return Path(repos[0]) if repos else None


def wait(ctx, path: str | None, branch: str, number: int) -> tuple[PairWait, int | None]:
    """Why companion bump PR ``number`` (of the clone ``path``) into ``branch`` may not merge yet,
    and its pair's number (``PairWait.NONE``: it may); kept in its record row."""
    from release.state import state_for
    from release.state.record import pair_of, set_pair_wait

    first = first_repository(ctx)
    if path is None or first is None:
        return PairWait.NONE, None
    st = state_for(ctx)
    pair = pair_of(st, path, first, branch, number, pytorch_branches(ctx, path, branch))
    why = PairWait.NONE if pair is None else _why(ctx, pair)
    try:
        set_pair_wait(st, path, branch, number, why, pair.pr_number if pair is not None else None)
    except SQLAlchemyError as err:
        log.warning("the wait of #%s for its pair not kept: %s", number, err)
    return why, pair.pr_number if pair is not None else None


def pytorch_branches(ctx, path: str | Path, branch: str) -> list[str]:
    """The build-pytorch branches companion ``path``'s ``branch`` may pair with, best first: the
    one the reader pairs it with (``release.recipes.repos.pair``: the same PyTorch major.minor,
    then Python, shared pins and CUDA versions; ``release.pins.companions.paired_branches`` bumps
    them together by it), among release branches (a bump PR's head is none), then the branch of
    the same name."""
    from config.catalog_data import load_catalog
    from config.policy import is_bump_head
    from release.recipes.reader import read_repository
    from release.recipes.repos import pair

    first = first_repository(ctx)
    best = None
    if first is not None:
        try:
            mine = read_repository(path, load_catalog()).branches.get(branch)
            candidates = [bm.branch for bm in read_repository(first, load_catalog()).branches.values()
                          if bm.branch is not None and not is_bump_head(bm.name)]
            if mine is not None and mine.branch is not None and candidates:
                best = pair(mine.branch, candidates)[0]
        except TorchbotError as err:
            log.warning("pairing %s of %s by versions: %s", branch, path, err.message)
    return list(dict.fromkeys([*([best.name] if best is not None else []), branch]))


def _why(ctx, pair) -> PairWait:
    if pair.pr_state == PrState.MERGED:
        return PairWait.NONE
    if pair.pr_state == PrState.CLOSED:
        return PairWait.CLOSED
    states = states_at(ctx, pair.head_sha, pair.branch, None)[0] if pair.head_sha else []
    if any(s in ("failed", "interrupted") for s in states):
        return PairWait.FAILED
    if not states or any(s != "succeeded" for s in states):
        return PairWait.BUILDING
    return PairWait.NOT_MERGED


def waiting(ctx, pair_pr: int) -> list[tuple[str, object]]:
    """The companion PRs held back for build-pytorch's PR ``pair_pr``, open: (GitHub repository,
    record row) each, one per pull request."""
    from config.policy import github_name
    from release.adapters.remote import remote_url
    from release.state import state_for
    from release.state.record import waiting_for

    out, seen = [], set()
    for row in waiting_for(state_for(ctx), pair_pr):
        if (row.repo, row.pr_number) in seen:  # one row per pin group, one pull request
            continue
        seen.add((row.repo, row.pr_number))
        if not (row.head_sha and row.head_ref and row.pr_state in (PrState.OPEN, PrState.CONFLICT, "")):
            continue
        try:  # its GitHub repository, as its builds were recorded (release.builds.run.companion_github)
            github = github_name(ctx.settings, first=False,
                                 remote_url=remote_url(Path(row.repo), ctx.settings.repo_remote))
        except TorchbotError as err:
            log.warning("the companion PR #%s of %s: %s", row.pr_number, row.branch, err.message)
            continue
        if github is not None:
            out.append((github, row))
    return out


def ready(ctx, pair_pr: int) -> list[tuple[str | None, str, str, str]]:
    """The companion PRs that waited for build-pytorch's PR ``pair_pr`` (now merged) and whose
    builds all passed at their head: (GitHub repository, branch, head branch, head sha) each, for
    ``release.builds.pr_status`` to merge in this run."""
    out = []
    for github, row in waiting(ctx, pair_pr):
        states = states_at(ctx, row.head_sha, row.branch, github)[0]
        if states and all(s == "succeeded" for s in states):  # else its own builds merge it when they pass
            out.append((github, row.branch, row.head_ref, row.head_sha))
    return out


def pair_at(ctx, sha: str) -> int | None:
    """The number of the first repository's bump PR whose head the record has at ``sha``."""
    from sqlalchemy import select

    from release.state import state_for
    from release.state.record import ReleaseRow, repo_key

    first = first_repository(ctx)
    if first is None:
        return None
    with state_for(ctx).session() as s:
        return s.scalars(select(ReleaseRow.pr_number).where(
            ReleaseRow.repo == repo_key(first), ReleaseRow.head_sha == sha, ReleaseRow.pr_number.is_not(None))
            .order_by(ReleaseRow.id.desc())).first()


def states_at(ctx, sha: str, branch: str, repo: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The latest build state of each variant of ``repo`` (None: the first repository) at ``sha``,
    with the variants carried there (counted as succeeded), and the carried ones (package ->
    earlier head)."""
    from release.state import Build, carried, state_for
    from release.state.tables import same_repo

    st = state_for(ctx)
    latest: dict[str, str] = {}
    with st.session() as s:
        for b in s.query(Build).filter(Build.commit == sha, Build.branch == branch, same_repo(Build.repo, repo),
                                       Build.backend == "github").order_by(Build.id):
            latest[b.package] = b.state
    kept = {p: c for p, c in carried.at(st, branch, sha).items() if p not in latest}
    return list(latest.values()) + ["succeeded"] * len(kept), kept


