"""The Slack stand-in is as strict as Slack (its method docs, slack_sdk's models), and the Slack
conformance check reports what Slack would not take. Driven through slack_sdk's WebClient, as
torchbot drives Slack."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from release.adapters.slack import make_client
from tests.support import slack_conformance
from tests.support.fakes_slack import FakeSlack


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def client(slack):
    return WebClient(token=slack.token, base_url=slack.url)


def _error(call) -> str:
    with pytest.raises(SlackApiError) as err:
        call()
    return err.value.response["error"]


def test_unknown_arguments_and_invalid_blocks_are_refused_as_slack_refuses_them(slack, client):
    with slack_conformance.expect_problems() as found:
        assert _error(lambda: client.chat_postMessage(channel="C1", text="x", colour="red")) == "invalid_arguments"
        sixty = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 100}}] * 60
        assert _error(lambda: client.chat_postMessage(channel="C1", text="x", blocks=sixty)) == "invalid_blocks"
        long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 5000}}]
        assert _error(lambda: client.chat_postMessage(channel="C1", text="x", blocks=long)) == "invalid_blocks"
        empty = [{"type": "section", "text": {"type": "mrkdwn", "text": ""}}]
        assert _error(lambda: client.chat_postMessage(channel="C1", text="x", blocks=empty)) == "invalid_blocks"
        ts = client.chat_postMessage(channel="C1", text="x")["ts"]
        assert _error(lambda: client.chat_update(channel="C1", ts=ts, text="y", blocks=long)) == "invalid_blocks"
    assert any("'colour' is not documented" in p for p in found)
    assert sum("invalid_blocks" in p for p in found) == 4
    assert slack.messages("C1")[0]["text"] == "x"  # nothing refused was kept


def test_client_msg_id_is_ignored_and_reported(slack, client):
    with slack_conformance.expect_problems() as found:
        resp = client.chat_postMessage(channel="C1", text="x", client_msg_id="abc")
    assert "client_msg_id" not in resp["message"] and "client_msg_id" not in slack.messages("C1")[0]
    assert found == ["FakeSlack: chat.postMessage -> 200: argument 'client_msg_id' is not documented for "
                     "chat.postMessage"]


def test_plain_text_escaped_like_mrkdwn_is_reported(client):
    with slack_conformance.expect_problems() as found:
        client.chat_postMessage(channel="C1", text="x", blocks=[
            {"type": "header", "text": {"type": "plain_text", "text": "&lt;!channel&gt;"}}])
    assert found and "plain_text escaped" in found[0]


def test_chat_update_answers_its_message(client):
    ts = client.chat_postMessage(channel="C1", text="x")["ts"]
    resp = client.chat_update(channel="C1", ts=ts, text="y")
    assert resp["message"]["text"] == "y" and resp["message"]["ts"] == ts and "edited" in resp["message"]


def test_reads_need_membership_and_page_with_next_cursor(slack, client):
    parent = client.chat_postMessage(channel="C1", text="parent")["ts"]  # chat:write.public: no membership needed
    for i in range(45):
        client.chat_postMessage(channel="C1", text=f"r{i}", thread_ts=parent)
    assert _error(lambda: client.conversations_replies(channel="C1", ts=parent)) == "not_in_channel"
    assert client.conversations_join(channel="C1")["channel"]["is_member"] is True
    texts, cursor, pages = [], None, 0
    while True:
        more = {"cursor": cursor} if cursor else {}
        resp = client.conversations_replies(channel="C1", ts=parent, limit=1000, **more)
        pages += 1
        texts += [m["text"] for m in resp["messages"]]
        cursor = resp["response_metadata"]["next_cursor"]
        if not resp["has_more"]:
            break
    assert pages == 3 and texts == ["parent", *(f"r{i}" for i in range(45))]  # 20 a page, whatever was asked
    slack.private.add("G1")
    assert _error(lambda: client.chat_postMessage(channel="G1", text="x")) == "not_in_channel"
    assert _error(lambda: client.conversations_join(channel="G1")) == "method_not_supported_for_channel_type"


def test_metadata_only_with_include_all_metadata(slack, client):
    slack.join("C1")
    meta = {"event_type": "t", "event_payload": {"k": "v"}}
    client.chat_postMessage(channel="C1", text="x", metadata=meta)
    assert "metadata" not in client.conversations_history(channel="C1")["messages"][0]
    assert client.conversations_history(channel="C1", include_all_metadata=True)["messages"][0]["metadata"] == meta


def _post(url: str, body: dict) -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_response_url_answers_five_times_within_thirty_minutes(slack):
    used, late = slack.response_url(1), slack.response_url(2)
    assert [_post(used, {"text": f"{i}"})[0] for i in range(6)] == [200] * 5 + [404]
    slack.advance(30 * 60 + 1)
    assert _post(late, {"text": "late"}) == (404, "expired_url")
    assert [why for _p, _b, why in slack.refused_posts] == ["used_url", "expired_url"]


def test_clicks_come_in_slacks_shapes(slack):
    message = slack.message_click("confirm_plan", "v", 3)
    assert message["channel"]["id"] == "CREL" and message["response_url"].endswith("/response/3")
    assert message["container"]["type"] == "message"
    home = slack.home_click("dashboard_act", "v")
    assert "channel" not in home and "response_url" not in home and home["container"]["type"] == "view"
    assert home["view"]["type"] == "home"


def test_torchbots_client_honours_retry_after(slack):
    from config.settings import Settings

    client = make_client(Settings(_env_file=None, slack_bot_token=slack.token, slack_api_url=slack.url))
    slack.rate_limit(1, retry_after=1)
    assert client.chat_postMessage(channel="C1", text="x")["ok"]
    assert len(slack.method_calls("chat.postMessage")) == 2
