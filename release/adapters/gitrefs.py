"""Branches as `catalog` sees them: the local ones, plus the remote-tracking ones of the
configured remote that have no local branch of that name (a fresh clone has only
``origin/*``). Release commands read from either and make the local branch they need from
the remote-tracking one before they commit (``make_local``), so a fresh clone works like a
clone whose branches were all checked out once.

May import: config.
"""

from __future__ import annotations

import subprocess

from config.errors import ExternalError

ZERO = "0" * 40


def _refs(repo, *patterns: str) -> list[tuple[str, str]]:
    out = repo.git.for_each_ref("--format=%(refname) %(objectname) %(objecttype)", *patterns)
    rows = []
    for line in out.splitlines():
        ref, sha, kind = line.split(" ")
        if kind == "commit":
            rows.append((ref, sha))
    return rows


def all_branches(repo, remote: str = "origin", *, prefer_remote: bool = False) -> dict[str, str]:
    """Branch name -> tip SHA: every local branch, and every ``refs/remotes/<remote>/X`` with no
    local branch X (``HEAD`` left out). ``prefer_remote``: the remote-tracking tip wherever there
    is one (what a pull request or a push builds on), the local one only for local-only branches."""
    out = {ref[len("refs/heads/"):]: sha for ref, sha in _refs(repo, "refs/heads/")}
    prefix = f"refs/remotes/{remote}/"
    for ref, sha in _refs(repo, prefix):
        name = ref[len(prefix):]
        if name and name != "HEAD":
            if prefer_remote:
                out[name] = sha
            else:
                out.setdefault(name, sha)
    return out


def fetch(repo, remote: str = "origin") -> str | None:
    """``git fetch <remote>`` (best effort); None, or why it did not work (the refs this clone has
    are then used as they are)."""
    r = subprocess.run(["git", f"--git-dir={repo.git_dir}", "fetch", "--quiet", "--prune", remote],
                       check=False, capture_output=True, text=True, timeout=600)
    if r.returncode:
        lines = (r.stderr or "").strip().splitlines()
        return lines[-1] if lines else f"git fetch {remote} failed"
    return None


def remote_only(repo, names, remote: str = "origin") -> set[str]:
    """Those of ``names`` that have no local branch (they are read from ``<remote>/<name>``)."""
    local = {ref[len("refs/heads/"):] for ref, _ in _refs(repo, "refs/heads/")}
    return {n for n in names if n not in local}


def make_local(repo, tips: dict[str, str], remote: str = "origin") -> list[str]:
    """Create local branch X at ``tips[X]`` (its remote-tracking tip) tracking ``<remote>/X``, for
    each X that has no local branch yet; a branch created meanwhile is left alone (the caller's
    compare-and-swap then sees it moved). Returns the names created."""
    made = []
    gd = repo.git_dir
    for name in sorted(remote_only(repo, tips, remote)):
        r = subprocess.run(["git", f"--git-dir={gd}", "update-ref", f"refs/heads/{name}", tips[name], ZERO],
                           check=False, capture_output=True, text=True)
        if r.returncode:
            raise ExternalError(f"Could not create the local branch '{name}' from {remote}/{name}: "
                                f"{(r.stderr or '').strip().splitlines()[0] if r.stderr.strip() else 'git failed'}.")
        for key, value in ((f"branch.{name}.remote", remote), (f"branch.{name}.merge", f"refs/heads/{name}")):
            subprocess.run(["git", f"--git-dir={gd}", "config", key, value], check=False, capture_output=True)
        made.append(name)
    return made
