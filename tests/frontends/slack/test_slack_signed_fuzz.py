"""Every signed body gets a 2xx or a 4xx, never a 5xx: hypothesis generates Slack's payload
shapes (slash command forms, interactive ``payload=`` JSON, Events API JSON) with every field
also drawn as the wrong type (a string ``user``, a list ``team``, numbers, nulls, nesting), signs
each exactly as Slack does and posts it to the real HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False),
                    st.text(max_size=30))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=10), inner, max_size=3)),
                    max_leaves=8)
IDS = st.one_of(st.sampled_from(["UADMIN", "U1", "T1", "CREL", "C1", "E1"]), st.text(max_size=12))
ENTITY = st.one_of(JSON, IDS, st.fixed_dictionaries({}, optional={"id": st.one_of(IDS, JSON),
                                                                  "team_id": st.one_of(IDS, JSON),
                                                                  "name": st.one_of(IDS, JSON)}))
ACTION = st.fixed_dictionaries({"action_id": st.one_of(st.sampled_from(
    ["confirm_plan", "cancel_plan", "dashboard_act", "run_button"]), st.text(min_size=1, max_size=12), JSON)},
    optional={"value": st.one_of(st.text(max_size=40), JSON), "block_id": st.one_of(st.text(max_size=8), JSON),
              "type": st.one_of(st.just("button"), JSON)})
PAYLOAD = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["block_actions", "view_submission", "view_closed", "shortcut",
                                        "message_action", "block_suggestion"]), JSON)},
    optional={"user": ENTITY, "team": ENTITY, "channel": ENTITY, "enterprise": ENTITY, "container": JSON,
              "actions": st.one_of(st.lists(ACTION, max_size=3), JSON), "response_url": st.one_of(IDS, JSON),
              "trigger_id": st.one_of(IDS, JSON), "view": JSON, "message": JSON, "api_app_id": JSON,
              "callback_id": JSON, "state": JSON})
EVENT = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["event_callback", "url_verification", "app_rate_limited"]), JSON)},
    optional={"team_id": st.one_of(IDS, JSON), "api_app_id": JSON, "event_id": st.one_of(IDS, JSON),
              "challenge": JSON, "authorizations": JSON, "enterprise_id": JSON,
              "event": st.fixed_dictionaries({"type": st.one_of(st.sampled_from(
                  ["app_mention", "message", "app_home_opened"]), JSON)},
                  optional={"user": ENTITY, "text": st.one_of(st.text(max_size=40), JSON), "channel": ENTITY,
                            "ts": JSON, "thread_ts": JSON, "event_ts": JSON, "team": ENTITY, "bot_id": JSON,
                            "subtype": JSON, "tab": JSON, "blocks": JSON})})
SLASH = st.fixed_dictionaries(
    {"command": st.one_of(st.sampled_from(["/variant", "/build", "/bump", "/dashboard", "/status"]),
                          st.text(max_size=10))},
    optional={"text": st.text(max_size=60), "user_id": IDS, "channel_id": IDS, "team_id": IDS,
              "response_url": st.text(max_size=20), "trigger_id": st.text(max_size=20),
              "enterprise_id": IDS})
BODY = st.one_of(
    SLASH.map(lambda f: (urllib.parse.urlencode(f), "application/x-www-form-urlencoded")),
    PAYLOAD.map(lambda p: (urllib.parse.urlencode({"payload": json.dumps(p)}), "application/x-www-form-urlencoded")),
    JSON.map(lambda p: (urllib.parse.urlencode({"payload": json.dumps(p)}), "application/x-www-form-urlencoded")),
    EVENT.map(lambda e: (json.dumps(e), "application/json")),
    JSON.map(lambda e: (json.dumps(e), "application/json")),
)


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    with FakeSlack() as slack:
        bot = SlackBot(tmp_path_factory.mktemp("fuzz"), slack, repo_path=None)
        yield bot
        bot.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(body=BODY)
def test_every_signed_body_shape_is_answered_2xx_or_4xx(bot, body):
    text, ctype = body
    data = text.encode()
    conn = http.client.HTTPConnection("127.0.0.1", bot.server.server_port, timeout=30)
    try:
        conn.request("POST", "/slack/events", body=data, headers={"Content-Type": ctype,
                                                                  **bot.deliverer.sign(data)})
        resp = conn.getresponse()
        answer = resp.read()
    finally:
        conn.close()
    assert resp.status < 500, (resp.status, text[:300], answer[:300])
    assert resp.status in (200, 400, 404, 413), (resp.status, text[:300], answer[:300])


def test_a_signed_interaction_whose_user_is_a_string_is_refused_in_one_line(bot):
    data = urllib.parse.urlencode({"payload": json.dumps({"type": "block_actions", "user": "UADMIN", "actions": [
        {"action_id": "confirm_plan", "value": "1"}]})}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", bot.server.server_port, timeout=30)
    try:
        conn.request("POST", "/slack/events", body=data, headers={
            "Content-Type": "application/x-www-form-urlencoded", **bot.deliverer.sign(data)})
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (400, b"user is not a JSON object\n")
    finally:
        conn.close()
