"""The App Home tab works: an admin's button does what it says, answered in their DM with
torchbot (an App Home click, as Slack sends it, has no channel and no response_url), and Confirm
there runs it; anyone else sees the dashboard read-only."""

from __future__ import annotations

import json

from bot.frontends.slack import dashboard as slack_dashboard
from bot.frontends.slack.app import create_app
from bot.frontends.slack.http_mode import make_http_server, start_in_thread
from release.context import Context
from release.dashboard.commands import dashboard
from release.state import Build, state_for
from tests.support.fakes_slack import Deliverer, FakeSlack
from tests.support.fixtures_dashboard import dashboard_world, settings
from tests.support.fixtures_slackbot import click_body, home_click_body, plan_id, wait_until

SECRET = "home-secret"


def _home_opened(user: str, n: int) -> dict:
    return {"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": f"EvHome{n}",
            "event_time": 1700000000, "event": {"type": "app_home_opened", "user": user, "channel": "D" + user,
                                                "tab": "home"}}


def _buttons(view: dict) -> list[dict]:
    return [b["accessory"] for b in view["blocks"] if (b.get("accessory") or {}).get("action_id") == "dashboard_act"]


def test_an_app_home_button_does_what_it_says_for_an_admin(tmp_path):
    with dashboard_world(tmp_path, build_command="echo ok > result-{package}") as w, FakeSlack() as slack:
        ctx = Context(settings(w.tmp, w.pt, w.tv, w.nix, w.gh, slack_bot_token=slack.token, slack_api_url=slack.url,
                               slack_signing_secret=SECRET, admins=["UADMIN"], allowed_channels=["CREL"],
                               build_command="echo ok > result-{package}"))
        app = create_app(ctx)
        server = make_http_server(app, "127.0.0.1", 0)
        start_in_thread(server)
        deliverer = Deliverer(f"http://127.0.0.1:{server.server_port}/slack/events", SECRET)
        try:
            # the tab: buttons for the admin, read-only for anyone else (the same rows)
            assert deliverer.deliver(_home_opened("UADMIN", 1))[-1][1] == 200
            assert deliverer.deliver(_home_opened("U7", 2))[-1][1] == 200
            wait_until(lambda: {"UADMIN", "U7"} <= set(slack.views), 60, "both Home tabs published")
            admin_view, other_view = slack.views["UADMIN"], slack.views["U7"]
            assert _buttons(admin_view) and not _buttons(other_view)
            assert slack_dashboard.READ_ONLY in json.dumps(other_view)
            # the admin clicks "Retry failed" on main, in Slack's App Home shape
            model = dashboard(ctx).model
            retry = next(a for b in model.branches for a in b.actions if a.kind == "retry-builds"
                         and a.key.split(":")[1] == "main")
            value = next(b["value"] for b in _buttons(admin_view) if json.loads(b["value"])["key"] == retry.key)
            body = slack.home_click("dashboard_act", value)
            assert "channel" not in body and "response_url" not in body
            assert deliverer.send(home_click_body(slack, "dashboard_act", value))[0] == 200
            wait_until(lambda: any(plan_id_or_none(m) for m in slack.dm("UADMIN")), 60, "the plan in the admin's DM")
            plan = next(m for m in slack.dm("UADMIN") if plan_id_or_none(m))
            assert plan["text"].startswith("Plan for /build main")
            # Confirm in the DM (a message click: channel and response_url) runs it
            dm = slack.method_calls("conversations.open")[0]["users"]
            assert dm == "UADMIN"
            assert deliverer.send(click_body(slack, "confirm_plan", plan_id(plan), 11, channel="DUADMIN"))[0] == 200
            wait_until(lambda: any("done after" in m["text"] for m in slack.dm("UADMIN")), 120, "the job's end")
            with state_for(ctx).session() as s:
                rerun = [b for b in s.query(Build).filter(Build.branch == "main", Build.package.in_(w.failed))
                         if b.state == "succeeded"]
            here = {p for p in w.failed if "-armv" not in p}  # an aarch64 variant is never built on this x86 host
            assert here and {b.package for b in rerun} == here  # the failed builds were retried, and passed
            audit = (w.tmp / "audit.log").read_text()
            assert "plan /build main" in audit and "confirm /build main" in audit
        finally:
            app._torchbot_chat.runner.shutdown()
            server.shutdown()
            server.server_close()


def plan_id_or_none(message: dict) -> str | None:
    try:
        return plan_id(message)
    except (KeyError, StopIteration):
        return None


def test_a_non_admin_click_from_app_home_is_refused_in_their_dm(tmp_path):
    with dashboard_world(tmp_path) as w, FakeSlack() as slack:
        ctx = Context(settings(w.tmp, w.pt, w.tv, w.nix, w.gh, slack_bot_token=slack.token, slack_api_url=slack.url,
                               slack_signing_secret=SECRET, admins=["UADMIN"], allowed_channels=["CREL"]))
        app = create_app(ctx)
        server = make_http_server(app, "127.0.0.1", 0)
        start_in_thread(server)
        deliverer = Deliverer(f"http://127.0.0.1:{server.server_port}/slack/events", SECRET)
        try:
            retry = next(a for b in dashboard(ctx).model.branches for a in b.actions if a.kind == "retry-builds")
            value = json.dumps({"repo": retry.repository, "key": retry.key})  # a stale tab, or a forged click
            assert deliverer.send(home_click_body(slack, "dashboard_act", value, user="U7"))[0] == 200
            wait_until(lambda: slack.dm("U7"), 60, "an answer in U7's DM")
            assert "only admins may run it" in slack.dm("U7")[0]["text"]
            assert not slack.refused_posts
            # a row that has nothing to do any more: said in the DM, and the tab is shown as it is now
            gone = json.dumps({"repo": retry.repository, "key": "retry-builds:main:" + "0" * 40})
            assert deliverer.send(home_click_body(slack, "dashboard_act", gone))[0] == 200
            wait_until(lambda: "UADMIN" in slack.views, 60, "the admin's tab refreshed")
            assert "nothing to do any more" in slack.dm("UADMIN")[0]["text"]
        finally:
            app._torchbot_chat.runner.shutdown()
            server.shutdown()
            server.server_close()
