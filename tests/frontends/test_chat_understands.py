"""Chat (mentions and the console) understands release questions in words: help, pins,
status, and the release commands mapped to the same command layer and the same plan and
Confirm step as the slash commands; what it does not understand is said, with the nearest
command, instead of a hardware non-answer. Hardware questions still go to /variant."""

from __future__ import annotations

import io

import pytest

from bot.engine.answer import Answer
from bot.frontends.chat import Chat, PinsResult, PlanReply
from bot.frontends.console import run
from config.settings import Settings
from release.context import Context
from tests.support import fixtures_builds as fx
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import NEW, PIN_A, build_repo, refs, served, small_catalog_branches


@pytest.fixture
def chat(tmp_path):
    ctx = Context(Settings(repo_path=None, admins=["console"], audit_log=tmp_path / "audit.log",
                           state_db=str(tmp_path / "s.sqlite"), _env_file=None))
    c = Chat(ctx)
    yield c
    c.runner.shutdown()


@pytest.mark.parametrize("text", ["help", "<@U0BOT> help", "what can you do?"])
def test_help_in_words_is_the_help(chat, text):
    assert chat.mention(text).text() == chat.command("torchbot", "help").text()


def test_pins_in_words_are_the_pins_answer(chat):
    r = chat.mention("<@U0BOT> what pin is main on?")
    assert isinstance(r, PinsResult) and r.text() == chat.command("pins", "main").text()
    assert r.text().startswith("main is pinned to nixpkgs fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3")
    assert [b["branch"] for b in r.to_dict()["branches"]] == ["main"]
    r = chat.mention("which nixpkgs is pytorch-2.9-python313 pinned to")
    assert r.text().startswith("pytorch-2.9-python313 is pinned to nixpkgs ")
    assert "No branch nope" in chat.command("pins", "nope").text()


def test_status_in_words_is_the_status(chat):
    r = chat.mention("how are the builds going?")
    assert "jobs: 0 running, 0 queued" in r.text() and "No variant" not in r.text()


def test_what_is_not_understood_names_the_nearest_command(chat):
    r = chat.mention("bmup main")
    assert r.ok is False
    assert r.text() == ("I did not understand “bmup main”. The nearest command is "
                        "`/bump <branch|all> [rev] [--with-companions]`; `/torchbot help` lists them all.")
    r = chat.mention("good morning everyone")
    assert "I did not understand" in r.text() and "/torchbot help" in r.text()
    assert "No variant" not in r.text() and "Which NVIDIA GPU" not in r.text()


def test_several_branches_for_a_version_are_offered_as_commands(chat):
    r = chat.mention("release pytorch 2.9")
    assert r.ok is False and "which one?" in r.text() and "`/publish pytorch-2.9-python313`" in r.text()


@pytest.mark.parametrize("text", ["H100 with Graviton3", "DGX Spark", "which variant for a p5.48xlarge?",
                                  "build for an H100"])
def test_hardware_questions_still_go_to_variant(chat, text):
    r = chat.mention(text)
    assert isinstance(r, Answer) and r.text() == chat.command("variant", text).text()


def test_release_commands_in_words_make_the_same_plan_and_confirm(tmp_path):
    """`build BRANCH` in words is /build BRANCH: the same plan, waiting for the same Confirm."""
    work = fx.make_repo(tmp_path)
    ctx = fx.context(tmp_path, repo_path=work, admins=["console"], audit_log=tmp_path / "audit.log",
                     build_command="echo ok > result-{package}")
    chat = Chat(ctx)
    try:
        worded = chat.mention(f"please build {fx.BRANCH}")
        slashed = chat.command("build", fx.BRANCH)
        assert isinstance(worded, PlanReply) and isinstance(slashed, PlanReply)
        assert worded.pending.command == "build" and worded.pending.args == [fx.BRANCH]
        assert worded.pending.plan.text() == slashed.pending.plan.text()
        assert chat.cancel(slashed.pending.id, "console").ok
        reply = chat.confirm(worded.pending.id, "console")
        result = reply.wait(120)
        assert "succeeded" in result.text()
        audit = (tmp_path / "audit.log").read_text()
        assert f"plan /build {fx.BRANCH}" in audit and f"confirm /build {fx.BRANCH}" in audit
    finally:
        chat.runner.shutdown()


def test_the_console_reads_words_too(tmp_path):
    ctx = Context(Settings(repo_path=None, audit_log=tmp_path / "audit.log", state_db=str(tmp_path / "s.sqlite"),
                           _env_file=None))
    out = io.StringIO()
    assert run(ctx, io.StringIO("help\nwhat pin is main on?\nbump main\nbmup main\n"), out) == 0
    text = out.getvalue()
    assert "/variant <anything>" in text and "main is pinned to nixpkgs fe5e41d" in text
    assert "only admins" in text  # "bump main" is /bump main: the same permission check
    assert "nearest command is `/bump" in text and "No variant" not in text


def test_bump_in_words_in_the_console_shows_its_diff_before_confirm(tmp_path, monkeypatch):
    """`bump main` typed in the console: /bump main's plan; `diff` prints the unified diff of the
    files it would write (the command layer's Plan.diff, as `bump-pins --diff`); `cancel` leaves
    every ref as it was."""
    work, _origin = build_repo(tmp_path / "repo", small_catalog_branches())
    before = refs(work)
    with FakeNixpkgs() as fake:
        fake.add_rev(PIN_A, "2.8.0", {"cudaPackages_12_8", "cudaPackages_12_9"})
        fake.add_rev(NEW, "2.8.4", {"cudaPackages_12_8", "cudaPackages_12_9"})
        with served(monkeypatch, work, fake, TORCHBOT_NIXPKGS_TARBALL_URL=fake.tarball_url):
            ctx = Context(Settings(admins=["console"], audit_log=tmp_path / "audit.log",
                                   state_db=str(tmp_path / "s.sqlite"), _env_file=None), use_repo=False)
            out = io.StringIO()
            assert run(ctx, io.StringIO(f"bump main to {NEW}\ndiff\ncancel\n"), out) == 0
    text = out.getvalue()
    assert f"Plan for /bump main {NEW}: Bump of main: 1 bumped." in text and f"bumped fe5e41d -> {NEW[:7]}" in text
    assert "'diff' shows the files it would change" in text
    assert "diff main: .flox/pkgs/" in text and f"+    url = \"https://github.com/NixOS/nixpkgs/archive/{NEW}" in text
    assert "Cancelled /bump main" in text and refs(work) == before
