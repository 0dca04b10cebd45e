"""Chat answers release questions in words, from the dashboard's model and the state DB (issue 35):
"why is X held?" (each held group's reason and the command that moves it anyway, or what its last
bump did), "what changed since last week?", "show me the dashboard", "which pin is X on?" (that
branch only). The world: fixture repositories in the real shapes, a nixpkgs and a GitHub stand-in,
a state DB with a held bump, a bump pull request, builds and a publish."""

from __future__ import annotations

import pytest

from bot.frontends.chat import Chat
from bot.frontends.commands import changes, why_held
from release.dashboard.commands import DashboardResult
from tests.support.fixtures_dashboard import HEAD, PR_BRANCH, dashboard_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with dashboard_world(tmp_path_factory.mktemp("chat-release")) as w:
        w.chat = Chat(w.ctx, audit=lambda line: None)
        yield w
        w.chat.runner.shutdown()


def ask(w, text: str):
    return w.chat.mention(f"<@U0TORCHBOT> {text}", user="U0SOMEONE", channel="C0RELEASE")


def test_why_is_main_held_gives_the_reason_and_the_command_that_moves_it(world):
    r = ask(world, "why is main held?")
    first, second = r.text().splitlines()
    assert first.startswith("main (build-pytorch) (CUDA 12.8, CPU, darwin) is held: ")  # the held group named
    assert "it promises PyTorch 2.8.0 but nixpkgs ff66ff6 has torch 2.9.1" in first
    assert f"`/bump main {HEAD} --pytorch 2.9.1`" in first  # the row's own action, as the dashboard offers it
    assert second == "main (build-torchvision) is not held: no bump of it is recorded yet (not run yet)."
    assert "GPU" not in r.text()


def test_why_is_a_torchvision_branch_held_answers_for_that_branch(world):
    r = ask(world, "why is pytorch-2.10 held?")
    assert r.text() == "pytorch-2.10 is not held: no bump of it is recorded yet (not run yet)."


def test_a_branch_with_a_bump_pull_request_is_not_held_and_says_so(world):
    r = ask(world, f"why wasn't {PR_BRANCH} bumped?")
    assert r.text().startswith(f"{PR_BRANCH} is not held: its bump is pull request #1 (2/3 built, 1 failed)")


def test_what_is_held_lists_every_held_branch(world):
    text = ask(world, "what is held?").text()
    assert text.splitlines()[0] == "1 branch(es) held:" and text.splitlines()[1].startswith("- main (build-pytorch)")


def test_what_changed_since_last_week_from_the_record(world):
    r = changes(world.ctx, 7, now=world.now)
    lines = r.text().splitlines()
    assert lines[0] == "Since 2026-02-23 12:00 UTC:"
    held = "- main (build-pytorch) (CUDA 12.8, CPU, darwin): bump held: Refusing to bump 'main'"
    assert any(x.startswith(held) for x in lines), lines
    assert f"- {PR_BRANCH}: bump pull request #1 (2/3 built, 1 failed)." in lines
    assert "- 3 pin group(s) were already at their channel's head." in lines  # the three of pytorch-2.10
    assert r.to_dict()["since"] == "2026-02-23T12:00:00+00:00"
    quiet = changes(world.ctx, 1, now=world.now.replace(month=4)).text()
    assert quiet == "Nothing changed since 2026-04-01 12:00 UTC: no bump ran, no build finished, nothing was published."


def test_what_changed_counts_the_builds_that_finished_and_the_publishes(world):
    from datetime import timedelta

    from release.state import Build, Publish, state_for

    later = world.now + timedelta(days=30)  # a window of its own: the other tests' rows stay out of it
    at = (later - timedelta(days=2)).replace(tzinfo=None)
    with state_for(world.ctx).session() as s:
        s.add_all([Build(package=f"p{i}", branch="bump/elsewhere-feed", state=state, finished=at, commit="e" * 40)
                   for i, state in enumerate(["succeeded", "succeeded", "failed"])])
        s.add(Publish(package="p0", branch="bump/elsewhere-feed", pin="e" * 40, published=at))
    r = changes(world.ctx, 7, now=later)
    assert r.text().splitlines()[1:] == ["- bump/elsewhere-feed: builds finished: 2 succeeded, 1 failed.",
                                         "- bump/elsewhere-feed: 1 variant(s) published."]
    assert r.to_dict()["builds"] == {"bump/elsewhere-feed": {"succeeded": 2, "failed": 1}}


def test_what_changed_in_chat_is_that_answer(world):
    text = ask(world, "what changed since last week?").text()
    assert text.startswith(("Since ", "Nothing changed since ")) and "GPU" not in text


def test_show_me_the_dashboard(world):
    r = ask(world, "show me the dashboard")
    assert isinstance(r, DashboardResult)
    assert r.text().splitlines()[0].startswith("8 branches in 2 repositories: ")
    # the dashboard's own list: drift, the held bump, failed builds on main and at the PR's head, ...
    assert f"{len(r.model.needs)} thing(s) need a human." in r.text().splitlines()[0] and len(r.model.needs) == 8


def test_which_pin_is_pytorch_2_9_on_names_that_branch_only(world):
    r = ask(world, "which pin is pytorch-2.9 on?")
    rows = [b["branch"] for b in r.to_dict()["branches"]]
    assert rows == ["pytorch-2.9"]
    assert r.text().splitlines()[0].startswith("pytorch-2.9 is pinned to nixpkgs ")


def test_the_slash_commands_say_the_same(world):
    said = world.chat.command("torchbot", "why-held pytorch-2.10").text()
    assert said == why_held(world.ctx, ["pytorch-2.10"]).text()
    bad = world.chat.command("torchbot", "changes lots")
    assert not bad.ok and bad.text().startswith("Usage: /torchbot changes [days]")
    assert world.chat.command("torchbot", "why-held nope").text() == "No branch nope on the dashboard."


def test_a_hardware_question_in_release_words_is_still_a_hardware_question(world):
    text = ask(world, "last week I bought an RTX 4090, which variant?").text()
    assert text.startswith("Use ") and "sm89" in text.split("\n")[0]
