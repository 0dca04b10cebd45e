"""Slack's endpoint under a slow-client attack and page loads (issue 36): a real `torchbot serve
--http` process on loopback, a FakeSlack, and a GitHub stand-in that answers every request after
``GITHUB_DELAY`` seconds. While

- 200 slow connections are held: each sends a request line and then one header line every
  ``DRIP`` seconds, and is reopened as soon as the server closes it (the attacker keeps 200 open);
- 16 clients load `/dashboard` in a loop (the page was made once while GitHub was fast; from then
  on every refresh of it waits on the slow GitHub);

50 signed `/variant` requests are sent one after another and timed (goal: p99 <= 3 s, Slack's
limit). Prints the latencies, the page loads' answers and how often the server closed a slow
connection.

    python bench/http_under_load.py
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from tests.support.fakes_slack import FakeSlack  # noqa: E402
from tests.support.fixtures_serve import ServeProcess, free_port, post, sign  # noqa: E402

SECRET = "bench-signing-secret"
SLOW = 200  # slow connections held
PAGES = 16  # concurrent page loaders
REQUESTS = 50  # signed /variant requests timed
DRIP = 2.0  # seconds between two header lines of a slow connection
GITHUB_DELAY = 5.0  # seconds the GitHub stand-in takes to answer anything
QUESTIONS = ["H100 with Graviton3", "p5.48xlarge", "RTX 4090 + Ryzen 9 7950X", "DGX Spark", "A100 python 3.12"]


class SlowGitHub(BaseHTTPRequestHandler):
    """Every answer after GITHUB_DELAY seconds: torchbot's own login, no pull requests."""

    delay = 0.0  # GITHUB_DELAY once the first page was made

    def do_GET(self):
        time.sleep(SlowGitHub.delay)
        data = json.dumps({"login": "torchbot[bot]"} if self.path.startswith("/user") else []).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class SlowClients:
    """Keeps ``n`` slow connections open to ``port``; counts how often the server closed one."""

    def __init__(self, port: int, n: int):
        self.port, self.n = port, n
        self.closed_by_server = 0
        self.opened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            s.setblocking(False)
            self.opened += 1
            return s
        except OSError:
            return None

    def _alive(self, s: socket.socket) -> bool:
        try:
            if s.recv(4096) == b"":  # closed by the server (an answer or a FIN)
                return False
        except BlockingIOError:
            pass
        except OSError:
            return False
        try:
            s.send(b"X-Slow: 1\r\n")
        except BlockingIOError:
            pass
        except OSError:
            return False
        return True

    def _run(self) -> None:
        socks = [s for s in (self._open() for _ in range(self.n)) if s]
        while not self.stop.wait(DRIP):
            kept = []
            for s in socks:
                if self._alive(s):
                    kept.append(s)
                else:
                    self.closed_by_server += 1
                    s.close()
            while len(kept) < self.n and not self.stop.is_set():
                s = self._open()
                if s is None:
                    break
                kept.append(s)
            socks = kept
        for s in socks:
            s.close()


def page_loads_once(url: str, out: list) -> None:
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as err:
        status = err.code
    except (OSError, http.client.HTTPException):  # refused, reset or cut off: counted apart
        status = -1
    out.append((status, time.perf_counter() - t))


def page_loads(url: str, stop: threading.Event, out: list) -> None:
    while not stop.is_set():
        page_loads_once(url, out)


def variant(url: str, i: int) -> float:
    body = urllib.parse.urlencode({"command": "/variant", "text": QUESTIONS[i % len(QUESTIONS)], "user_id": "U1",
                                   "channel_id": "C1", "response_url": "http://127.0.0.1:9/unused"}).encode()
    t = time.perf_counter()
    status, _ = post(url, body, sign(body, SECRET), timeout=60)
    took = time.perf_counter() - t
    assert status == 200, status
    return took


def main() -> None:
    from config.catalog_data import load_catalog
    from tests.support.fixtures_pins import build_repo

    github = ThreadingHTTPServer(("127.0.0.1", 0), SlowGitHub)
    threading.Thread(target=github.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmpdir, FakeSlack() as slack:
        tmp = Path(tmpdir)
        work, _ = build_repo(tmp, list(load_catalog().branches.values())[:6])
        port = free_port()
        env = dict(TORCHBOT_SLACK_SIGNING_SECRET=SECRET, TORCHBOT_SLACK_BOT_TOKEN="xoxb-test",
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_REPO_PATH=str(work),
                   TORCHBOT_STATE_DB=str(tmp / "state.db"), TORCHBOT_LOG_DIR=str(tmp / "logs"),
                   TORCHBOT_AUDIT_LOG=str(tmp / "audit.log"), TORCHBOT_CACHE_DIR="off",
                   TORCHBOT_GITHUB_TOKEN="ghp_benchbenchbench", TORCHBOT_GITHUB_REPO="acme/build-pytorch",
                   TORCHBOT_GITHUB_API_URL=f"http://127.0.0.1:{github.server_address[1]}/",
                   TORCHBOT_CHANNELS_URL=f"http://127.0.0.1:{github.server_address[1]}/",
                   TORCHBOT_HTTP_RETRIES="1")
        bot = ServeProcess(tmp, env, ["--http", "--host", "127.0.0.1", "--port", str(port), "--no-schedule"])
        url = f"http://127.0.0.1:{port}"
        stop = threading.Event()
        loads: list = []
        slow = SlowClients(port, SLOW)
        try:
            bot.wait_line()
            for i in range(5):  # warm up
                variant(url + "/slack/events", i)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:  # the first snapshot of the page, GitHub still fast
                done: list = []
                page_loads_once(url + "/dashboard", done)
                if done and done[0][0] == 200:
                    break
                time.sleep(0.5)
            SlowGitHub.delay = GITHUB_DELAY  # from now on every refresh of the page waits on a slow GitHub
            slow.thread.start()
            pagers = [threading.Thread(target=page_loads, args=(url + "/dashboard", stop, loads), daemon=True)
                      for _ in range(PAGES)]
            for t in pagers:
                t.start()
            time.sleep(3 * DRIP)  # the slow connections are in and have dripped a few header lines
            lat = sorted(variant(url + "/slack/events", i) for i in range(REQUESTS))
            stop.set()
            loads = list(loads)  # the loaders finish their last request after this
            p99 = lat[max(0, int(len(lat) * 0.99) - 1)]
            statuses: dict[int, int] = {}
            for status, _ in loads:
                statuses[status] = statuses.get(status, 0) + 1
            page_p50 = statistics.median(t for _, t in loads) if loads else float("nan")
            print(f"signed /variant with {SLOW} slow connections held and {PAGES} page loaders against a GitHub "
                  f"answering in {GITHUB_DELAY:g} s: {REQUESTS} requests, p50 {statistics.median(lat) * 1000:.0f} ms, "
                  f"p99 {p99 * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms (goal p99 <= 3000 ms)")
            print(f"page loads: {len(loads)} ({', '.join(f'{n} x {s}' for s, n in sorted(statuses.items()))}; "
                  "-1: refused, reset or cut off), "
                  f"median {page_p50 * 1000:.0f} ms")
            print(f"slow connections: {slow.opened} opened, {slow.closed_by_server} closed by the server")
        finally:
            stop.set()
            slow.stop.set()
            bot.stop()
            github.shutdown()


if __name__ == "__main__":
    main()
