"""One workspace (issue 26, point 6): a real `torchbot serve --http` learns its workspace from
auth.test (the Slack stand-in answers team T1) and refuses a slash command, a button and an
event from any other team_id / enterprise_id, while the same requests from T1 are answered."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest

from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_serve import ServeProcess, post, sign
from tests.support.waiting import wait_for

SECRET = "workspace-signing-secret"


@pytest.fixture
def served(tmp_path: Path):
    with FakeSlack(token="xoxb-test") as slack:
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_SIGNING_SECRET=SECRET,
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN", TORCHBOT_ALLOWED_CHANNELS="C1",
                   TORCHBOT_STATE_DB=str(tmp_path / "state.db"), TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"),
                   TORCHBOT_LOG_DIR=str(tmp_path / "logs"))
        bot = ServeProcess(tmp_path, env, ["--http", "--host", "127.0.0.1", "--port", "0", "--no-schedule"])
        try:
            assert "(T1)" in bot.wait_line(60)
            yield slack, bot.events_url(), bot
        finally:
            bot.stop()


def _form(url: str, fields: dict) -> tuple[int, str]:
    body = urllib.parse.urlencode(fields).encode()
    return post(url, body, sign(body, SECRET))


@pytest.mark.parametrize("ids", [{"team_id": "T2"}, {"team_id": "T1", "enterprise_id": "E9"},
                                 {"team_id": "T2", "enterprise_id": "E1"}])
def test_a_slash_command_from_another_workspace_is_refused(served, ids):
    slack, url, _ = served
    status, text = _form(url, {"command": "/variant", "text": "H100", "user_id": "UADMIN", "channel_id": "C1",
                               "response_url": slack.response_url(1), **ids})
    assert status == 200 and "serves another Slack workspace" in text and "sm90" not in text
    status, text = _form(url, {"command": "/variant", "text": "H100", "user_id": "UADMIN", "channel_id": "C1",
                               "response_url": slack.response_url(2), "team_id": "T1"})
    assert status == 200 and "sm90" in text  # the installed workspace is answered


def test_a_button_and_an_event_from_another_workspace_are_dropped(served):
    slack, url, bot = served
    for n, team in ((1, "T2"), (2, "T1")):
        payload = {"type": "block_actions", "team": {"id": team}, "user": {"id": "UADMIN", "team_id": team},
                   "channel": {"id": "C1"}, "response_url": slack.response_url(n),
                   "actions": [{"action_id": "share_answer", "value": "H100", "type": "button"}]}
        assert _form(url, {"payload": json.dumps(payload)})[0] == 200
    slack.wait_for(lambda p, b: p == "/response/2" and "sm90" in json.dumps(b), 30)
    for n, team in ((1, "T2"), (2, "T1")):
        body = json.dumps({"type": "event_callback", "team_id": team, "api_app_id": "A1", "event_id": f"Ev{n}",
                           "event": {"type": "app_mention", "text": "<@UBOT> which variant for an H100?",
                                     "user": "U1", "channel": "C1", "ts": f"170000000{n}.000100"}}).encode()
        assert post(url, body, sign(body, SECRET), ctype="application/json")[0] == 200
    wait_for(lambda: slack.method_calls("chat.postMessage"), "the answer to T1's mention", 30)
    answered = {p.get("thread_ts") for p in slack.method_calls("chat.postMessage")}
    assert answered == {"1700000002.000100"}  # T1's mention only
    assert not [p for p, _ in slack.posts if p == "/response/1"]  # T2's button: no answer at all
    assert any("refused a Slack request from team T2" in line for line in bot.err)
