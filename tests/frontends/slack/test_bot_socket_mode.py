"""Socket Mode that holds: a real `torchbot serve` process against a loopback Slack (a Web API
answering apps.connections.open, and a WebSocket server speaking Socket Mode: hello,
envelopes, acks, disconnect/refresh_requested, and each kind of drop). Every drop is timed:
the bot is back within 5 s, and burns no CPU while it is away."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.fakes_slack import FakeSlack
from tests.support.fakes_socket_mode import FakeSocketMode
from tests.support.fixtures_serve import ServeProcess

BACK_WITHIN = 5.0
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def variant(sm: FakeSocketMode, conn=None) -> dict:
    return sm.request("slash_commands", {"command": "/variant", "text": "p5.48xlarge", "user_id": "U1",
                                         "channel_id": "C1", "team_id": "T1", "response_url": "http://127.0.0.1:9/r"},
                      conn=conn)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("socket")
    with FakeSlack() as api, FakeSocketMode(api) as sm:
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_APP_TOKEN="xapp-test\n",
                   TORCHBOT_SLACK_API_URL=api.url, TORCHBOT_STATE_DB=str(tmp / "state.db"),
                   TORCHBOT_AUDIT_LOG=str(tmp / "audit.log"))
        bot = ServeProcess(tmp, env, ["--socket", "--no-schedule"])
        try:
            yield {"api": api, "sm": sm, "bot": bot, "pid": bot.pid}
        finally:
            bot.stop()


def test_start_line_names_bot_workspace_and_mode_and_commands_are_acked(world):
    line = world["bot"].wait_line()
    assert line.startswith("torchbot: connected as @torchbot (UBOT) to workspace Acme (T1) in Socket Mode"), line
    assert len(world["bot"].lines) == 1
    reply = variant(world["sm"])
    assert "-sm90-avx2" in str(reply["blocks"])  # the answer is the ack's payload
    unknown = world["sm"].request("slash_commands", {"command": "/deploy", "text": "", "user_id": "U1",
                                                     "channel_id": "C1", "response_url": "http://127.0.0.1:9/r"})
    assert "does not know /deploy" in unknown["text"] and "/variant" in unknown["text"]
    # the app-level token's trailing newline was stripped: the fake accepts only "Bearer xapp-test"
    assert world["api"].method_calls("apps.connections.open")


@pytest.mark.parametrize("kind", ["close", "fin", "reset", "silent"])
def test_back_within_5_s_of_each_kind_of_drop_without_a_busy_loop(world, kind):
    sm = world["sm"]
    world["bot"].wait_line()
    sm.wait_connection()
    time.sleep(0.5)
    cpu0 = cpu_seconds(world["pid"])
    t0 = sm.drop(kind)
    conn = sm.wait_connection(after=t0, timeout=30)
    back = conn.hello_sent - t0
    cpu = cpu_seconds(world["pid"]) - cpu0
    assert back < BACK_WITHIN, f"{kind}: back after {back:.2f} s"
    assert cpu < 0.5 * max(1.0, back), f"{kind}: {cpu:.2f} s of CPU in {back:.2f} s away"
    assert "-sm90-avx2" in str(variant(sm, conn)["blocks"])  # and it answers on the new connection


def test_refresh_requested_moves_to_a_new_connection(world):
    sm = world["sm"]
    sm.wait_connection()
    t0 = sm.refresh(close_after=10.0)  # Slack closes a refreshed connection about 10 s after warning
    conn = sm.wait_connection(after=t0, timeout=10)
    assert conn.hello_sent < t0 + 10.0  # moved on the warning, not after Slack dropped the old connection
    assert "-sm90-avx2" in str(variant(sm, conn)["blocks"])


def test_an_outage_costs_no_cpu_and_no_flood_and_ends_in_a_reconnect(world):
    sm, api = world["sm"], world["api"]
    sm.wait_connection()
    time.sleep(0.5)
    before = len(api.method_calls("apps.connections.open"))
    api.down = sm.down = True
    cpu0 = cpu_seconds(world["pid"])
    sm.drop("fin")
    time.sleep(5)  # an outage the bot sees through several back-offs (1, 2, ... s)
    cpu = cpu_seconds(world["pid"]) - cpu0
    tries = len(api.method_calls("apps.connections.open")) - before
    api.down = sm.down = False
    t1 = time.monotonic()
    conn = sm.wait_connection(after=t1, timeout=20)
    assert cpu < 0.3, f"{cpu:.2f} s of CPU in 5 s of outage"
    assert 1 <= tries <= 5, tries  # backing off, not hammering apps.connections.open
    assert conn.hello_sent - t1 < 10  # the back-off is at most 8 s this early
    assert world["bot"].proc.poll() is None
