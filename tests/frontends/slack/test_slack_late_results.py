"""Results that outlive the click. Slack honours a response_url at most 5 times within 30
minutes, builds run for hours: a job whose channel refuses torchbot (a private channel it was not
invited to) reports to the Confirm click's response_url while it can, and its result reaches the
person who asked by direct message once that URL has expired (the stand-in's clock is moved past
30 minutes while the build runs)."""

from __future__ import annotations

from pathlib import Path

from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot, click_body, plan_id, slash_body, wait_until


def _answer(slack: FakeSlack, n: int) -> dict:
    path = f"/response/{n}"
    return [b for p, b in slack.wait_for(lambda p, _b: p == path, timeout=60) if p == path][-1]


def test_a_job_result_reaches_the_asker_after_its_response_url_expired(tmp_path: Path) -> None:
    go = tmp_path / "go"
    wait = f"while [ ! -e {go} ]; do sleep 0.05; done; echo ok > result-{{package}}"
    with FakeSlack() as slack:
        slack.private.add("CREL")  # the command's channel: private, torchbot not invited
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        bot = SlackBot(tmp_path, slack, repo_path=work, build_command=wait)
        try:
            assert bot.deliverer.send(slash_body(slack, "/build", fx.BRANCH, 1))[0] == 200
            pid = plan_id(_answer(slack, 1))
            assert bot.deliverer.send(click_body(slack, "confirm_plan", pid, 2))[0] == 200
            confirmed = _answer(slack, 2)
            assert "by direct message if that is no longer possible" in confirmed["text"]
            assert slack.method_calls("chat.postMessage")[0]["channel"] == "CREL"  # tried the channel first
            slack.advance(31 * 60)  # the build takes longer than a response_url lives
            go.touch()
            wait_until(lambda: slack.dm("UADMIN"), 120, "the result in the asker's DM")
            (dm,) = slack.dm("UADMIN")
            assert f"`/build {fx.BRANCH}`" in dm["text"] and "done:" in dm["text"]
            assert [(p, why) for p, _b, why in slack.refused_posts] == [("/response/2", "expired_url")]
            assert [c["users"] for c in slack.method_calls("conversations.open")] == ["UADMIN"]
        finally:
            bot.close()


def test_a_result_goes_to_the_response_url_while_it_lives(tmp_path: Path) -> None:
    with FakeSlack() as slack:
        slack.private.add("CREL")
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        bot = SlackBot(tmp_path, slack, repo_path=work)
        try:
            assert bot.deliverer.send(slash_body(slack, "/build", fx.BRANCH, 1))[0] == 200
            assert bot.deliverer.send(click_body(slack, "confirm_plan", plan_id(_answer(slack, 1)), 2))[0] == 200
            slack.wait_for(lambda p, b: p == "/response/2" and "1 succeeded" in b.get("text", ""), timeout=120)
            assert not slack.dm("UADMIN") and not slack.refused_posts
        finally:
            bot.close()
