"""Command layer for branch creation, shared by the CLI and Slack: ``create_branch(ctx, name,
**opts)`` returns the result object the front ends render."""

from __future__ import annotations

from release.context import repo_arg


def create_branch(ctx, name: str, **opts):
    from release.branches.create import create_branch as _create

    repo = repo_arg(ctx, opts.pop("repo", None))
    return _create(ctx, repo, name, **opts)
