"""Long work off the request path, through real signed HTTP: confirmed builds run in the
bounded job runner (TORCHBOT_JOB_WORKERS) with a real slow build command while /variant keeps
answering at once; builds beyond the pool wait in a queue and say so; /torchbot status lists
them; each job reports in a thread whose parent is edited in place. Long output goes Slack's
way: a 131-variant plan is paged with nothing cut, and the build result puts the counts and
failures first and attaches the full list as a file."""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

import pytest

from bot.frontends.slack.app import create_app
from bot.frontends.slack.http_mode import make_http_server, start_in_thread
from config.settings import Settings
from release.context import Context
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_serve import post, sign

SECRET = "jobs-signing-secret"


def repo(tmp: Path, branches: dict[str, list[str]]) -> Path:
    """A git repo with one branch per entry, each holding those recipes."""
    first, *rest = branches
    work = fx.make_repo(tmp, packages=branches[first], branch=first)
    for name in rest:
        fx.sh(work, "git", "checkout", "--quiet", "-b", name, "main")
        fx.write_recipes(work, fx.PIN, name, branches[name])
        fx.sh(work, "git", "add", ".flox")
        fx.sh(work, "git", "commit", "--quiet", "-m", f"recipes of {name}")
    fx.sh(work, "git", "checkout", "--quiet", "main")
    return work


class World:
    def __init__(self, tmp: Path, work: Path, slack: FakeSlack, **settings):
        s = Settings(slack_bot_token="xoxb-test", slack_signing_secret=SECRET, slack_api_url=slack.url,
                     admins=["UADMIN"], allowed_channels=["CREL"], repo_path=work, state_db=str(tmp / "s.db"),
                     audit_log=tmp / "audit.log", log_dir=tmp / "logs", _env_file=None, **settings)
        self.slack = slack
        self.app = create_app(Context(s, use_repo=False))
        self.server = make_http_server(self.app, "127.0.0.1", 0)
        start_in_thread(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_port}/slack/events"
        self.n = 0

    def close(self) -> None:
        self.app._torchbot_chat.runner.shutdown()
        self.server.shutdown()
        self.server.server_close()

    def slash(self, command: str, text: str) -> tuple[int, str, int]:
        self.n += 1
        body = urllib.parse.urlencode({"command": command, "text": text, "user_id": "UADMIN", "channel_id": "CREL",
                                       "response_url": self.slack.response_url(self.n)}).encode()
        status, reply = post(self.url, body, sign(body, SECRET))
        return status, reply, self.n

    def plan(self, text: str) -> tuple[str, dict]:
        _, _, n = self.slash("/build", text)
        posts = self.slack.wait_for(lambda p, b: p == f"/response/{n}" and "confirm_plan" in json.dumps(b), 60)
        msg = next(b for p, b in posts if p == f"/response/{n}" and "confirm_plan" in json.dumps(b))
        pid = next(e["value"] for blk in msg["blocks"] if blk["type"] == "actions" for e in blk["elements"]
                   if e["action_id"] == "confirm_plan")
        return pid, msg

    def confirm(self, pid: str) -> str:
        self.n += 1
        payload = {"type": "block_actions", "user": {"id": "UADMIN"}, "channel": {"id": "CREL"},
                   "response_url": self.slack.response_url(self.n),
                   "actions": [{"action_id": "confirm_plan", "value": pid, "type": "button"}]}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        assert post(self.url, body, sign(body, SECRET))[0] == 200
        n = self.n
        posts = self.slack.wait_for(lambda p, b: p == f"/response/{n}" and "Confirmed" in b.get("text", ""))
        return next(b["text"] for p, b in posts if p == f"/response/{n}" and "Confirmed" in b.get("text", ""))


BRANCHES = {f"pytorch-2.{i}-python313": [f"pytorch-python313-cpu-avx{i}"] for i in range(6)}


@pytest.fixture
def six(tmp_path):
    """Six branches of one slow build each, three job workers. A build records that it started
    and then waits for the test to open its gate, so what the test sees while builds run does
    not depend on how fast this machine is."""
    gate, starts = tmp_path / "gate", tmp_path / "starts"
    with FakeSlack() as slack:
        world = World(tmp_path, repo(tmp_path, BRANCHES), slack, job_workers=3,
                      build_command=f"echo {{package}} >> {starts} && while [ ! -e {gate} ]; do sleep 0.05; done"
                                    " && echo ok > result-{package}")
        world.gate, world.starts = gate, starts
        yield world
        world.gate.touch()  # never leave a build waiting
        world.close()


def _wait(condition, what: str, timeout: float = 120.0, seen=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}; {seen()}"
        time.sleep(0.05)


def test_six_slow_builds_queue_in_the_pool_while_variant_answers_at_once(six):
    pids = [six.plan(branch)[0] for branch in BRANCHES]
    confirmed = [six.confirm(pid) for pid in pids]
    assert sum("running as job" in c for c in confirmed) == 3
    assert sum("queued as job" in c and "in line" in c for c in confirmed) == 3  # queued, not refused

    def started() -> list[str]:
        return six.starts.read_text().split() if six.starts.exists() else []

    _wait(lambda: len(started()) == 3, "the first three builds to start")
    status, reply, n = six.slash("/torchbot", "status")  # acked at once, answered through the response URL
    assert status == 200 and "Working on /torchbot status" in reply
    posts = six.slack.wait_for(lambda p, b: p == f"/response/{n}" and "running" in json.dumps(b))
    status_text = json.dumps([b for p, b in posts if p == f"/response/{n}"])
    assert "3 running, 3 queued (3 workers)" in status_text and "/build pytorch-2.5-python313" in status_text

    # /variant is answered in the request, while every worker is busy with a build that cannot end yet
    for _ in range(5):
        status, reply, _ = six.slash("/variant", "H100 with Graviton3")
        assert status == 200 and "sm90-armv8_2" in reply
    assert len(started()) == 3  # the other three wait in the queue: not six at once

    def results() -> int:
        return sum(1 for m in six.slack.messages("CREL") if m.get("thread_ts") and "Build: 1 succeeded" in m["text"])

    assert results() == 0
    six.gate.touch()
    _wait(lambda: results() == 6, "six build results in their threads",
          seen=lambda: f"thread replies: {[m['text'][:160] for m in six.slack.messages('CREL') if m.get('thread_ts')]}")
    assert sorted(started()) == sorted(p for ps in BRANCHES.values() for p in ps)  # each built once
    parents = [m for m in six.slack.messages("CREL") if not m.get("thread_ts")]
    assert len(parents) == 6
    _wait(lambda: all("done after" in m["text"] and "edited" in m
                      for m in six.slack.messages("CREL") if not m.get("thread_ts")),
          "every job message edited in place with chat.update")


def test_long_output_is_paged_summarised_and_attached_never_cut(tmp_path):
    packages = [f"pytorch-python313-cuda12_8-sm{90 + i % 10}-v{i:03d}" for i in range(128)]
    bad = [f"pytorch-python313-cuda12_8-sm61-bad{i}" for i in range(3)]
    with FakeSlack() as slack:
        world = World(tmp_path, repo(tmp_path, {fx.BRANCH: packages + bad}), slack, build_jobs=4,
                      build_command="case {package} in *bad*) exit 1;; esac; echo ok > result-{package}")
        try:
            _, plan = world.plan(fx.BRANCH)
            shown = json.dumps(plan["blocks"])
            code = [b for b in plan["blocks"] if b["type"] == "section" and b["text"]["text"].startswith("```")]
            assert len(code) >= 2 and all(b["text"]["text"].endswith("```") for b in code)  # paged, fences closed
            assert all(len(b["text"]["text"]) <= 3000 for b in plan["blocks"] if b["type"] == "section")
            assert all(p in shown for p in packages + bad)  # nothing cut
            assert plan["text"].startswith("Plan for /build")

            world.confirm(world.plan(fx.BRANCH)[0])
            slack.wait_for(lambda p, b: p == "/api/files.completeUploadExternal", 120)
            result = next(m for m in slack.messages("CREL") if m.get("thread_ts") and m.get("blocks"))
            first = [b["text"]["text"] for b in result["blocks"]][:2]
            assert first[0] == "*Build: 3 failed, 128 succeeded (131 variant(s)).*"  # counts first
            assert first[1].startswith("*Failed*") and all(b in first[1] for b in bad)  # then the failures
            (upload,) = slack.files.values()
            assert upload["thread_ts"] == result["thread_ts"]
            assert all(p in upload["content"] for p in packages + bad)  # the full list, as a file
        finally:
            world.close()
