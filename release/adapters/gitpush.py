"""Pushes that a kill cannot leave half-known (part of the git adapter).

``push`` runs ``git push`` as a child that dies with torchbot (``PR_SET_PDEATHSIG``, Linux), so
a killed torchbot leaves no push running on its own. A push whose pack reached the remote
before the kill may still land (the remote finishes what it received), so the next run cannot
tell from its local refs whether its work is on the remote: ``push_or_adopt`` looks. A remote
tip whose parent is the commit the run builds on and whose tree is the one the run made is the
earlier run's own push: it is fetched and adopted (its sha used for the local ref and the
records) instead of refused as "the remote moved". May import: config.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from config.errors import ExternalError

PR_SET_PDEATHSIG = 1


def _dies_with(parent: int):
    def preexec() -> None:  # in the child, before exec
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # torchbot died before the line above: do not push
            os._exit(1)

    return preexec


def _where(repo) -> str:
    return str(repo.working_tree_dir or repo.git_dir)


def git(repo, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``git args`` in ``repo`` as a child that dies with torchbot."""
    return subprocess.run(["git", *args], cwd=_where(repo), capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, timeout=timeout, preexec_fn=_dies_with(os.getpid()))


def first_line(text: str) -> str:
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line and not line.startswith(("To ", "Done")):
            return line
    return (text or "").strip()


def push(repo, remote: str, refspecs: list[str]) -> None:
    """Atomic push of explicit ``sha:refs/heads/x`` specs; raises ExternalError if rejected."""
    proc = git(repo, "push", "--atomic", "--porcelain", remote, *refspecs)
    if proc.returncode != 0:
        detail = first_line(proc.stderr) or first_line(proc.stdout)
        raise ExternalError(
            f"The push to '{remote}' was rejected ({detail}); the remote moved or refused it. "
            "Local branches are as they were before the run."
        )


def remote_tip(repo, remote: str, branch: str) -> str | None:
    """The remote's tip of ``branch`` (asked of the remote, not the tracking ref), or None."""
    proc = git(repo, "ls-remote", remote, f"refs/heads/{branch}", timeout=120)
    if proc.returncode != 0:
        raise ExternalError(f"Cannot read '{remote}': {first_line(proc.stderr)}")
    for line in proc.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return None


def _rev(repo, spec: str) -> str | None:
    proc = git(repo, "rev-parse", "--verify", "--quiet", spec)
    return proc.stdout.strip() if proc.returncode == 0 else None


def same_work(repo, remote: str, branch: str, tip: str, parent: str | None, commit: str) -> bool:
    """Whether the remote's ``tip`` of ``branch`` is ``commit``'s work: the same tree on the same
    parent (fetched first when it is not here)."""
    if tip == commit:
        return True
    if _rev(repo, f"{tip}^{{commit}}") is None:
        git(repo, "fetch", "--quiet", "--no-write-fetch-head", "--refmap=", remote, f"refs/heads/{branch}", timeout=600)
    if _rev(repo, f"{tip}^{{tree}}") != _rev(repo, f"{commit}^{{tree}}"):
        return False
    return (_rev(repo, f"{tip}^") if parent else None) == parent


def adopt(repo, remote: str, tips: dict[str, tuple[str | None, str]]) -> dict[str, str]:
    """``tips``: branch -> (parent, commit) this run made. Returns branch -> the remote's tip for
    the branches the remote already holds this work on (an earlier run's push)."""
    adopted = {}
    for branch, (parent, commit) in tips.items():
        tip = remote_tip(repo, remote, branch)
        if tip is not None and tip != parent and same_work(repo, remote, branch, tip, parent, commit):
            adopted[branch] = tip
    return adopted


def push_or_adopt(repo, remote: str, tips: dict[str, tuple[str | None, str]]) -> dict[str, str]:
    """Push each branch's commit unless the remote holds the same work already (adopted);
    returns branch -> the sha now on the remote. A rejected push is looked at once more (an
    earlier run's push may have landed meanwhile) before it is reported."""
    final = {b: c for b, (_, c) in tips.items()}
    final.update(adopt(repo, remote, tips))
    try:
        push(repo, remote, [f"{final[b]}:refs/heads/{b}" for b in final])
    except ExternalError:
        again = adopt(repo, remote, {b: (p, final[b]) for b, (p, _) in tips.items()})
        if set(again) != set(final):
            raise
        final.update(again)
    return final
