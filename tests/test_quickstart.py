"""The README's quick starts work as written (issue 28): every command of the ``sh`` blocks of the
maintainer's and the operator's quick start runs, in order, in one shell, on fixture repositories
in the real shapes (tests/support/fixtures_realshapes.py) named as the README names them
(``build-pytorch``, ``build-torchvision`` in the working directory), and each must exit 0.

What the README leaves to the reader's machine comes from the environment this test sets: nixpkgs
and its channels are the loopback stand-in (tests/support/fakes_nixpkgs.py), ``flox build`` and
``flox publish`` are ``true`` (the build leaves the result link the build checks), and torchbot's
files go to a temporary home. Commands that cannot run here are listed in ``NOT_RUN`` with the
test that covers them instead."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, make_repos

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SECTIONS = ("A maintainer's quick start", "An operator's quick start")
# the channel head the bumps move to: torch 2.9.1 and every CUDA set the fixture recipes use
NEW = "9f9f00009f9f00009f9f00009f9f00009f9f0000"
CUDA = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}
# command prefix -> why it is not run here, and what runs it instead
NOT_RUN = {
    "torchbot serve": ("runs until stopped; tests/frontends/slack/test_bot_slack_http.py and the Socket Mode "
                       "tests start it"),
    "docker ": ("needs a container engine; image-check builds and runs the image (tests/test_image.py checks "
                "the Dockerfile's shape)"),
}


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"the README has no section '{title}'"
    return m.group(1)


def commands(title: str) -> list[str]:
    """The section's ``sh`` blocks as the shell reads them: one command per line, ``\\`` joined."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", section(title), re.S):
        out += [c.strip() for c in block.replace("\\\n", " ").splitlines() if c.strip()]
    return out


def skipped(command: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if command.startswith(prefix)), None)


def script(cmds: list[str]) -> str:
    """One shell runs them all (the exports carry over); each failure names its command."""
    lines = ["set -u -o pipefail"]
    for i, cmd in enumerate(cmds):
        if skipped(cmd):
            continue
        lines.append(f"echo {shlex.quote(f'::: {i} {cmd}')}")
        lines.append(f"{cmd} || {{ echo {shlex.quote(f'FAILED: {cmd}')} >&2; exit 1; }}")
    return "\n".join(lines) + "\n"


def test_the_quick_starts_have_the_commands_of_a_week():
    maint, ops = commands(SECTIONS[0]), commands(SECTIONS[1])
    for verb in ("torchbot catalog", "torchbot ask", "release bump-pins", "release build", "release publish"):
        assert any(verb in c for c in maint), verb
    assert any("release workflow" in c for c in ops) and any(c.startswith("torchbot serve") for c in ops)
    # what is not run is the exception, each with its reason
    assert sum(bool(skipped(c)) for c in maint + ops) <= 3


@pytest.fixture
def nixpkgs():
    with FakeNixpkgs() as fake:
        fake.add_rev(PIN_MAIN, "2.8.0", CUDA)
        for pin in (PIN_12_X, PIN_13_0, PIN_13_1):
            fake.add_rev(pin, "2.9.1", CUDA)
        fake.add_rev(NEW, "2.9.1", CUDA)
        fake.channels["nixos-unstable"] = NEW
        yield fake


def environment(tmp_path: Path, fake: FakeNixpkgs) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHBOT_", "SLACK_"))}
    bin_dir = tmp_path / "bin"  # `torchbot` is this interpreter's console script, first on PATH
    bin_dir.mkdir()
    exe = bin_dir / "torchbot"
    exe.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m bot \"$@\"\n")
    exe.chmod(0o755)
    home = tmp_path / "home"
    env.update(
        PATH=f"{bin_dir}:{env.get('PATH', '')}", HOME=str(home),
        XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"),
        XDG_CONFIG_HOME=str(home / "config"),
        TORCHBOT_CHANNELS_URL=fake.channels_url, TORCHBOT_GITHUB_API_URL=fake.api_url,
        TORCHBOT_NIXPKGS_TARBALL_URL=fake.tarball_url, TORCHBOT_HTTP_RETRIES="1",
        TORCHBOT_BUILD_COMMAND="true", TORCHBOT_BUILD_RESULT_LINK="README.md", TORCHBOT_PUBLISH_COMMAND="true",
        TORCHBOT_ADMINS="U0123ABCD",
    )
    return env


@pytest.mark.parametrize("clones", ["every branch local", "plain git clones"])
def test_every_quick_start_command_succeeds_as_written(tmp_path, nixpkgs, clones):
    work = tmp_path / "src"
    work.mkdir()
    pt, tv = make_repos(work)
    assert (pt.path, tv.path) == (work / "build-pytorch", work / "build-torchvision")
    if clones == "plain git clones":  # what a newcomer has: one local branch, the rest on origin
        work = tmp_path / "fresh"
        work.mkdir()
        for fx in (pt, tv):
            subprocess.run(["git", "clone", "-q", "-b", "main", str(fx.origin), str(work / fx.path.name)], check=True)
            fx.path = work / fx.path.name
    cmds = commands(SECTIONS[0]) + commands(SECTIONS[1])
    r = subprocess.run(["bash", "-c", script(cmds)], cwd=work, env=environment(tmp_path, nixpkgs),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900, check=False)
    (tmp_path / "out.txt").write_text(r.stdout + "\n--- stderr\n" + r.stderr)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    ran = [int(m) for m in re.findall(r"^::: (\d+) ", r.stdout, re.M)]
    assert ran == [i for i, c in enumerate(cmds) if not skipped(c)]
    # and they did what the README says: the bumps moved the pins, the builds and the publish happened
    assert NEW in git(pt.path, "show", "pytorch-2.9-python311:README.md")
    pushed = git(pt.origin, "show", "pytorch-2.9-python311:README.md")
    assert NEW in pushed  # the push sent the bump (the workflow commit came after it)
    files = git(pt.path, "ls-tree", "-r", "--name-only", "pytorch-2.9-python311")
    assert ".github/workflows/torchbot-build.yml" in files
    assert "4 succeeded" in r.stdout and "4 published" in r.stdout
    assert git(tv.path, "grep", "-l", NEW, "pytorch-2.9", "--", ".flox/pkgs")  # the companion moved with it
