"""Commits to branches of the managed repository without a checkout (GitPython + git
plumbing). The user's working tree, index and HEAD are never touched: the commit is built
by ``git fast-import`` from the branch tip plus the changes (release.gitops), and the branch
moves with a compare-and-swap ``update-ref``."""

from __future__ import annotations

import os

from config.errors import RefusedError
from release import gitops


def _tree(repo, rev: str) -> str:
    return repo.git.rev_parse(f"{rev}^{{tree}}")


def commit_changes(
    repo_path: str | os.PathLike,
    branch: str,
    changes: dict[str, str | bytes | None],
    message: str,
    author_name: str,
    author_email: str,
    parent_branch: str | None = None,
    *,
    replace_prefix: str | None = None,
) -> str | None:
    """Make ONE commit on ``branch`` from its tip plus ``changes`` (None deletes a path).
    A branch that does not exist is created from ``parent_branch``'s tip (or as a root
    commit when no parent is given). ``replace_prefix`` first removes every file under that
    folder (files in ``changes`` are then written back). Returns the new commit SHA, or
    None when the branch already has exactly that content."""
    repo = gitops.open_repo(repo_path)
    heads = gitops.local_branches(repo)
    tip = heads.get(branch)
    if tip is None:
        if parent_branch is not None and parent_branch not in heads:
            raise RefusedError(f"No branch '{parent_branch}' to start '{branch}' from in {repo_path}.")
        base = heads.get(parent_branch) if parent_branch else None
    else:
        base = tip
    if base is not None and tip is not None:
        changes = _effective(repo, base, changes, replace_prefix)
        if not changes and replace_prefix is None:
            return None
    sha = gitops.make_commit(
        repo, base, changes, message, author_name, author_email, replace_prefix=replace_prefix if base else None
    )
    if tip is not None and _tree(repo, sha) == _tree(repo, tip):
        return None  # nothing changed; the unreferenced commit object is left to gc
    gitops.move_refs(repo, {branch: (sha, tip or gitops.ZERO)})
    return sha


def _effective(repo, base: str, changes: dict, replace_prefix: str | None) -> dict:
    """Drop changes that would write what the base already holds (cheap blob-id compare)."""
    if replace_prefix is not None or not changes:
        return changes
    paths = list(changes)
    listing = repo.git.ls_tree(base, "--", *paths) if len(paths) < 200 else repo.git.ls_tree("-r", base)
    current: dict[str, str] = {}
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            current[path] = parts[2]
    out = {}
    for path, content in changes.items():
        if content is None:
            if path in current:
                out[path] = None
            continue
        data = content.encode("utf-8", errors="surrogateescape") if isinstance(content, str) else content
        if current.get(path) != blob_id(data):
            out[path] = content
    return out


def blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
