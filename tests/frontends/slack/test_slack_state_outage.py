"""A state store that stops answering (a real PostgreSQL server frozen with SIGSTOP, as in a
network partition: its connections stay open and nothing comes back) never delays an ack and
never makes the bot say something untrue: `/torchbot status` is acked at once and then says
the store is not answering; /variant still answers; a mutating command says no plan was
made. After SIGCONT the store answers again."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_postgres import PostgresServer
from tests.support.fixtures_slackbot import SlackBot, slash_body

NOT_ANSWERING = "the state store is not answering; answers still work"


def server_pids(server: PostgresServer) -> list[int]:
    """The postmaster and every process it started (the backends holding our connections)."""
    master = int((server.dir / "data" / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            children.append(int(stat.parent.name))
    return [master, *children]


@pytest.fixture
def frozen_world(tmp_path):
    server = PostgresServer().start()  # its own server: freezing it holds up no other test
    stopped: list[int] = []

    def freeze() -> None:
        for pid in server_pids(server):
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    def thaw() -> None:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        stopped.clear()

    with FakeSlack() as slack:
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        bot = SlackBot(tmp_path, slack, repo_path=work, state_db=server.new_database(), state_timeout_seconds=1.0)
        try:
            yield slack, bot, freeze, thaw
        finally:
            thaw()
            bot.close()
            server.stop()


def timed_slash(bot: SlackBot, slack: FakeSlack, command: str, text: str, n: int) -> tuple[float, str]:
    start = time.monotonic()
    status, ack = bot.deliverer.send(slash_body(slack, command, text, n))
    assert status == 200, ack
    return time.monotonic() - start, ack


def test_a_frozen_postgresql_gets_a_prompt_ack_and_a_truthful_answer(frozen_world):
    slack, bot, freeze, thaw = frozen_world
    took, _ = timed_slash(bot, slack, "/torchbot", "status", 1)  # the store answers: a warm connection
    slack.wait_for(lambda p, b: p == "/response/1" and "pending plans: 0" in json.dumps(b), 30)

    freeze()
    took, ack = timed_slash(bot, slack, "/torchbot", "status", 2)
    assert took < 3.0, f"acked after {took:.2f} s"
    assert "Working on /torchbot status" in ack and "does not know" not in ack
    posts = slack.wait_for(lambda p, b: p == "/response/2" and NOT_ANSWERING in json.dumps(b), 30)
    status = json.dumps([b for p, b in posts if p == "/response/2"])
    assert "pending plans: unknown" in status and "jobs: 0 running" in status  # what it could read, it says

    took, ack = timed_slash(bot, slack, "/variant", "H100 with Graviton3", 3)  # answers still work
    assert took < 3.0 and "sm90-armv8_2" in ack

    took, ack = timed_slash(bot, slack, "/build", fx.BRANCH, 4)
    assert took < 3.0 and "Working on /build" in ack
    posts = slack.wait_for(lambda p, b: p == "/response/4" and NOT_ANSWERING in json.dumps(b), 30)
    text = json.dumps([b for p, b in posts if p == "/response/4"])
    assert "No plan was made for /build" in text and "confirm_plan" not in text

    thaw()
    took, _ = timed_slash(bot, slack, "/torchbot", "status", 5)
    slack.wait_for(lambda p, b: p == "/response/5" and "pending plans: 0" in json.dumps(b), 60)


def test_the_timeout_setting_is_checked_and_reaches_the_database_driver(tmp_path):
    from config.errors import ConfigError
    from config.settings import load_settings
    from release.state import State

    for bad in ("0", "-1", "soon"):
        with pytest.raises(ConfigError) as err:
            load_settings(state_timeout_seconds=bad, _env_file=None)
        assert str(err.value).startswith("TORCHBOT_STATE_TIMEOUT_SECONDS: ") and "\n" not in str(err.value)
    state = State(f"sqlite:///{tmp_path / 's.db'}", timeout=2.5)
    with state.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 2500
