"""Slack figures, each against a real `torchbot serve` process on loopback stand-ins for Slack:

1. /variant over signed HTTP, 20 concurrent clients, 1,000 requests, idle (goal: p99 < 100 ms),
   and the serving process's RSS;
2. the same while six confirmed builds run (a `sleep` build command, TORCHBOT_JOB_WORKERS=6)
   (goal: p99 < 100 ms, as when idle);
3. Socket Mode: time from each kind of drop (close frame, FIN without close, reset, silent
   link, disconnect/refresh_requested) to the bot's next hello, 3 times each (goal: < 5 s).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from tests.support.fakes_slack import FakeSlack  # noqa: E402
from tests.support.fakes_socket_mode import FakeSocketMode  # noqa: E402
from tests.support.fixtures_serve import ServeProcess, free_port, post, sign  # noqa: E402

SECRET = "bench-signing-secret"
QUESTIONS = ["H100 with Graviton3", "p5.48xlarge", "RTX 4090 + Ryzen 9 7950X", "DGX Spark", "L40S int8 inference",
             "GTX 1080 Ti i7-2600K", "MacBook Pro M3", "A100 python 3.12", "no GPU, Xeon Gold 6248", "Tesla K80"]


def slash(url: str, command: str, text: str, response_url: str = "http://127.0.0.1:9/unused") -> float:
    body = urllib.parse.urlencode({"command": command, "text": text, "user_id": "UADMIN", "channel_id": "CREL",
                                   "response_url": response_url}).encode()
    t = time.perf_counter()
    status, _ = post(url, body, sign(body, SECRET))
    assert status == 200, status
    return time.perf_counter() - t


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def variant_load(url: str) -> tuple[float, float, float]:
    for i in range(50):  # warm up
        slash(url, "/variant", QUESTIONS[i % len(QUESTIONS)])
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=20) as pool:
        lat = sorted(pool.map(lambda i: slash(url, "/variant", QUESTIONS[i % len(QUESTIONS)]), range(1000)))
    wall = time.perf_counter() - start
    return statistics.median(lat) * 1000, lat[int(len(lat) * 0.99) - 1] * 1000, 1000 / wall


def start_six_builds(url: str, slack: FakeSlack, builds: list[tuple[str, str]]) -> None:
    for n, (branch, package) in enumerate(builds, start=1):
        slash(url, "/build", f"{branch} {package}", slack.response_url(n))
        posts = slack.wait_for(lambda p, b, n=n: p == f"/response/{n}" and "confirm_plan" in json.dumps(b), 60)
        msg = next(b for p, b in posts if p == f"/response/{n}" and "confirm_plan" in json.dumps(b))
        pid = next(e["value"] for blk in msg["blocks"] if blk["type"] == "actions" for e in blk["elements"]
                   if e["action_id"] == "confirm_plan")
        payload = {"type": "block_actions", "user": {"id": "UADMIN"}, "channel": {"id": "CREL"},
                   "response_url": slack.response_url(100 + n),
                   "actions": [{"action_id": "confirm_plan", "value": pid, "type": "button"}]}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        assert post(url, body, sign(body, SECRET))[0] == 200


def http_figures() -> None:
    from config.catalog_data import load_catalog
    from tests.support.fixtures_pins import build_repo

    with tempfile.TemporaryDirectory() as tmpdir, FakeSlack() as slack:
        tmp = Path(tmpdir)
        branches = list(load_catalog().branches.values())[:6]  # a build-pytorch-shaped repository
        work, _ = build_repo(tmp, branches)
        builds = [(b.name, b.variants[0].package) for b in branches]
        port = free_port()
        env = dict(TORCHBOT_SLACK_SIGNING_SECRET=SECRET, TORCHBOT_SLACK_BOT_TOKEN="xoxb-test",
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN", TORCHBOT_REPO_PATH=str(work),
                   TORCHBOT_STATE_DB=str(tmp / "state.db"), TORCHBOT_LOG_DIR=str(tmp / "logs"),
                   TORCHBOT_AUDIT_LOG=str(tmp / "audit.log"), TORCHBOT_JOB_WORKERS="6",
                   TORCHBOT_BUILD_COMMAND="sleep 60 && echo ok > result-{package}")
        bot = ServeProcess(tmp, env, ["--http", "--host", "127.0.0.1", "--port", str(port), "--no-schedule"])
        url = f"http://127.0.0.1:{port}/slack/events"
        try:
            bot.wait_line()
            p50, p99, rate = variant_load(url)
            print(
                f"/variant over signed HTTP, 20 concurrent clients, 1,000 requests, idle: "
                f"p50 {p50:.1f} ms, p99 {p99:.1f} ms (goal p99 < 100 ms), {rate:.0f} req/s; RSS {rss_mb(bot.pid):.0f} "
                f"MB"
            )
            start_six_builds(url, slack, builds)
            time.sleep(1)
            running = [m for m in slack.messages("CREL") if "running" in m.get("text", "")]
            p50, p99, rate = variant_load(url)
            print(f"/variant while {len(running)} builds run (TORCHBOT_JOB_WORKERS=6): "
                  f"p50 {p50:.1f} ms, p99 {p99:.1f} ms (goal p99 < 100 ms), {rate:.0f} req/s")
        finally:
            bot.stop()


def socket_figures() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeSlack() as api, FakeSocketMode(api) as sm:
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_APP_TOKEN="xapp-test",
                   TORCHBOT_SLACK_API_URL=api.url, TORCHBOT_STATE_DB=str(Path(tmp) / "state.db"))
        bot = ServeProcess(Path(tmp), env, ["--socket", "--no-schedule"])
        try:
            bot.wait_line()
            for kind in ("close", "fin", "reset", "silent", "refresh"):
                times = []
                for _ in range(3):
                    sm.wait_connection()
                    time.sleep(0.5)
                    t0 = sm.refresh() if kind == "refresh" else sm.drop(kind)
                    times.append(sm.wait_connection(after=t0, timeout=30).hello_sent - t0)
                print(f"Socket Mode back after {kind:<7}: median {statistics.median(times):.2f} s, "
                      f"max {max(times):.2f} s (goal < 5 s)")
        finally:
            bot.stop()


if __name__ == "__main__":
    http_figures()
    socket_figures()
