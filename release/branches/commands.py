"""Command layer for branch creation, shared by the CLI and Slack: ``create_branch(ctx, name,
**opts)`` returns the result object the front ends render."""

from __future__ import annotations

from release.context import repo_arg


def create_branch(ctx, name: str, **opts):
    from release.branches.create import create_branch as _create

    repo = repo_arg(ctx, opts.pop("repo", None))
    return _create(ctx, repo, name, **opts)


def branch_names(ctx, repo=None) -> list[str]:
    """The branch names a command may be given: the repository's local branches and its remote's
    (``origin/x`` as ``x``), sorted, each once (shell completion reads them)."""
    from release.adapters import git as gitops

    path = repo_arg(ctx, repo)
    remote = ctx.settings.repo_remote
    out = gitops.run_git(path, "for-each-ref", "--format=%(refname)", "refs/heads", f"refs/remotes/{remote}")
    names = set()
    for ref in out.split():
        name = ref.removeprefix("refs/heads/").removeprefix(f"refs/remotes/{remote}/")
        if name != "HEAD":
            names.add(name)
    return sorted(names)
