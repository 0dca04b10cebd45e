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
    text = (f"Publish {len(pending)} variant(s)" + (f" of {branch}" if branch else "") + ":\n"
            + "\n".join(f"  {b.branch} {b.package}" for b in pending)) if pending else "Nothing to publish."
    if held:
        text += "\nNot published yet:\n" + "\n".join(f"  {b.branch} {b.package}: {why}" for b, why in held)

    def apply(progress=None, notice=None) -> BuildsResult:
        return BuildsResult("publish", publish.publish_pending(ctx, branch, repo=repo, progress=progress),
                            {"message": "Nothing to publish."})

    return Plan("publish", summary, text, apply)
