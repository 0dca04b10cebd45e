"""Command layer for publishing, shared by the CLI and Slack: ``plan_publish(ctx, branch) ->
Plan`` (the same Plan / result shapes as builds)."""

from __future__ import annotations

from release.builds.commands import BuildsResult, Plan


def plan_publish(ctx, branch: str | None = None, *, repo=None) -> Plan:
    from release.publishing import publish

    if branch and (repo or ctx.settings.repo_path):  # an unknown branch is bad input (exit 2), as in build
        _known_branch(ctx, branch, repo)
    pending = publish.pending(ctx, branch, repo=repo)
    held = publish.held(ctx, branch, repo=repo)
    summary = {"branch": branch,
               "publish": [{"package": b.package, "branch": b.branch, "repo": b.repo, "pin": b.pin} for b in pending],
               "held": [{"package": b.package, "branch": b.branch, "repo": b.repo, "reason": why} for b, why in held]}
    if not pending:
        summary["nothing"] = nothing_reason(ctx, branch, held, repo)
    text = (f"Publish {len(pending)} variant(s)" + (f" of {branch}" if branch else "") + ":\n"
            + "\n".join(f"  {_of(b)}{b.branch} {b.package}" for b in pending)) if pending else \
        f"Nothing to publish: {summary['nothing']}."
    if held:
        text += "\nNot published yet:\n" + "\n".join(f"  {_of(b)}{b.branch} {b.package}: {why}" for b, why in held)

    def apply(progress=None, notice=None) -> BuildsResult:
        rows = publish.publish_pending(ctx, branch, repo=repo, progress=progress)
        why = "" if rows else nothing_reason(ctx, branch, publish.held(ctx, branch, repo=repo), repo)
        return BuildsResult("publish", rows, {"message": f"Nothing to publish: {why}."} if why else {})

    return Plan("publish", summary, text, apply)


def _known_branch(ctx, branch: str, repo) -> None:
    """``branch`` is a branch of ``repo``, else of some configured repository (build-torchvision's
    may be its own); else the first repository's one line says so."""
    from config.errors import TorchbotError
    from release.adapters.git import resolve_branch
    from release.context import repo_path
    from release.publishing.publish import repositories

    every = repositories(ctx, repo)
    for r in every[1:]:
        try:
            resolve_branch(repo_path(ctx, r), branch, ctx.settings.repo_remote)
            return
        except TorchbotError:
            continue
    resolve_branch(repo_path(ctx, every[0]), branch, ctx.settings.repo_remote)


def _of(b) -> str:
    """A companion's build is named with its repository ("build-torchvision main …")."""
    return f"{b.repo.rsplit('/', 1)[-1]} " if b.repo else ""


def nothing_reason(ctx, branch: str | None, held: list, repo=None) -> str:
    """Why there is nothing to publish, from the state DB's builds and publishes (not from words),
    of ``repo`` or of every configured repository."""
    from release.publishing.publish import _github_of, published_keys, repositories
    from release.state import state_for

    st = state_for(ctx)
    where = f" of {branch}" if branch else ""
    every = repositories(ctx, repo)
    mine = {_github_of(ctx, r) for r in every} if every != [None] else {None}
    builds = [b for b in st.builds(branch) if b.repo in mine]
    if not builds:
        return f"no build{where} is recorded (`torchbot release build --branch BRANCH` builds one)"
    succeeded = [b for b in builds if b.state == "succeeded"]
    if not succeeded:
        states: dict[str, int] = {}
        for b in builds:
            states[b.state] = states.get(b.state, 0) + 1
        counts = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
        return f"none of the {len(builds)} recorded build(s){where} succeeded ({counts})"
    if held:
        return f"none of the {len(held)} succeeded, unpublished build(s){where} may be published yet (why below)"
    done = published_keys(st)
    if all((b.repo, b.package, b.branch, b.pin) in done for b in succeeded):
        return f"all {len(succeeded)} succeeded build(s){where} are published already"
    return f"no succeeded build{where} is at its branch's current commit"
