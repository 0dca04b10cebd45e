"""Branches checked out in a work tree, moved without leaving a reverting index: which work tree has
which branch, the checks before a move (clean, fast-forwardable), the move itself, and the
healing of a move a killed torchbot left half done. Part of the git adapter (imports
``release.adapters.git`` for refs; never the other way)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from config.errors import ExternalError, RefusedError
from release.adapters.git import _first_line, move_refs


def checkouts(repo) -> dict[str, Path]:
    """Branch name -> the work tree (main or linked) that has it checked out. A bare
    repository has none."""
    import git

    try:
        listing = repo.git.worktree("list", "--porcelain")
    except git.GitCommandError:  # pragma: no cover - very old git
        return {}
    out: dict[str, Path] = {}
    path: Path | None = None
    bare = False
    for line in [*listing.splitlines(), ""]:
        if line.startswith("worktree "):
            path, bare = Path(line[len("worktree "):]), False
        elif line == "bare":
            bare = True
        elif line.startswith("branch refs/heads/") and path is not None and not bare:
            out[line[len("branch refs/heads/"):]] = path
        elif not line:
            path = None
    return out


def _dirty(worktree_path: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(worktree_path), "status", "--porcelain=v1", "--untracked-files=no"],
        check=False, capture_output=True, text=True,
    )
    if proc.returncode:
        return proc.stderr.strip() or "git status failed"
    return proc.stdout.strip()


def check_checkouts(repo, moves: dict[str, tuple[str, str]]) -> dict[str, Path]:
    """Before moving ``moves`` ({branch: (new, old)}): every moved branch that is checked out
    must have a clean work tree and index (else RefusedError, nothing changed) and the
    fast-forward of its work tree must be possible (no untracked file in the way). Returns
    the branches to fast-forward with their work trees."""
    found = {b: p for b, p in checkouts(repo).items() if b in moves}
    for branch, path in found.items():
        heal_checkout(path, branch)
        dirty = _dirty(path)
        if dirty:
            first = dirty.splitlines()[0].strip()
            raise RefusedError(
                f"Branch '{branch}' is checked out in {path} with uncommitted changes ({first}); commit or "
                "stash them, or check out another branch. Nothing was changed."
            )
        new, old = moves[branch]
        proc = subprocess.run(
            ["git", "-C", str(path), "read-tree", "-n", "-m", "-u", old, new],
            check=False,
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            raise RefusedError(
                f"Branch '{branch}' is checked out in {path} and its work tree cannot be fast-forwarded "
                f"({_first_line(proc.stderr)}). Nothing was changed."
            )
    return found


def _git_out(path, *args: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(path), *args], check=False, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def heal_checkout(path, branch: str) -> bool:
    """Finish the move of a checked-out ``branch`` that a killed torchbot left half done: its ref
    moved (``advance_branches`` moves refs first) but the index and files are still those of the
    ref's previous commit (its reflog's ``@{1}``), with nothing else changed. Such a checkout
    looks as if someone had staged the revert of the move; it is fast-forwarded to the ref's
    commit instead, as the move would have. True when it was healed."""
    head = _git_out(path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{tree}}")
    index = _git_out(path, "write-tree")
    if not head or not index or head == index:
        return False
    prev = _git_out(path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}@{{1}}")
    if not prev or _git_out(path, "rev-parse", f"{prev}^{{tree}}") != index:
        return False  # staged work of a person's: never touched
    if subprocess.run(["git", "-C", str(path), "diff", "--quiet"], check=False).returncode != 0:
        return False  # the files differ from the index too: a person's edits
    new = _git_out(path, "rev-parse", f"refs/heads/{branch}")
    proc = subprocess.run(["git", "-C", str(path), "read-tree", "-m", "-u", prev, new or branch], check=False,
                          capture_output=True, text=True)
    return proc.returncode == 0


def advance_branches(repo, moves: dict[str, tuple[str, str]], *, checked: dict[str, Path] | None = None) -> list[str]:
    """Move branches ({branch: (new, old)}) in one transaction; a branch checked out in a
    clean work tree is fast-forwarded together with its index and files (a dirty one is
    refused before anything moves). Returns notes for the user."""
    found = check_checkouts(repo, moves) if checked is None else checked
    move_refs(repo, moves)
    notes = []
    for branch, path in found.items():
        new, old = moves[branch]
        proc = subprocess.run(
            ["git", "-C", str(path), "read-tree", "-m", "-u", old, new], check=False, capture_output=True, text=True
        )
        if proc.returncode:
            raise ExternalError(
                f"Branch '{branch}' moved to {new[:7]}, but its work tree in {path} could not follow "
                f"({_first_line(proc.stderr)}); run `git -C {path} reset --keep {new}` to bring it up to date."
            )
        notes.append(f"Branch '{branch}' is checked out in {path}: its work tree was fast-forwarded to {new[:7]}.")
    return notes




def catch_up(repo, remote: str, branches) -> list[str]:
    """Fast-forward each local branch of ``branches`` that is strictly behind ``<remote>/<branch>``
    (a killed run's push landed but its local move did not), a checked-out one with its index and
    files (when clean; else left, said by the next move). Returns the branches moved."""
    moved = []
    for b, path in checkouts(repo).items():
        if b in branches:
            heal_checkout(path, b)
    for b in branches:
        local = _git_out(repo.git_dir, "rev-parse", "--verify", "-q", f"refs/heads/{b}")
        there = _git_out(repo.git_dir, "rev-parse", "--verify", "-q", f"refs/remotes/{remote}/{b}")
        if not local or not there or local == there:
            continue
        if subprocess.run(["git", f"--git-dir={repo.git_dir}", "merge-base", "--is-ancestor", local, there],
                          check=False).returncode != 0:
            continue  # the local branch has commits the remote lacks: not ours to move
        try:
            advance_branches(repo, {b: (there, local)})
        except (ExternalError, RefusedError):
            continue
        moved.append(b)
    return moved
