"""What the remote has: the GitHub backend builds only commits GitHub has, and publishing
takes what is on the branch there (``git ls-remote`` of the configured remote, which is the
GitHub repository the workflow runs in).

May import: config.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from release.adapters.git import run_git

_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*)*$")


def valid_branch(name: str) -> bool:
    """A branch name torchbot passes to git (``bump/main-abc1234`` included)."""
    return bool(_BRANCH.match(name)) and ".." not in name and not name.endswith(".lock")


def remote_head(repo: Path, remote: str, branch: str) -> str | None:
    """The commit ``branch`` names on ``remote`` now (``git ls-remote``), None when the remote
    has no such branch. Raises ExternalError when the remote cannot be read."""
    out = run_git(repo, "ls-remote", "--heads", remote, f"refs/heads/{branch}")
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == f"refs/heads/{branch}":
            return sha.strip()
    return None


def has_commit(repo: Path, sha: str) -> bool:
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"],
                          check=False, capture_output=True)
    return proc.returncode == 0


def fetch_commit(repo: Path, remote: str, branch: str, sha: str) -> None:
    """Make ``sha`` (the remote's head of ``branch``) readable here: fetched when missing, into
    the remote-tracking ref; a pull request's ``bump/`` branch into ``refs/torchbot/`` instead, so
    it never shows up among the branches release commands see."""
    if has_commit(repo, sha):
        return
    dest = f"refs/torchbot/{remote}/{branch}" if branch.startswith("bump/") else f"refs/remotes/{remote}/{branch}"
    run_git(repo, "fetch", "--quiet", "--refmap=", remote, f"+refs/heads/{branch}:{dest}")  # only dest


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    proc = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer],
                          check=False, capture_output=True)
    return proc.returncode == 0


def local_commit(repo: Path, branch: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                           f"refs/heads/{branch}^{{commit}}"], check=False, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


_GITHUB_URL = re.compile(r"github\.com[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def github_name(repo: Path, remote: str) -> str | None:
    """``owner/name`` of the GitHub repository ``remote``'s URL names (None: not on github.com)."""
    proc = subprocess.run(["git", "-C", str(repo), "remote", "get-url", remote], capture_output=True, text=True,
                          check=False)
    m = _GITHUB_URL.search(proc.stdout.strip()) if proc.returncode == 0 else None
    return m[1] if m else None
