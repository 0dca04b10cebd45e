"""Two `torchbot serve` replicas on one real PostgreSQL server (issue 26, point 1): exactly one
runs the schedule (the leader lease), a slow publish command and a slow Slack do not make either
run a publish or post an announcement twice, a third process publishing and flushing at the same
time takes nothing twice either, `/torchbot status` names the leader, and a killed leader is
replaced within the lease."""

from __future__ import annotations

import json
import urllib.parse
from collections import Counter
from pathlib import Path

from release.builds import run as builds
from release.publishing import announce, publish
from release.schedule.leader import KEY
from release.state import open_state
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_postgres import postgres  # noqa: F401  (fixture)
from tests.support.fixtures_serve import ServeProcess, post, sign
from tests.support.waiting import wait_for

SECRET = "replica-signing-secret"
PKGS = [*fx.OK, fx.COMPANION]
LEASE = 3


def _leader_pid(url: str) -> int | None:
    held = open_state(url).claim_holder(KEY)
    return int(held.owner.split(":")[1]) if held else None


def _status(slack: FakeSlack, events: str, n: int) -> str:
    body = urllib.parse.urlencode({"command": "/torchbot", "text": "status", "user_id": "UADMIN",
                                   "channel_id": "CREL", "response_url": slack.response_url(n)}).encode()
    assert post(events, body, sign(body, SECRET))[0] == 200
    posts = slack.wait_for(lambda p, b: p == f"/response/{n}", 30)
    return json.dumps([b for p, b in posts if p == f"/response/{n}"])


def test_two_replicas_publish_and_announce_once_and_a_killed_leader_is_replaced(postgres, tmp_path: Path):  # noqa: F811
    url = postgres.new_database()
    repo = fx.make_repo(tmp_path, packages=PKGS)
    marker = tmp_path / "published.txt"
    command = f"sleep 1; echo {{package}} >> {marker}"  # a slow publish: it overlaps the next slot
    with FakeSlack(token="xoxb-test") as slack:
        ctx = fx.context(tmp_path, state_db=url, build_command="true", build_result_link="README.md",
                         publish_command=command, slack_bot_token=slack.token, slack_api_url=slack.url)
        builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
        slack.slow = {"chat.postMessage": 0.6, "chat.update": 0.6, "conversations.history": 0.3}
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_SIGNING_SECRET=SECRET,
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN", TORCHBOT_ALLOWED_CHANNELS="CREL",
                   TORCHBOT_STATE_DB=url, TORCHBOT_REPO_PATH=str(repo), TORCHBOT_PUBLISH_COMMAND=command,
                   TORCHBOT_FLOX_ORG="acme", TORCHBOT_ANNOUNCE_CHANNEL="C0ANNOUNCE",
                   TORCHBOT_PUBLISH_INTERVAL_SECONDS="1", TORCHBOT_FLUSH_INTERVAL_SECONDS="1",
                   TORCHBOT_POLL_INTERVAL_SECONDS="1", TORCHBOT_LEADER_LEASE_SECONDS=str(LEASE),
                   TORCHBOT_LOG_DIR=str(tmp_path / "logs"), TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"),
                   TORCHBOT_CACHE_DIR="off")
        bots = {}
        try:
            for _ in range(2):
                bot = ServeProcess(tmp_path, env, ["--http", "--host", "127.0.0.1", "--port", "0"])
                assert "in HTTP mode" in bot.wait_line(60)
                bots[bot.pid] = (bot, bot.events_url())  # each on a port of its own (--port 0)
            # meanwhile a third process publishes and flushes the same rows
            other = publish.publish_pending(ctx, None, repo=repo)
            announce.flush(ctx)
            wait_for(lambda: marker.exists() and len(marker.read_text().split()) >= len(PKGS), "every publish", 120)
            wait_for(lambda: any(f"all {len(PKGS)} variant(s) published" in m["text"]
                                 for m in slack.messages("C0ANNOUNCE") if not m.get("thread_ts")),
                     "the release summary", 120)
            published = Counter(marker.read_text().split())
            assert published == Counter(PKGS), published  # each variant published once, by whoever claimed it
            assert {r["state"] for r in other} <= {"published", "skipped"}
            def listed() -> Counter:
                return Counter(line.split("`")[1] for m in slack.messages("C0ANNOUNCE") if m.get("thread_ts")
                               for line in m["text"].splitlines() if line.startswith("•"))

            wait_for(lambda: sum(listed().values()) >= len(PKGS), "every variant in the thread", 120)
            assert listed() == Counter(PKGS), listed()  # every variant announced once, whoever flushed it
            posts = slack.method_calls("chat.postMessage")
            kinds = Counter(p["metadata"]["event_payload"]["kind"] for p in posts)
            assert kinds == Counter({"parent": 1, "group": 2}), kinds  # a parent, a reply per accelerator

            leader = wait_for(lambda: _leader_pid(url), "a leader")
            assert leader in bots
            (lead, lead_url), (follower, follow_url) = bots[leader], next(v for k, v in bots.items() if k != leader)
            assert f":{leader} (this process)" in _status(slack, lead_url, 1)
            told = _status(slack, follow_url, 2)
            assert "schedule: led by" in told and f":{leader}," in told and "this process" not in told
            lead.kill()  # SIGKILL: the lease is not given up, it expires
            wait_for(lambda: _leader_pid(url) == follower.pid, "the survivor to take the lead", 60)
            assert f":{follower.pid} (this process)" in _status(slack, follow_url, 3)
            wait_for(lambda: any(r.owner.split(":")[1] == str(follower.pid) and r.finished
                                 for r in open_state(url).job_runs("publish")), "the new leader's first publish run")
        finally:
            for bot, _ in bots.values():
                bot.stop()
    assert Counter(marker.read_text().split()) == Counter(PKGS)  # nothing published again after the takeover
