"""``/bump`` reaches one pin group of a multi-pin branch, as ``release bump-pins`` does (issue 28: the
manifest's hint names ``--cuda`` and ``--from-pin``, so the command takes them): without either the
refusal says to choose one; with ``--cuda 13.1`` (or ``--from-pin``) the plan moves only that group,
and the confirmed job commits just that, on a repository in the real shapes."""

from __future__ import annotations

import pytest

from bot.frontends.chat import Chat, PlanReply
from config.settings import Settings
from release.context import Context
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git, refs
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, make_pytorch_repo

NEW = "5e5e00005e5e00005e5e00005e5e00005e5e0000"
CUDA = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}
B = "pytorch-2.10-python313"


@pytest.fixture
def chat(tmp_path, monkeypatch):
    with FakeNixpkgs() as fake:
        for pin in (PIN_MAIN, PIN_12_X, PIN_13_0, PIN_13_1, NEW):
            fake.add_rev(pin, "2.9.1", CUDA)
        repo = make_pytorch_repo(tmp_path)
        for key, value in dict(TORCHBOT_CHANNELS_URL=fake.channels_url, TORCHBOT_GITHUB_API_URL=fake.api_url,
                               TORCHBOT_NIXPKGS_TARBALL_URL=fake.tarball_url, TORCHBOT_HTTP_RETRIES="1").items():
            monkeypatch.setenv(key, value)
        ctx = Context(Settings(repo_path=str(repo.path), admins=["console"], audit_log=tmp_path / "audit.log",
                               state_db=str(tmp_path / "s.sqlite"), _env_file=None))
        yield Chat(ctx), repo


def test_bump_without_a_pin_group_plans_every_group_of_the_branch_with_its_own_outcome(chat):
    bot, repo = chat
    before = refs(repo.path)
    r = bot.command("bump", f"{B} {NEW}")
    assert isinstance(r, PlanReply), r.text()
    lines = [x for x in r.text().splitlines() if x.strip().startswith(B + " (CUDA")]
    assert len(lines) == 3 and all(f"-> {NEW[:7]}" in x for x in lines), r.text()
    assert "nothing leaves this machine" in r.text()
    assert refs(repo.path) == before  # a plan: nothing moved until Confirm


@pytest.mark.parametrize("flag", [["--cuda", "13.1"], [f"--from-pin={PIN_13_1[:7]}"]])
def test_bump_moves_the_one_pin_group_it_names(chat, flag):
    bot, repo = chat
    plan = bot.command("bump", " ".join([B, NEW, *flag]))
    assert isinstance(plan, PlanReply), plan.text()
    assert PIN_13_1[:7] in plan.text() and NEW[:7] in plan.text()
    done = bot.confirm(plan.pending.id, "console").wait(120)
    assert done.ok, done.text()
    recipes = git(repo.path, "grep", "-l", NEW, B, "--", ".flox/pkgs").split()
    assert recipes and all("cuda13_1" in r for r in recipes)  # only the CUDA 13.1 group moved
    assert git(repo.path, "grep", "-c", PIN_13_0, B, "--", ".flox/pkgs")  # the 13.0 group stays
