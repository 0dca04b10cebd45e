"""/variant round trips through the request-signed HTTP mode: 20 concurrent clients over
1,000 signed requests against `torchbot serve --http` in its own process. Prints p50/p99
latency (goal: p99 < 100 ms) and the serving process's RSS."""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes_slack_api import FakeSlackApi  # noqa: E402  (bolt calls auth.test once)
SECRET = "bench-signing-secret"
QUESTIONS = ["H100 with Graviton3", "p5.48xlarge", "RTX 4090 + Ryzen 9 7950X", "DGX Spark", "L40S int8 inference",
             "GTX 1080 Ti i7-2600K", "MacBook Pro M3", "A100 python 3.12", "no GPU, Xeon Gold 6248", "Tesla K80"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(url: str, i: int) -> float:
    body = urllib.parse.urlencode({"command": "/variant", "text": QUESTIONS[i % len(QUESTIONS)], "user_id": "U1",
                                   "channel_id": "C1", "response_url": "http://127.0.0.1:9/unused"})
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    req = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()
        assert r.status == 200
    return time.perf_counter() - t


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    with FakeSlackApi() as slack:
        run(slack.api_url)


def run(api_url: str) -> None:
    port = free_port()
    env = dict(os.environ, TORCHBOT_SLACK_SIGNING_SECRET=SECRET, TORCHBOT_SLACK_BOT_TOKEN="xoxb-bench",
               TORCHBOT_SLACK_API_URL=api_url)
    env.pop("TORCHBOT_REPO_PATH", None)
    exe = ROOT / ".venv" / "bin" / "torchbot"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "bot.cli"]
    proc = subprocess.Popen(cmd + ["serve", "--http", "--host", "127.0.0.1", "--port", str(port), "--no-schedule"],
                            env=env, cwd="/tmp", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/slack/events"
    try:
        for _ in range(100):
            try:
                request(url, 0)
                break
            except OSError:
                time.sleep(0.1)
        for i in range(50):  # warm up
            request(url, i)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=20) as pool:
            lat = sorted(pool.map(lambda i: request(url, i), range(1000)))
        wall = time.perf_counter() - start
        p50 = statistics.median(lat) * 1000
        p99 = lat[int(len(lat) * 0.99) - 1] * 1000
        print(f"/variant over signed HTTP, 20 concurrent clients, 1,000 requests: "
              f"p50 {p50:.1f} ms, p99 {p99:.1f} ms (goal p99 < 100 ms), {1000 / wall:.0f} req/s")
        print(f"serving process RSS: {rss_mb(proc.pid):.0f} MB")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
