"""Build worktrees of the managed repositories (the git CLI): a temporary detached worktree per
build run, made and removed under one lock per repository.

git does not guard its ``worktrees/`` directory: a ``worktree remove`` or ``prune`` deletes it
when it looks empty, and a concurrent ``worktree add`` then fails ("could not create directory
of '.git/worktrees/wt'"). Parallel builds of one repository do exactly that, so adding and
removing hold an ``flock`` on ``torchbot-worktrees.lock`` in the repository's git dir (threads
and processes alike).

May import: config, release.adapters.git.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from release.adapters.git import run_git


def worktree_home() -> Path:
    """A new temporary directory to hold one worktree (``<it>/wt``), for callers that record
    where their worktree is before they make it."""
    return Path(tempfile.mkdtemp(prefix="torchbot-wt-"))


@contextmanager
def worktree(repo: Path, commit: str, home: Path | None = None) -> Iterator[Path]:
    """A temporary detached worktree of ``commit`` at ``home/wt``, removed afterwards."""
    tmp = home or worktree_home()
    path = tmp / "wt"
    try:
        with _worktrees_locked(repo):
            run_git(repo, "worktree", "add", "--detach", "--quiet", str(path), commit)
        yield path
    finally:
        remove_worktree(repo, tmp)


def remove_worktree(repo: Path | None, home: Path) -> None:
    """Remove a worktree made by :func:`worktree` (``home/wt``) and its directory, and prune the
    repository's worktree list; what is already gone is fine."""
    if repo is not None and Path(repo).exists():
        with _worktrees_locked(repo):
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(home / "wt")],
                           capture_output=True, check=False)
            subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True, check=False)
    shutil.rmtree(home, ignore_errors=True)


@contextmanager
def _worktrees_locked(repo: Path) -> Iterator[None]:
    """Hold the repository's worktree lock (see the module docstring)."""
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--git-common-dir"], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:  # not a repository: the git command itself will say so
        yield
        return
    common = Path(proc.stdout.strip())
    lock = (common if common.is_absolute() else Path(repo) / common) / "torchbot-worktrees.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a read-only repository: no worktree can be added to it anyway
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
