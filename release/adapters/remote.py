"""What the remote has: the GitHub backend builds only commits GitHub has, and publishing
takes what is on the branch there (``git ls-remote`` of the configured remote, which is the
GitHub repository the workflow runs in).

May import: config.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from config.errors import ExternalError
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


def conflicts(repo: Path, remote: str, branch: str, sha: str) -> bool | None:
    """Whether ``sha`` no longer merges into ``remote``'s ``branch`` as it is now (a conflict),
    by ``git merge-tree``; None when git cannot say (the remote unread, the commit missing)."""
    try:
        base = remote_head(repo, remote, branch)
        if base is None:
            return None
        fetch_commit(repo, remote, branch, base)
    except ExternalError:
        return None
    if not has_commit(repo, sha):
        return None
    proc = subprocess.run(["git", "-C", str(repo), "merge-tree", "--write-tree", base, sha],
                          check=False, capture_output=True)
    return {0: False, 1: True}.get(proc.returncode)


def local_commit(repo: Path, branch: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                           f"refs/heads/{branch}^{{commit}}"], check=False, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


_URLS: dict[tuple[str, str], tuple[object, str]] = {}


def remote_url(repo: Path, remote: str) -> str:
    """The URL of ``remote`` in the repository at ``repo``; "" when it has none (kept while the
    repository's ``.git/config`` is unchanged: a running torchbot asks git once)."""
    config = Path(repo) / ".git" / "config"
    try:
        st = config.stat()
        stamp: object = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    hit = _URLS.get((str(repo), remote))
    if stamp is not None and hit is not None and hit[0] == stamp:
        return hit[1]
    proc = subprocess.run(["git", "-C", str(repo), "remote", "get-url", remote], check=False, capture_output=True,
                          text=True)
    url = proc.stdout.strip() if proc.returncode == 0 else ""
    if stamp is not None:
        _URLS[(str(repo), remote)] = (stamp, url)
    return url


def same_tree(repo: Path, a: str, b: str, path: str) -> bool:
    """Whether commits ``a`` and ``b`` hold the same tree at ``path`` (e.g. the same recipes)."""
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--quiet", f"{a}:{path}", f"{b}:{path}"],
                          check=False, capture_output=True, text=True)
    trees = proc.stdout.split()
    return proc.returncode == 0 and len(trees) == 2 and trees[0] == trees[1]


def track_remote_branch(repo: Path, remote: str, branch: str) -> None:
    """``<remote>/<branch>`` brought to what the remote has now (one ref fetched)."""
    run_git(repo, "fetch", "--quiet", "--refmap=", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")


def fetch_remote(repo: Path, remote: str) -> str | None:
    """``git fetch --prune <remote>``; None, or why it did not work (the refs as last fetched stay)."""
    proc = subprocess.run(["git", "-C", str(repo), "fetch", "--quiet", "--prune", remote], check=False,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        lines = (proc.stderr or "").strip().splitlines()
        return lines[-1] if lines else f"git fetch {remote} failed"
    return None
