"""Pending plans survive a crash: a real `torchbot serve --http` process shows /bump plans, is
killed with SIGKILL, and a new process on the same state DB takes the Confirm clicks: the
asker's applies when nothing moved, another admin's is refused, and a plan whose branch
moved since is refused naming what moved. Expiry is shown on the dispatcher itself."""

from __future__ import annotations

import json
import urllib.parse
from datetime import UTC, datetime

from bot.frontends.chat import Chat, PlanReply
from config.settings import Settings
from release.context import Context
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_pins import NEW, PIN_A, PIN_B, PIN_C, build_repo, git, refs, small_catalog_branches
from tests.support.fixtures_serve import ServeProcess, post, sign
from tests.support.waiting import wait_for

SECRET = "restart-signing-secret"
CUDA_ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13_0", "cudaPackages_13_1"}


def nixpkgs() -> FakeNixpkgs:
    nix = FakeNixpkgs()
    for rev, torch in ((PIN_A, "2.8.0"), (PIN_B, "2.9.1"), (PIN_C, "2.9.1"), (NEW, "2.8.4")):
        nix.add_rev(rev, torch, CUDA_ALL)
    nix.channels["nixos-unstable"] = NEW
    return nix


def test_confirm_after_sigkill_applies_refuses_others_and_names_what_moved(tmp_path):
    with FakeSlack(token="xoxb-test") as slack, nixpkgs() as nix:
        work, _ = build_repo(tmp_path, small_catalog_branches())
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_SIGNING_SECRET=SECRET,
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN,UADMIN2", TORCHBOT_ALLOWED_CHANNELS="CREL",
                   TORCHBOT_REPO_PATH=str(work), TORCHBOT_CHANNELS_URL=nix.channels_url,
                   TORCHBOT_GITHUB_API_URL=nix.api_url, TORCHBOT_NIXPKGS_TARBALL_URL=nix.tarball_url,
                   TORCHBOT_STATE_DB=str(tmp_path / "state" / "s.db"),
                   TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"))

        def serve() -> tuple[ServeProcess, str]:
            bot = ServeProcess(tmp_path, env, ["--http", "--host", "127.0.0.1", "--port", "0", "--no-schedule"])
            assert "in HTTP mode" in bot.wait_line()
            return bot, bot.events_url()

        def slash(url, text, n):
            body = urllib.parse.urlencode({"command": "/bump", "text": text, "user_id": "UADMIN", "channel_id": "CREL",
                                           "response_url": slack.response_url(n)}).encode()
            assert post(url, body, sign(body, SECRET))[0] == 200
            blocks = slack.wait_for(lambda p, b: p == f"/response/{n}" and "confirm_plan" in json.dumps(b), 30)
            plan = next(b for p, b in blocks if p == f"/response/{n}" and "confirm_plan" in json.dumps(b))
            return next(e["value"] for blk in plan["blocks"] if blk["type"] == "actions" for e in blk["elements"]
                        if e["action_id"] == "confirm_plan")

        def click(url, pid, user, n):
            payload = {"type": "block_actions", "user": {"id": user}, "channel": {"id": "CREL"},
                       "response_url": slack.response_url(n),
                       "actions": [{"action_id": "confirm_plan", "value": pid, "type": "button"}]}
            body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
            assert post(url, body, sign(body, SECRET))[0] == 200

        first, url = serve()
        p1 = slash(url, "main", 1)
        p2 = slash(url, "main", 2)
        before = refs(work)["refs/heads/main"]
        first.kill()  # SIGKILL between plan and Confirm: nothing in memory survives

        second, url = serve()
        try:
            click(url, p1, "UADMIN2", 3)  # another admin may not confirm someone else's plan
            slack.wait_for(lambda p, b: p == "/response/3" and "Only the admin who asked (UADMIN)" in b.get("text", ""))
            assert refs(work)["refs/heads/main"] == before

            click(url, p1, "UADMIN", 4)  # the asker's Confirm applies: nothing moved
            slack.wait_for(lambda p, b: p == "/response/4" and "Confirmed /bump main" in b.get("text", ""))
            slack.wait_for(lambda p, b: b.get("thread_ts") and "nixpkgs: bump pin" in json.dumps(b), 60)
            after = refs(work)["refs/heads/main"]
            assert after != before
            assert NEW[:7] in git(work, "log", "-1", "--format=%s", "main")

            click(url, p2, "UADMIN", 5)  # made from the old main: refused, naming what moved
            posts = slack.wait_for(lambda p, b: b.get("thread_ts") and "Refused /bump main" in json.dumps(b), 60)
            refusal = next(b["text"] for _, b in posts if b.get("thread_ts") and "Refused /bump main" in json.dumps(b))
            assert f"branch main moved from {before[:12]} to {after[:12]}" in refusal
            assert refs(work)["refs/heads/main"] == after
        finally:
            second.stop()
        audit = (tmp_path / "audit.log").read_text()
        assert audit.count("plan /bump main") == 2 and audit.count("confirm /bump main") == 2


def test_an_expired_plan_says_so_and_a_plan_with_nothing_to_do_has_no_confirm(tmp_path):
    from tests.support import fixtures_builds as fx

    ctx = Context(Settings(admins=["UADMIN"], plan_ttl_seconds=1, repo_path=fx.make_repo(tmp_path),
                           state_db=str(tmp_path / "s.db"), audit_log=tmp_path / "a.log", _env_file=None),
                  use_repo=False)
    chat = Chat(ctx)
    plan = chat.command("build", fx.BRANCH, user="UADMIN")
    assert isinstance(plan, PlanReply)
    wait_for(lambda: datetime.now(UTC) > plan.pending.expires, "the plan's expiry")  # 1 s after it was made
    late = chat.confirm(plan.pending.id, "UADMIN")
    assert late.ok is False and "expired at" in late.text() and f"/build {fx.BRANCH} again" in late.text()
    nothing = chat.command("publish", fx.BRANCH, user="UADMIN")  # nothing was built, so nothing to publish
    assert not isinstance(nothing, PlanReply) and "Nothing to publish" in nothing.text()
    chat.runner.shutdown()
