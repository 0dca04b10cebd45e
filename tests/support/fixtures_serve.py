"""`torchbot serve` as a real process for tests: started with a given environment (no
TORCHBOT_ variable of the caller's leaks in), its output collected, its start line awaited;
``kill()`` sends SIGKILL (a crash), ``stop()`` SIGTERM. Also the request signing Slack uses."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sign(body: bytes, secret: str, ts: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if ts is None else ts)
    mac = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=" + mac}


def post(url: str, body: bytes, headers: dict[str, str], ctype: str = "application/x-www-form-urlencoded",
         timeout: float = 10.0) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype, **headers}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class ServeProcess:
    def __init__(self, cwd: Path, env: dict[str, str], args: list[str]):
        base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
        base.update(PYTHONPATH=str(ROOT), **env)
        self.proc = subprocess.Popen([sys.executable, "-m", "bot", "serve", *args], cwd=cwd, env=base,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.lines: list[str] = []
        self.err: list[str] = []
        for stream, into in ((self.proc.stdout, self.lines), (self.proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, into), daemon=True).start()

    @staticmethod
    def _pump(stream, into) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def wait_line(self, timeout: float = 30.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.lines:
                return self.lines[0]
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"torchbot serve printed no start line; stderr: {self.err}")

    def events_url(self, timeout: float = 60.0) -> str:
        """The ``/slack/events`` URL its start line names: ``serve --http --port 0`` binds a free
        port and says which (no port picked beforehand that another test could take meanwhile)."""
        line = self.wait_line(timeout)
        found = re.search(r"http://[0-9.]+:[0-9]+/slack/events", line)
        assert found, f"no listening URL in the start line {line!r}"
        return found.group(0)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=15)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
