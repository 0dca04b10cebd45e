"""A build-pytorch repository made by `release init` in a tmp dir, pushed to a local bare
`origin` (plain git for the checks, independent of the code under test)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.com",
    "GIT_COMMITTER_NAME": "Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd, *args, check=True) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr}")
    return r.stdout


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
