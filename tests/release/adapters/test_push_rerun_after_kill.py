"""A re-run adopts its own push (issue 26, point 2): `release bump-pins --push` and `release branch
create --push` killed (SIGKILL) at several moments around a push to an origin whose pre-receive
hook takes 0.4 s are run again, and the re-run succeeds every time: the remote's commit (the
killed run's own, when its push landed) ends up as the local branch, once, on the old tip."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import NEW, PIN_A, build_repo, git, small_catalog_branches
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]
CUDA = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13_0", "cudaPackages_13_1"}
NEW_BRANCH = "pytorch-2.9-python312"
COMMANDS = {
    "bump": ["release", "bump-pins", "--branch", "main", "--rev", NEW, "--push"],
    "create": ["release", "branch", "create", NEW_BRANCH, "--pytorch", "2.9.1", "--python", "3.12", "--cuda", "12.9",
               "--gpu", "sm75", "--pin", NEW, "--from", "main", "--push"],
}
# (what to wait for, then seconds): the hook has started (pack sent, refs not yet moved), it is
# half way, it has just ended (refs moved on origin, maybe not here); or seconds after the start
MOMENTS = [("hook", 0.0), ("hook", 0.2), ("hook", 0.45), ("start", 0.15), ("start", 1.5)]


@pytest.fixture(params=sorted(COMMANDS))
def nixpkgs(request):
    """NEW holds torch 2.8.4 for the bump (a patch move of main's 2.8.0) and 2.9.1 for the new branch."""
    with FakeNixpkgs() as fake:
        fake.add_rev(PIN_A, "2.8.0", CUDA)
        fake.add_rev(NEW, "2.8.4" if request.param == "bump" else "2.9.1", CUDA)
        fake.channels["nixos-unstable"] = NEW
        yield request.param, fake


def _env(tmp: Path, fake: FakeNixpkgs, work: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    return {**base, "PYTHONPATH": str(ROOT), "TORCHBOT_REPO_PATH": str(work),
            "TORCHBOT_CHANNELS_URL": fake.channels_url, "TORCHBOT_GITHUB_API_URL": fake.api_url,
            "TORCHBOT_NIXPKGS_TARBALL_URL": fake.tarball_url, "TORCHBOT_HTTP_RETRIES": "1",
            "TORCHBOT_LOCAL_BRANCHES": str(tmp / "branches.toml"), "TORCHBOT_CACHE_DIR": "off",
            "TORCHBOT_GIT_AUTHOR_NAME": "torchbot", "TORCHBOT_GIT_AUTHOR_EMAIL": "bot@example.com",
            "XDG_DATA_HOME": str(tmp / "data"), "XDG_STATE_HOME": str(tmp / "state")}


def _run(env, args, cwd) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bot", *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("moment", MOMENTS, ids=[f"{w}+{s}" for w, s in MOMENTS])
def test_a_rerun_after_a_kill_during_the_push_succeeds(tmp_path, nixpkgs, moment):
    command, nixpkgs = nixpkgs
    work, origin = build_repo(tmp_path / "repo", small_catalog_branches())
    started = tmp_path / "hook-started"
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\necho x >> {started}\nsleep 0.4\n")
    hook.chmod(0o755)
    base = git(work, "rev-parse", "main").strip()
    env = _env(tmp_path, nixpkgs, work)
    args = COMMANDS[command]

    first = _run(env, args, tmp_path)
    what, seconds = moment
    if what == "hook":
        wait_for(lambda: started.exists() or first.poll() is not None, "the push to reach the hook", 60)
    time.sleep(seconds)  # the moment of the kill itself (the event it follows was awaited)
    if first.poll() is None:
        os.kill(first.pid, signal.SIGKILL)
    _, err = first.communicate(timeout=30)
    assert first.returncode in (0, -signal.SIGKILL), err

    records = tmp_path / "branches.toml"
    finished = records.exists() and NEW_BRANCH in records.read_text()  # the killed run had recorded its branch
    again = _run(env, args, tmp_path)
    out, err = again.communicate(timeout=300)
    if command == "create" and finished:  # its work was done: a new create of that name is refused
        assert again.returncode == 1 and "already exists" in err, (out, err)
    else:
        assert again.returncode == 0, (out, err, first.returncode, finished)
    branch = "main" if command == "bump" else NEW_BRANCH
    local, remote = git(work, "rev-parse", branch).strip(), git(origin, "rev-parse", branch).strip()
    assert local == remote  # the local ref caught up with the remote (adopted or pushed)
    assert git(origin, "rev-parse", f"{branch}~1").strip() == base  # one commit on the old tip, no second one
    files = git(origin, "ls-tree", "-r", "--name-only", branch, ".flox/pkgs").split()
    assert files and all(NEW in git(origin, "show", f"{branch}:{f}") for f in files)
    if command == "create":
        assert NEW_BRANCH in (tmp_path / "branches.toml").read_text()  # the record is there too
