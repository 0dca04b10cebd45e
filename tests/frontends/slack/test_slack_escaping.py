"""Everything a user typed is escaped the way Slack asks (``&``, ``<``, ``>`` as ``&amp;``,
``&lt;``, ``&gt;``) wherever it is echoed: acks (a bounded excerpt), plans, the job's
channel message, its thread reply, the Confirm answer, error messages, mentions, unknown
buttons and file titles. Nothing a user typed can ping ``@channel`` through torchbot."""

from __future__ import annotations

import json
import threading

import pytest
from slack_sdk import WebClient

from bot.engine.answer import Answer
from bot.frontends.jobs import Job
from bot.frontends.slack.blocks import render
from bot.frontends.slack.jobs import JobReport
from bot.frontends.slack.text import escape, excerpt, from_slack, quoted
from config.results import MessageResult
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot, click_body, mention_body, plan_id, slash_body

PING = "<!channel> & <@U0BOSS>"
ESCAPED = "&lt;!channel&gt; &amp; &lt;@U0BOSS&gt;"


def raw_markup(obj) -> list[str]:
    """The pieces of user markup that got through unescaped."""
    text = json.dumps(obj)
    return [m for m in ("<!channel>", "<@U0BOSS>", "& <") if m in text]


def test_the_rule_and_the_excerpt():
    assert escape("a <b> & c") == "a &lt;b&gt; &amp; c"
    assert from_slack("&lt;!channel&gt; &amp;lt;") == "<!channel> &lt;"  # Slack's entities, decoded once
    assert excerpt("x" * 500) == "x" * 199 + "…" and len(excerpt("y " * 300)) == 200
    assert quoted("<" * 300).endswith("…") and "<" not in quoted("<" * 300)
    assert quoted("&" * 250).count("&amp;") == 199  # cut before escaping: no entity is cut in half


@pytest.fixture
def bot(tmp_path):
    with FakeSlack() as slack:
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        bot = SlackBot(tmp_path, slack, repo_path=work)
        yield slack, bot
        bot.close()


def test_a_huge_build_command_with_markup_is_echoed_escaped_everywhere(bot):
    slack, bot = bot
    text = f"{fx.BRANCH} pytorch-* {PING} " + "z" * 100_000
    status, ack = bot.deliverer.send(slash_body(slack, "/build", text, 1))
    assert status == 200
    ack_text = json.loads(ack)["text"]
    assert len(ack_text) < 300 and ack_text.endswith("…")  # a bounded excerpt, not 100 KB
    assert ESCAPED in ack_text and not raw_markup(ack)

    posts = slack.wait_for(lambda p, b: p == "/response/1" and "confirm_plan" in json.dumps(b))
    plan = next(b for p, b in posts if p == "/response/1")
    assert not raw_markup(plan) and ESCAPED in plan["blocks"][0]["text"]["text"]
    assert len(json.dumps(plan)) < 20_000

    assert bot.deliverer.send(click_body(slack, "confirm_plan", plan_id(plan), 2))[0] == 200
    slack.wait_for(lambda p, b: b.get("thread_ts") and "Build: 1 succeeded" in b.get("text", ""), 60)
    confirmed = [b for p, b in slack.posts if p == "/response/2"]
    channel = slack.messages("CREL")  # the job's message (edited in place) and its thread reply
    assert confirmed and channel and not raw_markup(confirmed) and not raw_markup(channel)
    assert ESCAPED in confirmed[0]["text"] and ESCAPED in channel[0]["text"]
    assert max(len(m["text"]) for m in channel) < 1000


def test_slack_entities_are_read_once_and_written_once(bot):
    slack, bot = bot
    # Slack sends what the user typed with its entities: the echo shows the same characters again
    status, ack = bot.deliverer.send(slash_body(slack, "/build", f"{fx.BRANCH} &lt;!here&gt;", 1))
    assert status == 200 and "&lt;!here&gt;" in ack and "&amp;lt;" not in ack
    posts = slack.wait_for(lambda p, b: p == "/response/1")
    refusal = next(b for p, b in posts if p == "/response/1")  # no variant matches: an error quoting it
    said = refusal["text"]
    assert "No variant of" in said and "&lt;!here&gt;" in said and "<!here>" not in said


def test_mentions_errors_and_unknown_buttons_echo_escaped(bot):
    slack, bot = bot
    ts = slack.user_message("C1", f"<@UBOT> {PING} H100")
    assert bot.deliverer.deliver(mention_body("EvX1", f"<@UBOT> {PING} H100", ts=ts)) == [(0, 200)]
    posts = slack.wait_for(lambda p, b: p == "/api/chat.postMessage" and b.get("thread_ts") == ts)
    assert not raw_markup([b for p, b in posts if p == "/api/chat.postMessage"])

    assert bot.deliverer.send(slash_body(slack, "/bump", PING, 2, user="UNOBODY"))[0] == 200
    posts = slack.wait_for(lambda p, b: p == "/response/2")
    assert not raw_markup([b for p, b in posts if p == "/response/2"])

    assert bot.deliverer.send(click_body(slack, "<!channel>", "x", 3))[0] == 200
    posts = slack.wait_for(lambda p, b: p == "/response/3")
    reply = next(b for p, b in posts if p == "/response/3")
    assert "no button '&lt;!channel&gt;'" in reply["text"] and not raw_markup(reply)


@pytest.mark.parametrize("result", [
    MessageResult(f"one line with {PING}"),
    MessageResult(f"first line {PING}\n" + "\n".join(f"row {i} {PING}" for i in range(2000))),
])
def test_every_result_renders_escaped(result):
    for can_attach in (False, True):
        out = render(result, can_attach=can_attach)
        assert not raw_markup(out.text) and not raw_markup(out.blocks)
        assert all(len(b["text"]["text"]) <= 3000 for b in out.blocks if b["type"] == "section")
        if out.file:
            assert out.file[1] == result.text()  # a file's content is shown verbatim: kept as typed


def test_answers_render_escaped():
    from bot.frontends.commands import ask
    from config.settings import Settings
    from release.context import Context

    answer = ask(Context(Settings(_env_file=None, repo_path=None), use_repo=False), f"{PING} H100 with Graviton3")
    assert isinstance(answer, Answer)
    out = render(answer)
    assert not raw_markup(out.text) and not raw_markup([b for b in out.blocks if b["type"] != "actions"])


def test_a_job_thread_reply_is_escaped_and_its_file_title_is_plain_text(tmp_path):
    with FakeSlack() as slack:
        client = WebClient(token=slack.token, base_url=slack.url)
        parent = client.chat_postMessage(channel="CREL", text="job")["ts"]
        reporter = JobReport(client, lambda **kw: None, "CREL", "UADMIN")
        reporter.ts = parent
        reporter._ready = threading.Event()
        reporter._ready.set()
        job = Job(f"/build main {PING}", lambda job: None)
        long_text = "\n".join(f"pytorch-python313-cpu-avx2 {PING} line {i}" for i in range(3000))
        job.result = MessageResult(long_text)
        reporter.done(job)
        assert slack.files, "the full list is attached as a file"
        shared = next(iter(slack.files.values()))
        assert shared["title"] == f"/build main {PING}: full list"  # plain text: shown as typed, not as entities
        assert shared["content"] == long_text  # verbatim
        assert not raw_markup([{k: v for k, v in m.items() if k != "files"} for m in slack.messages("CREL")])
