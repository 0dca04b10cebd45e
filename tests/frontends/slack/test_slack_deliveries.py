"""One answer per Slack delivery, over signed HTTP and Socket Mode, and across a restart.

Slack re-sends an event when it did not see the ack in time (here: the fakes lose acks on
their way back, and Slack retries with X-Slack-Retry-Num / X-Slack-Retry-Reason, or
``retry_attempt`` in Socket Mode); a proxy may repeat a slash command or a click. Each is
answered once, and a retry reaching a restarted bot (a new app on the same state DB) is not
answered again."""

from __future__ import annotations

import json
import time

import pytest

from bot.frontends.slack.app import create_app
from bot.frontends.slack.socket_mode import SocketHandler
from release.context import Context
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fakes_socket_mode import FakeSocketMode
from tests.support.fixtures_postgres import postgres  # noqa: F401  (the fixture)
from tests.support.fixtures_slackbot import (
    SlackBot,
    click_body,
    mention_body,
    plan_id,
    slash_body,
    trigger_id,
    wait_until,
)


def replies(slack: FakeSlack, channel: str = "C1") -> list[dict]:
    return [b for p, b in list(slack.posts) if p == "/api/chat.postMessage" and b.get("channel") == channel]


def mention(slack: FakeSlack, event_id: str, text: str) -> dict:
    """A mention posted in C1 and the event Slack delivers for it."""
    return mention_body(event_id, text, ts=slack.user_message("C1", text))


@pytest.fixture
def world(tmp_path):
    with FakeSlack() as slack:
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        bots: list[SlackBot] = []

        def start() -> SlackBot:
            bots.append(SlackBot(tmp_path, slack, repo_path=work))
            return bots[-1]

        yield slack, start
        for bot in bots:
            bot.close()


def test_a_mention_slack_retries_twice_gets_one_thread_reply(world):
    slack, start = world
    bot = start()
    body = mention(slack, "Ev001", "<@UBOT> which variant for a p5.48xlarge?")
    made = bot.deliverer.deliver(body, lose_acks=2)
    assert made == [(0, 200), (1, 200), (2, 200)]  # Slack saw no ack twice and retried twice
    wait_until(lambda: len(bot.deliveries.repeats) == 2, what="both retries recognised")
    wait_until(lambda: replies(slack), what="the thread reply")
    assert len(replies(slack)) == 1
    assert "-sm90-avx2" in json.dumps(replies(slack)[0]) and replies(slack)[0]["thread_ts"] == body["event"]["ts"]
    assert [retry for _, retry in bot.deliveries.repeats] == ["retry 1 (http_timeout)", "retry 2 (http_timeout)"]


def test_a_retry_reaching_a_restarted_bot_is_not_answered_again(world):
    slack, start = world
    first = start()
    body = mention(slack, "Ev002", "<@UBOT> DGX Spark")
    assert first.deliverer.deliver(body) == [(0, 200)]
    wait_until(lambda: replies(slack), what="the first answer")
    first.close()  # the bot stops; Slack, not having seen that ack, retries at the new one

    second = start()
    assert second.deliverer.send(body, retry=1, reason="http_timeout")[0] == 200
    wait_until(lambda: second.deliveries.repeats, what="the retry recognised from the state DB")
    assert second.deliveries.repeats == [("event:Ev002", "retry 1 (http_timeout)")]
    assert len(replies(slack)) == 1

    # a different event with the same words is a new question, and is answered
    assert second.deliverer.deliver(mention(slack, "Ev003", "<@UBOT> DGX Spark")) == [(0, 200)]
    wait_until(lambda: len(replies(slack)) == 2, what="the answer to a new event")


def test_a_command_and_a_click_sent_twice_are_answered_once(world):
    slack, start = world
    bot = start()
    trigger = trigger_id()
    body = slash_body(slack, "/build", fx.BRANCH, 1, trigger=trigger)
    for _ in range(2):  # the same delivery twice (a repeating proxy, a re-sent envelope)
        status, ack = bot.deliverer.send(body)
        assert status == 200 and "Working on /build" in ack
    wait_until(lambda: bot.deliveries.repeats == [(f"command:{trigger}", "")], what="the repeat recognised")
    posts = slack.wait_for(lambda p, b: p == "/response/1" and "confirm_plan" in json.dumps(b))
    assert len([1 for p, _ in posts if p == "/response/1"]) == 1
    audit = (bot.app._torchbot_chat.ctx.settings.audit_log).read_text()
    assert audit.count(f"plan /build {fx.BRANCH}") == 1

    pid = plan_id(next(b for p, b in posts if p == "/response/1"))
    click = click_body(slack, "confirm_plan", pid, 2)
    assert bot.deliverer.send(click)[0] == 200
    assert bot.deliverer.send(click)[0] == 200
    wait_until(lambda: len(bot.deliveries.repeats) == 2, what="the repeated click recognised")
    slack.wait_for(lambda p, b: b.get("thread_ts") and "Build: 1 succeeded" in b.get("text", ""), 60)
    answers = [b["text"] for p, b in slack.posts if p == "/response/2"]
    assert len(answers) == 1 and answers[0].startswith(f"Confirmed /build {fx.BRANCH}")  # no "already confirmed"
    assert len([m for m in slack.messages("CREL") if not m.get("thread_ts")]) == 1  # one job, one message

    # a second, real click on the same button (a new trigger) is a click, refused by the plan's own claim
    assert bot.deliverer.send(click_body(slack, "confirm_plan", pid, 3))[0] == 200
    slack.wait_for(lambda p, b: p == "/response/3" and "already confirmed" in b.get("text", ""))


def socket_bot(tmp_path, api: FakeSlack) -> tuple:
    settings = fx.settings(tmp_path, slack_bot_token=api.token, slack_app_token=api.app_token,
                           slack_api_url=api.url)
    app = create_app(Context(settings, use_repo=False))
    handler = SocketHandler(app, api.app_token, 1.0)
    handler.connect()
    assert handler.wait_hello(20)
    return app, handler


def test_socket_mode_retries_and_a_restart_are_answered_once(tmp_path):
    with FakeSlack() as api, FakeSocketMode(api) as sm:
        app, handler = socket_bot(tmp_path, api)
        try:
            body = mention(api, "EvS01", "<@UBOT> H100 with Graviton3")
            made = sm.deliver("events_api", body, lose_acks=2)
            assert made == [(0, True), (1, True), (2, True)]
            wait_until(lambda: len(app._torchbot_deliveries.repeats) == 2, what="both retries recognised")
            assert [r for _, r in app._torchbot_deliveries.repeats] == ["retry 1 (timeout)", "retry 2 (timeout)"]
            wait_until(lambda: replies(api), what="the thread reply")
            assert len(replies(api)) == 1 and "sm90-armv8_2" in json.dumps(replies(api)[0])
        finally:
            handler.client.close()
            app._torchbot_chat.runner.shutdown()

        t0 = time.monotonic()
        app, handler = socket_bot(tmp_path, api)  # restarted on the same state DB
        try:
            conn = sm.wait_connection(after=t0)
            sm.request("events_api", body, conn=conn, retry_attempt=3, retry_reason="timeout")
            wait_until(lambda: app._torchbot_deliveries.repeats, what="the retry recognised from the state DB")
            assert app._torchbot_deliveries.repeats == [("event:EvS01", "retry 3 (timeout)")]
            assert len(replies(api)) == 1
        finally:
            handler.client.close()
            app._torchbot_chat.runner.shutdown()


def test_a_store_that_refuses_the_claim_answers_anyway_and_says_why_once(tmp_path, postgres, caplog):  # noqa: F811
    """A failover onto a read-only standby (the tables there, every write refused): a claim
    that fails for any reason, not only a timeout, means "answer without a record". The
    mention and the command are answered, a retry is still recognised in memory, and the
    log says why once, not per delivery."""
    import psycopg

    from release.state import open_state

    url = postgres.new_database()
    open_state(url).engine.dispose()  # the tables exist, as they do on a standby
    with psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=torchbot dbname=postgres",
                         autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {url.rsplit('/', 1)[1]} SET default_transaction_read_only = on")
    caplog.set_level("WARNING", logger="torchbot.slack")
    with FakeSlack() as slack:
        bot = SlackBot(tmp_path, slack, repo_path=None, state_db=url)
        try:
            body = mention(slack, "EvRO1", "<@UBOT> which variant for a p5.48xlarge?")
            assert bot.deliverer.deliver(body, lose_acks=1) == [(0, 200), (1, 200)]
            wait_until(lambda: replies(slack), what="the thread reply")
            wait_until(lambda: bot.deliveries.repeats, what="the retry recognised in memory")
            assert bot.deliverer.send(slash_body(slack, "/torchbot", "status", 1))[0] == 200
            slack.wait_for(lambda p, b: p == "/response/1" and "pending plans: 0" in json.dumps(b), 30)
            assert len(replies(slack)) == 1 and "-sm90-avx2" in json.dumps(replies(slack)[0])
        finally:
            bot.close()
    said = [r.getMessage() for r in caplog.records if "cannot record the claim" in r.getMessage()]
    assert len(said) == 1 and "read-only transaction" in said[0], said
