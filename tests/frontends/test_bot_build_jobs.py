"""Slack build jobs that hold over a restart and show their progress, against the loopback fake
Slack and real `torchbot serve` processes: a bot SIGKILLed during a real build takes the
build's processes with it; the next start resolves the run, edits the job's message to say
what happened and how to resume, removes the worktree; `/build B --resume` builds what was
interrupted, and a second build of a variant is never offered while one runs. The job's
message is edited in place with the counts, at most every TORCHBOT_PROGRESS_SECONDS, with
failures linked to their logs. Every step waits on an event (pid files, posts, rows)."""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

from release.state import BuildRun, open_state
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_serve import ServeProcess, post, sign
from tests.support.waiting import wait_for

SECRET = "build-jobs-signing-secret"
TORCH = sorted(p for p in fx.ALL if p.startswith("pytorch-"))


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


class Bot:
    """One `torchbot serve --http` process and the Slack requests a user makes to it."""

    n = 0

    def __init__(self, tmp: Path, slack: FakeSlack, env: dict[str, str]):
        self.slack = slack
        self.proc = ServeProcess(tmp, env, ["--http", "--host", "127.0.0.1", "--port", "0", "--no-schedule"])
        self.start_line = self.proc.wait_line()
        assert "in HTTP mode" in self.start_line, self.proc.err
        self.url = self.proc.events_url()

    def _next(self) -> int:
        Bot.n += 1
        return Bot.n

    def plan(self, text: str) -> tuple[str | None, str]:
        """/build TEXT: (the Confirm button's plan id or None, the plan's text)."""
        n = self._next()
        body = urllib.parse.urlencode({"command": "/build", "text": text, "user_id": "UADMIN", "channel_id": "CREL",
                                       "response_url": self.slack.response_url(n)}).encode()
        assert post(self.url, body, sign(body, SECRET))[0] == 200
        posts = self.slack.wait_for(lambda p, b: p == f"/response/{n}" and "Working on" not in b.get("text", ""), 60)
        msg = next(b for p, b in posts if p == f"/response/{n}" and "Working on" not in b.get("text", ""))
        pid = next((e["value"] for blk in msg.get("blocks", []) if blk["type"] == "actions" for e in blk["elements"]
                    if e["action_id"] == "confirm_plan"), None)
        return pid, json.dumps(msg)

    def confirm(self, pid: str) -> None:
        n = self._next()
        payload = {"type": "block_actions", "user": {"id": "UADMIN"}, "channel": {"id": "CREL"},
                   "response_url": self.slack.response_url(n),
                   "actions": [{"action_id": "confirm_plan", "value": pid, "type": "button"}]}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        assert post(self.url, body, sign(body, SECRET))[0] == 200
        self.slack.wait_for(lambda p, b: p == f"/response/{n}" and "Confirmed" in b.get("text", ""), 30)


def parent(slack: FakeSlack, title: str) -> dict:
    return next(m for m in slack.messages("CREL") if not m.get("thread_ts") and m["text"].startswith(f"`{title}`"))


def test_a_bot_killed_during_a_build_is_resolved_told_and_resumed_on_restart(tmp_path: Path) -> None:
    work = fx.make_repo(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    with FakeSlack(token="xoxb-test") as slack:
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_SIGNING_SECRET=SECRET,
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN", TORCHBOT_ALLOWED_CHANNELS="CREL",
                   TORCHBOT_REPO_PATH=str(work), TORCHBOT_STATE_DB=str(tmp_path / "state.sqlite"),
                   TORCHBOT_LOG_DIR=str(tmp_path / "logs"), TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"),
                   TORCHBOT_BUILD_JOBS="2", TORCHBOT_BUILD_RESULT_LINK="README.md",
                   TORCHBOT_BUILD_COMMAND=(f"echo $$ > {gate}/{{package}}.pid; sleep 300 & "
                                           f"echo $! > {gate}/{{package}}.child; wait"))
        first = Bot(tmp_path, slack, env)
        assert "in HTTP mode" in first.start_line and first.start_line.endswith(
            f"; local builds run TORCHBOT_BUILD_COMMAND ({env['TORCHBOT_BUILD_COMMAND']})")
        pid, _ = first.plan(f"{fx.BRANCH} pytorch-*")
        first.confirm(pid)
        def written() -> list[int] | None:  # each file is created, then written: wait for all four numbers
            pids = [f.read_text().strip() for f in gate.glob("*.*")]
            return [int(p) for p in pids] if len(pids) == 4 and all(pids) else None

        pids = wait_for(written, "two builds")
        assert len(pids) == 4 and all(alive(p) for p in pids)
        title = f"/build {fx.BRANCH} pytorch-*"
        ts = parent(slack, title)["ts"]
        # while it builds, no second build of those variants is offered
        again, text = first.plan(f"{fx.BRANCH} pytorch-*")
        assert again is None and text.count("already building since") == 3

        first.proc.kill()
        wait_for(lambda: not any(alive(p) for p in pids), "the builds to die with the bot")

        second = Bot(tmp_path, slack, {**env, "TORCHBOT_BUILD_COMMAND": "true"})
        try:
            wait_for(lambda: any("1 build run(s) a stopped torchbot left were resolved; 1 job message(s) updated"
                                 in line for line in second.proc.err), "the log line of the restart")
            edited = wait_for(lambda: "interrupted" in parent(slack, title)["text"] and parent(slack, title),
                              "the job message to be updated")
            assert edited["ts"] == ts and "edited" in edited
            assert "3 build(s) did not end and were stopped" in edited["text"]
            assert f"`/build {fx.BRANCH} --resume`" in edited["text"]
            assert any("Resume with" in m["text"] for m in slack.thread("CREL", ts) if m["ts"] != ts)
            assert "torchbot-wt-" not in fx.sh(work, "git", "worktree", "list")
            with open_state(f"sqlite:///{tmp_path / 'state.sqlite'}").session() as s:
                (run,) = s.query(BuildRun).all()
                assert run.state == "interrupted" and run.notified and not Path(run.worktree).exists()

            pid, text = second.plan(f"{fx.BRANCH} --resume")
            assert all(p in text for p in TORCH) and fx.COMPANION not in text
            second.confirm(pid)
            resumed = wait_for(lambda: next((m for m in slack.messages("CREL") if m.get("thread_ts")
                                             and "Build: 3 succeeded" in m["text"]), None), "the resumed build")
            assert parent(slack, f"/build {fx.BRANCH} --resume")["ts"] == resumed["thread_ts"]
        finally:
            second.proc.stop()
    builds = open_state(f"sqlite:///{tmp_path / 'state.sqlite'}").builds(fx.BRANCH, latest_only=False)
    per_variant: dict[str, list[str]] = {}
    for b in builds:
        per_variant.setdefault(b.package, []).append(b.state)
    assert per_variant == {p: ["interrupted", "succeeded"] for p in TORCH}  # one at a time, never a duplicate


class TimedSlack(FakeSlack):
    """The fake Slack, noting when each chat.update arrives."""

    def __init__(self) -> None:
        super().__init__(token="xoxb-test")
        self.updates: list[tuple[float, str]] = []

    def _m_chat_update(self, p):
        self.updates.append((time.monotonic(), str(p.get("text", ""))))
        return super()._m_chat_update(p)


def test_the_job_message_shows_progress_at_most_every_interval_with_failures_linked(tmp_path: Path) -> None:
    work = fx.make_repo(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    with TimedSlack() as slack:
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_SIGNING_SECRET=SECRET,
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN", TORCHBOT_ALLOWED_CHANNELS="CREL",
                   TORCHBOT_REPO_PATH=str(work), TORCHBOT_STATE_DB=str(tmp_path / "state.sqlite"),
                   TORCHBOT_LOG_DIR=str(tmp_path / "logs"), TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"),
                   TORCHBOT_BUILD_JOBS="4", TORCHBOT_PROGRESS_SECONDS="1",
                   TORCHBOT_LOG_URL="https://logs.example/torchbot",
                   TORCHBOT_BUILD_COMMAND=("case {package} in *sm61*) exit 1;; esac; "
                                           f"while [ ! -e {gate}/go ]; do sleep 0.05; done; "
                                           "echo ok > result-{package}"))
        bot = Bot(tmp_path, slack, env)
        try:
            pid, _ = bot.plan(fx.BRANCH)
            bot.confirm(pid)
            title = f"/build {fx.BRANCH}"
            link = wait_for(lambda: next((t for _, t in slack.updates if "failed: <https://" in t), None),
                            "a progress line with the failure")
            assert "0/4 built, 1 failed, 2 running" in link
            assert f"failed: <https://logs.example/torchbot/{fx.BRANCH}/{fx.FAILING}-" in link
            assert link.split(f"{fx.FAILING}-", 1)[1].split("|", 1)[0].endswith(".log")
            (gate / "go").touch()
            wait_for(lambda: "ended after" in parent(slack, title)["text"], "the job to end")
        finally:
            bot.proc.stop()
    progress = [(t, text) for t, text in slack.updates if "running since" in text and " built" in text]
    assert len(progress) >= 2  # edited in place as it went (the throttle: tests/frontends/test_job_report_throttle.py)
    final = parent(slack, title)["text"]
    assert final.startswith(f"`{title}` (job ") and "ended after" in final  # the result replaced the progress
    assert progress[-1][0] < next(t for t, text in slack.updates if "ended after" in text)  # none after the end
