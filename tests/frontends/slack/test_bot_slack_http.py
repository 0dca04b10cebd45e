"""The Slack bot through real HTTP: bolt's request-signed HTTP mode on 127.0.0.1, requests
signed exactly as Slack signs them, replies read from a fake Web API / response_url
server, and /bump against a real git repository with a bare origin. A Confirm runs the plan
as a job that reports in a thread of the channel."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from bot.frontends.slack.app import create_app
from bot.frontends.slack.http_mode import make_http_server, start_in_thread
from config.settings import Settings
from release.context import Context
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_pins import NEW, PIN_A, PIN_B, PIN_C, build_repo, refs, small_catalog_branches

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CUDA_ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13_0", "cudaPackages_13_1"}


def sign(body: str, ts: int | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    base = f"v0:{ts}:{body}".encode()
    sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": sig}


@pytest.fixture
def world(tmp_path):
    with FakeSlack(token="xoxb-test-token") as slack, FakeNixpkgs() as nix:
        for rev, torch in ((PIN_A, "2.8.0"), (PIN_B, "2.9.1"), (PIN_C, "2.9.1"), (NEW, "2.8.4"),
                           ("0182a361324364ae3f436a63005877674cf45efb", "2.9.1")):
            nix.add_rev(rev, torch, CUDA_ALL)
        nix.channels["nixos-unstable"] = NEW
        work, origin = build_repo(tmp_path, small_catalog_branches())
        settings = Settings(
            slack_bot_token="xoxb-test-token", slack_signing_secret=SECRET, slack_api_url=slack.api_url,
            admins=["UADMIN"], allowed_channels=["CREL"], repo_path=work, channels_url=nix.channels_url,
            github_api_url=nix.api_url, nixpkgs_tarball_url=nix.tarball_url, audit_log=tmp_path / "audit.log", state_db=f"sqlite:///{tmp_path}/s.db",
        )
        app = create_app(Context(settings))
        server = make_http_server(app, "127.0.0.1", 0)
        start_in_thread(server)
        url = f"http://127.0.0.1:{server.server_port}/slack/events"
        yield {"url": url, "slack": slack, "work": work, "origin": origin, "audit": tmp_path / "audit.log",
               "chat": app._torchbot_chat}
        app._torchbot_chat.runner.shutdown()
        server.shutdown()
        server.server_close()


def trigger_id() -> str:
    """A new trigger id, as Slack gives each command and click."""
    return f"{time.time_ns()}.{uuid.uuid4().hex[:12]}"


def post(url: str, body: str, headers: dict[str, str], ctype="application/x-www-form-urlencoded"):
    req = urllib.request.Request(url, data=body.encode(), headers={"Content-Type": ctype, **headers}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def slash(world, command: str, text: str, user="UADMIN", channel="CREL", n=1, headers=None):
    body = urllib.parse.urlencode({
        "command": command, "text": text, "user_id": user, "channel_id": channel, "team_id": "T1",
        "response_url": world["slack"].response_url(n), "trigger_id": trigger_id(),
    })
    return post(world["url"], body, headers if headers is not None else sign(body))


def click(world, action_id: str, value: str, user="UADMIN", n=1):
    payload = {"type": "block_actions", "user": {"id": user}, "team": {"id": "T1"}, "channel": {"id": "CREL"},
               "response_url": world["slack"].response_url(n), "trigger_id": trigger_id(),
               "actions": [{"action_id": action_id, "value": value, "type": "button", "block_id": "b"}]}
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    return post(world["url"], body, sign(body))


def test_variant_answers_in_the_ack_with_blocks(world):
    status, body = slash(world, "/variant", "H100 with Graviton3")
    assert status == 200
    reply = json.loads(body)
    assert reply["response_type"] == "ephemeral"
    blob = json.dumps(reply["blocks"])
    # answers come from the repository's own branches (TORCHBOT_REPO_PATH is set)
    assert "-sm90-armv8_2" in blob and "share_answer" in blob and "git checkout " in blob


@pytest.mark.parametrize("kind", ["unsigned", "wrong", "replayed"])
def test_bad_signatures_get_401_and_change_nothing(world, kind):
    before = refs(world["origin"]), refs(world["work"])
    body = urllib.parse.urlencode({"command": "/bump", "text": "all", "user_id": "UADMIN", "channel_id": "CREL",
                                   "response_url": world["slack"].response_url()})
    headers = {
        "unsigned": {},
        "wrong": sign(body, secret="not-the-secret"),
        "replayed": sign(body, ts=int(time.time()) - 6 * 60),
    }[kind]
    status, _ = post(world["url"], body, headers)
    assert status == 401
    # a signed request after it, answered in the background: once its answer is in, anything the
    # refused one had set going would have shown too (requests are served in the order they came)
    assert slash(world, "/bump", "all", user="UINTRUDER", n=2)[0] == 200
    world["slack"].wait_for(lambda p, b: p == "/response/2" and "only admins" in b.get("text", ""))
    assert [p for p, _ in world["slack"].posts if p not in ("/api/auth.test", "/response/2")] == []
    assert (refs(world["origin"]), refs(world["work"])) == before
    audit = world["audit"].read_text().splitlines()
    assert audit and all(json.loads(line)["user"] == "UINTRUDER" for line in audit), audit  # only the signed one


def test_non_admin_bump_is_refused_and_changes_no_ref(world):
    before = refs(world["work"])
    status, _ = slash(world, "/bump", "main", user="UINTRUDER")
    assert status == 200
    posts = world["slack"].wait_for(lambda p, b: p == "/response/1" and "only admins" in b.get("text", ""))
    assert not any("confirm_plan" in json.dumps(b) for _, b in posts)
    assert refs(world["work"]) == before
    assert '"user": "UINTRUDER"' in world["audit"].read_text() and "refused /bump" in world["audit"].read_text()


def test_admin_outside_allowed_channels_is_refused(world):
    slash(world, "/bump", "main", channel="CRANDOM")
    world["slack"].wait_for(lambda p, b: "not allowed in this channel" in b.get("text", ""))


def test_admin_bump_shows_the_plan_and_only_confirm_commits(world):
    before = refs(world["work"])
    slash(world, "/bump", "main")
    posts = world["slack"].wait_for(lambda p, b: "confirm_plan" in json.dumps(b.get("blocks", [])))
    assert refs(world["work"]) == before  # the plan wrote nothing
    plan = next(b for _, b in posts if "confirm_plan" in json.dumps(b.get("blocks", [])))
    assert NEW[:7] in json.dumps(plan)
    pid = next(e["value"] for blk in plan["blocks"] if blk["type"] == "actions" for e in blk["elements"]
               if e["action_id"] == "confirm_plan")

    # another user's click does nothing
    click(world, "confirm_plan", pid, user="UADMIN2", n=2)
    world["slack"].wait_for(lambda p, b: p == "/response/2" and "Only the admin" in b.get("text", ""))
    assert refs(world["work"]) == before

    status, _ = click(world, "confirm_plan", pid, n=3)
    assert status == 200
    world["slack"].wait_for(lambda p, b: p == "/response/3" and "Confirmed /bump main" in b.get("text", ""))
    # the job reports in a thread: its parent edited in place, the result as a reply
    world["slack"].wait_for(lambda p, b: p == "/api/chat.postMessage" and b.get("thread_ts")
                            and "nixpkgs: bump pin" in json.dumps(b), timeout=30)
    parent = world["slack"].messages("CREL")[0]
    assert parent["text"].startswith("`/bump main` (job ") and "done after" in parent["text"]
    assert "edited" in parent
    after = refs(world["work"])
    assert after["refs/heads/main"] != before["refs/heads/main"]
    assert {k: v for k, v in after.items() if k != "refs/heads/main"} == {
        k: v for k, v in before.items() if k != "refs/heads/main"}
    audit = world["audit"].read_text()
    assert "plan /bump main" in audit and "confirm /bump main" in audit

    click(world, "confirm_plan", pid, n=4)  # a second click cannot apply twice
    world["slack"].wait_for(lambda p, b: p == "/response/4" and "already confirmed" in b.get("text", ""))


def test_cancel_changes_nothing(world):
    before = refs(world["work"])
    slash(world, "/bump", "main")
    posts = world["slack"].wait_for(lambda p, b: "cancel_plan" in json.dumps(b.get("blocks", [])))
    plan = next(b for _, b in posts if "cancel_plan" in json.dumps(b.get("blocks", [])))
    pid = next(e["value"] for blk in plan["blocks"] if blk["type"] == "actions" for e in blk["elements"]
               if e["action_id"] == "cancel_plan")
    click(world, "cancel_plan", pid, n=2)
    world["slack"].wait_for(lambda p, b: p == "/response/2" and "Cancelled" in b.get("text", ""))
    assert refs(world["work"]) == before


def test_mention_answers_in_the_thread(world):
    body = json.dumps({"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "Ev1",
                       "event": {"type": "app_mention", "text": "<@UBOT> which variant for a p5.48xlarge?",
                                 "user": "U1", "channel": "C1", "ts": "1700000000.000100"}})
    status, _ = post(world["url"], body, sign(body), ctype="application/json")
    assert status == 200
    posts = world["slack"].wait_for(lambda p, b: p == "/api/chat.postMessage")
    msg = next(b for p, b in posts if p == "/api/chat.postMessage")
    assert msg["thread_ts"] == "1700000000.000100"
    assert "-sm90-avx2" in json.dumps(msg)
    assert "share_answer" not in json.dumps(msg)  # answered in the thread for all to see already
    assert "xoxb-test-token" not in json.dumps(msg)


def test_share_button_posts_in_channel(world):
    click(world, "share_answer", "p5.48xlarge")
    posts = world["slack"].wait_for(lambda p, b: b.get("response_type") == "in_channel")
    msg = next(b for _, b in posts if b.get("response_type") == "in_channel")
    assert "-sm90-avx2" in json.dumps(msg)
    assert msg.get("replace_original") is False  # the asker keeps their own answer
    assert "share_answer" not in json.dumps(msg)  # shared once: no Share button for everyone


def test_help_and_unknown_input_are_sentences(world):
    status, body = slash(world, "/torchbot", "help")
    assert status == 200 and "/variant" in json.loads(body)["text"]
    status, body = slash(world, "/variant", "")
    assert status == 200 and "Usage" in json.loads(body)["text"]


def sign_bytes(body: bytes, ts: str | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = str(int(time.time())) if ts is None else ts
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig}


def post_bytes(url: str, body: bytes, headers: dict[str, str], ctype: str):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype, **headers}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


FORM = "application/x-www-form-urlencoded"
BUTTON = {"type": "block_actions", "user": {"id": "UADMIN"}, "response_url": "http://127.0.0.1:9/r", "actions": []}
MALFORMED = {
    "invalid UTF-8": (b"command=/variant&text=\xff\xfe\xfa", FORM, None),
    "payload not JSON": (b"payload=%7Bnot+json", FORM, None),
    "payload a JSON array": (urllib.parse.urlencode({"payload": "[1, 2]"}).encode(), FORM, None),
    "actions: []": (urllib.parse.urlencode({"payload": json.dumps(BUTTON)}).encode(), FORM, None),
    "non-integer timestamp": (b"command=/variant&text=H100", FORM, "12345abc"),
    "form body, JSON type": (b"command=/variant&text=H100", "application/json", None),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_requests_get_400_when_signed_and_401_when_not_never_5xx(world, case):
    body, ctype, ts = MALFORMED[case]
    status, _ = post_bytes(world["url"], body, {}, ctype)
    assert status == 401
    headers = sign_bytes(body, ts) if ts is None else {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=00"}
    status, text = post_bytes(world["url"], body, headers, ctype)
    assert status == 400, text
    assert text.strip()  # says what is wrong


def test_unknown_commands_and_buttons_are_acked_with_a_short_help(world):
    status, body = slash(world, "/deploy", "everything")
    assert status == 200
    assert "does not know /deploy" in json.loads(body)["text"]
    status, _ = click(world, "launch_rocket", "x", n=7)
    assert status == 200
    world["slack"].wait_for(lambda p, b: p == "/response/7" and "no button 'launch_rocket'" in b.get("text", ""))


def test_a_handler_error_after_the_ack_is_an_apology_with_an_id_in_the_log(world, tmp_path, caplog):
    import re
    import sqlite3

    slash(world, "/bump", "main")
    posts = world["slack"].wait_for(lambda p, b: "confirm_plan" in json.dumps(b.get("blocks", [])))
    plan = next(b for _, b in posts if "confirm_plan" in json.dumps(b.get("blocks", [])))
    pid = next(e["value"] for blk in plan["blocks"] if blk["type"] == "actions" for e in blk["elements"]
               if e["action_id"] == "confirm_plan")
    with sqlite3.connect(tmp_path / "s.db") as db:  # an operator restores an old state DB...
        db.execute("DROP TABLE pending_plans")
    before = refs(world["work"])
    status, _ = click(world, "confirm_plan", pid, n=8)
    assert status == 200  # acked first
    posts = world["slack"].wait_for(lambda p, b: p == "/response/8" and "error id" in b.get("text", ""))
    text = next(b["text"] for p, b in posts if p == "/response/8" and "error id" in b.get("text", ""))
    error_id = re.search(r"error id (E[0-9A-F]{8})", text).group(1)
    assert text.startswith("Sorry, Confirm failed unexpectedly")
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info  # the traceback is in the log under that id
    assert refs(world["work"]) == before
