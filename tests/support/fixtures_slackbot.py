"""The Slack bot in this process for tests: ``SlackBot`` is ``create_app`` served over real
HTTP (the production server of ``torchbot serve --http``) on 127.0.0.1, against a
``FakeSlack``; several may be started one after another on one state DB (a restart).
Bodies of Slack's requests as Slack sends them: slash commands, button clicks and mentions,
each with the ids Slack gives (trigger ids, action timestamps, event ids)."""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from pathlib import Path

from bot.frontends.slack.app import create_app
from bot.frontends.slack.http_mode import make_http_server, start_in_thread
from release.context import Context
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import Deliverer, FakeSlack

SECRET = "fixture-signing-secret"


def trigger_id() -> str:
    return f"{time.time_ns()}.{uuid.uuid4().hex[:12]}"


def slash_body(slack: FakeSlack, command: str, text: str, n: int, user: str = "UADMIN", channel: str = "CREL",
               trigger: str | None = None) -> bytes:
    return urllib.parse.urlencode({
        "command": command, "text": text, "user_id": user, "channel_id": channel, "team_id": "T1",
        "response_url": slack.response_url(n), "trigger_id": trigger or trigger_id()}).encode()


def click_body(slack: FakeSlack, action_id: str, value: str, n: int, user: str = "UADMIN",
               trigger: str | None = None, action_ts: str | None = None, channel: str = "CREL") -> bytes:
    """A click on a button of a message (Slack's shape: channel, container, response_url)."""
    payload = slack.message_click(action_id, value, n, user=user, channel=channel,
                                  trigger=trigger or trigger_id(), action_ts=action_ts)
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def home_click_body(slack: FakeSlack, action_id: str, value: str, user: str = "UADMIN") -> bytes:
    """A click on a button of the App Home tab (Slack's shape: a view, no channel, no response_url)."""
    payload = slack.home_click(action_id, value, user=user, trigger=trigger_id())
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def mention_body(event_id: str, text: str, ts: str = "1700000000.000100", channel: str = "C1") -> dict:
    return {"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id,
            "event_time": 1700000000,
            "event": {"type": "app_mention", "text": text, "user": "U1", "channel": channel, "ts": ts}}


def wait_until(condition, timeout: float = 30.0, what: str = "the condition") -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"{what} did not hold within {timeout} s")
        time.sleep(0.02)


def plan_id(body: dict) -> str:
    return next(e["value"] for blk in body["blocks"] if blk["type"] == "actions" for e in blk["elements"]
                if e["action_id"] == "confirm_plan")


class SlackBot:
    def __init__(self, tmp: Path, slack: FakeSlack, **settings):
        base = dict(slack_bot_token=slack.token, slack_signing_secret=SECRET, slack_api_url=slack.url,
                    admins=["UADMIN"], allowed_channels=["CREL"], audit_log=tmp / "audit.log",
                    build_command="echo ok > result-{package}")
        base.update(settings)
        self.app = create_app(Context(fx.settings(tmp, **base), use_repo=False))
        self.server = make_http_server(self.app, "127.0.0.1", 0)
        start_in_thread(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_port}/slack/events"
        self.slack = slack
        self.deliverer = Deliverer(self.url, SECRET, delays=(0.0, 0.05, 0.05))

    @property
    def deliveries(self):
        return self.app._torchbot_deliveries

    def close(self) -> None:
        self.app._torchbot_chat.runner.shutdown()
        self.server.shutdown()
        self.server.server_close()
