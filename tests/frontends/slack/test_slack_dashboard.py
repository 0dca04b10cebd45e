"""`/torchbot dashboard` in Slack: a Block Kit summary within Slack's limits (50 blocks, 3,000
characters a text) whose buttons plan the row's command as the CLI would (admins only, with the
usual Confirm), and the App Home tab showing the same view (views.publish)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bot.frontends.slack import dashboard as slack_dashboard
from bot.frontends.slack.app import create_app
from bot.frontends.slack.http_mode import make_http_server, start_in_thread
from release.context import Context
from release.dashboard.commands import dashboard
from release.dashboard.model import build
from tests.support.fakes_slack import Deliverer, FakeSlack, blocks_problem
from tests.support.fixtures_dashboard import dashboard_world, many_branches, settings
from tests.support.fixtures_slackbot import click_body, plan_id, slash_body

SECRET = "dashboard-secret"


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slackdash")
    with dashboard_world(tmp) as w, FakeSlack() as slack:
        ctx = Context(settings(w.tmp, w.pt, w.tv, w.nix, w.gh, slack_bot_token=slack.token, slack_api_url=slack.url,
                               slack_signing_secret=SECRET, admins=["UADMIN"], allowed_channels=["CREL"]))
        app = create_app(ctx)
        server = make_http_server(app, "127.0.0.1", 0)
        start_in_thread(server)
        w.slack, w.app = slack, app
        w.deliverer = Deliverer(f"http://127.0.0.1:{server.server_port}/slack/events", SECRET)
        yield w
        app._torchbot_chat.runner.shutdown()
        server.shutdown()


def _texts(blocks: list[dict]) -> str:
    out = []
    for b in blocks:
        for t in [b.get("text"), *(b.get("elements") or [])]:
            if isinstance(t, dict) and isinstance(t.get("text"), str):
                out.append(t["text"])
    return "\n".join(out)


def _response(slack: FakeSlack, n: int) -> dict:
    path = f"/response/{n}"
    return [b for p, b in slack.wait_for(lambda p, _b: p == path, timeout=60) if p == path][-1]


def test_the_blocks_of_300_branches_stay_within_slacks_limits():
    d = build(many_branches(300), datetime(2026, 3, 2, 12, tzinfo=UTC))
    blocks = slack_dashboard.blocks(d)
    assert blocks_problem(blocks, 50) is None and len(blocks) <= 50
    text = _texts(blocks)
    shown = sum(f"`{b.name}`" in text for b in d.branches)
    assert shown == 300 or f"and {300 - shown} more branches" in text
    assert "more: `torchbot dashboard`" in text  # 900 rows need a human: the rest are counted


def test_slash_dashboard_answers_with_every_branch_and_buttons_on_the_rows(bot):
    status, _ = bot.deliverer.send(slash_body(bot.slack, "/torchbot", "dashboard", 1))
    assert status == 200
    answer = _response(bot.slack, 1)
    blocks = answer["blocks"]
    assert blocks_problem(blocks, 50) is None
    text = _texts(blocks)
    for name in bot.pt.branch_names + bot.tv.branch_names:
        assert f"`{name}`" in text
    buttons = [b["accessory"] for b in blocks if (b.get("accessory") or {}).get("action_id") == "dashboard_act"]
    assert {json.loads(b["value"])["key"].split(":")[0] for b in buttons} == {"approve-bump", "retry-builds"}
    assert answer["text"].startswith("Release dashboard: 8 branches")


def test_a_button_plans_the_rows_command_for_an_admin_and_refuses_others(bot):
    model = dashboard(bot.ctx).model
    retry = next(a for b in model.branches for a in b.actions if a.kind == "retry-builds")
    value = json.dumps({"repo": retry.repository, "key": retry.key})
    bot.deliverer.send(click_body(bot.slack, "dashboard_act", value, 2, user="U2"))
    refused = _response(bot.slack, 2)
    assert "only admins may run it" in refused["text"]
    bot.deliverer.send(click_body(bot.slack, "dashboard_act", value, 3))
    plan = _response(bot.slack, 3)
    assert plan["text"].startswith("Plan for /build main") and plan_id(plan)
    audit = (bot.tmp / "audit.log").read_text()
    assert "refused /build main" in audit and "plan /build main" in audit


def test_the_app_home_tab_shows_the_same_view(bot):
    event = {"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "EvHome1",
             "event_time": 1700000000,
             "event": {"type": "app_home_opened", "user": "U7", "channel": "D1", "tab": "home"}}
    assert bot.deliverer.deliver(event)[-1][1] == 200
    bot.slack.wait_for(lambda p, _b: p == "/api/views.publish", timeout=60)
    view = bot.slack.views["U7"]
    assert view["type"] == "home" and blocks_problem(view["blocks"], 100) is None
    sections = lambda blocks: _texts([b for b in blocks if b["type"] == "section"])  # noqa: E731
    assert sections(view["blocks"]) == sections(slack_dashboard.blocks(dashboard(bot.ctx).model))
