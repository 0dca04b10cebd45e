"""Command layer for publishing, shared by the CLI and Slack: ``plan_publish(ctx, branch) ->
Plan`` (the same Plan / result shapes as builds)."""

from __future__ import annotations

from release.builds.commands import BuildsResult, Plan


def plan_publish(ctx, branch: str | None = None, *, repo=None) -> Plan:
    from release.publishing import publish

    if branch and (repo or ctx.settings.repo_path):  # an unknown branch is bad input (exit 2), as in build
        from release.adapters.git import resolve_branch
        from release.context import repo_path

        resolve_branch(repo_path(ctx, repo), branch, ctx.settings.repo_remote)
    pending = publish.pending(ctx, branch, repo=repo)
    held = publish.held(ctx, branch, repo=repo)
    summary = {"branch": branch, "publish": [{"package": b.package, "branch": b.branch, "pin": b.pin} for b in pending],
               "held": [{"package": b.package, "branch": b.branch, "reason": why} for b, why in held]}
    if not pending:
        summary["nothing"] = nothing_reason(ctx, branch, held)
    text = (f"Publish {len(pending)} variant(s)" + (f" of {branch}" if branch else "") + ":\n"
            + "\n".join(f"  {b.branch} {b.package}" for b in pending)) if pending else \
        f"Nothing to publish: {summary['nothing']}."
    if held:
        text += "\nNot published yet:\n" + "\n".join(f"  {b.branch} {b.package}: {why}" for b, why in held)

    def apply(progress=None, notice=None) -> BuildsResult:
        rows = publish.publish_pending(ctx, branch, repo=repo, progress=progress)
        why = "" if rows else nothing_reason(ctx, branch, publish.held(ctx, branch, repo=repo))
        return BuildsResult("publish", rows, {"message": f"Nothing to publish: {why}."} if why else {})

    return Plan("publish", summary, text, apply)


def nothing_reason(ctx, branch: str | None, held: list) -> str:
    """Why there is nothing to publish, from the state DB's builds and publishes (not from words)."""
    from sqlalchemy import select

    from release.state import state_for
    from release.state.tables import Publish

    st = state_for(ctx)
    where = f" of {branch}" if branch else ""
    builds = st.builds(branch)
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
    with st.session() as s:
        done = {(p.package, p.branch, p.pin) for p in s.scalars(select(Publish))}
    if all((b.package, b.branch, b.pin) in done for b in succeeded):
        return f"all {len(succeeded)} succeeded build(s){where} are published already"
    return f"no succeeded build{where} is at its branch's current commit"
