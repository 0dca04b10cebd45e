"""A build-pytorch repository made by `release init` in a tmp dir, pushed to a local bare
`origin` (plain git for the checks, independent of the code under test)."""

from __future__ import annotations

from pathlib import Path

from tests.support.fixtures_pins import GIT_ENV, git  # noqa: F401  (one git helper for all fixtures)


def refs(repo) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ") for line in out.splitlines())


def with_origin(work: Path, origin: Path) -> Path:
    """Make ``origin`` a bare repository holding every branch of ``work``."""
    git(work.parent, "init", "-q", "--bare", str(origin))
    git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "refs/heads/*:refs/heads/*")
    git(work, "fetch", "-q", "origin")
    return origin
