"""@torchbot in Slack understands release questions in words (the same dispatcher as the
console): help, pins, status, the release commands (with the slash commands' permission
check), and says what it did not understand with the nearest command; hardware questions are
still answered. Real HTTP between the fake Slack and the bot."""

from __future__ import annotations

import json

import pytest

from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot, mention_body, wait_until


@pytest.fixture
def bot(tmp_path):
    with FakeSlack() as slack:
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        b = SlackBot(tmp_path, slack, repo_path=work)
        yield b
        b.close()


def ask(bot: SlackBot, n: int, text: str) -> str:
    """Mention the bot in C1; the text of its thread reply."""
    body = mention_body(f"EvU{n:03d}", text, ts=bot.slack.user_message("C1", text))
    assert bot.deliverer.deliver(body) == [(0, 200)]

    def reply():
        return [b for p, b in list(bot.slack.posts) if p == "/api/chat.postMessage"
                and b.get("thread_ts") == body["event"]["ts"]]

    wait_until(reply, what=f"the reply to {text!r}")
    return json.dumps(reply()[0])


def test_mentions_in_words(bot):
    assert "/variant" in ask(bot, 1, "<@UBOT> help") and "No variant" not in ask(bot, 2, "<@UBOT> help")
    assert "main is pinned to nixpkgs fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3" in ask(bot, 3,
                                                                                      "<@UBOT> what pin is main on?")
    assert "jobs: 0 running" in ask(bot, 4, "<@UBOT> how are the builds going?")
    assert "only admins may run it" in ask(bot, 5, f"<@UBOT> build {fx.BRANCH}")  # /build's own check
    text = ask(bot, 6, "<@UBOT> bmup main")
    assert "I did not understand" in text and "/bump &lt;branch|all" in text and "Which NVIDIA GPU" not in text
    assert "-sm90-avx2" in ask(bot, 7, "<@UBOT> which variant for a p5.48xlarge?")
