"""A recording stand-in for the Slack Web API and for response_url endpoints, on 127.0.0.1.

Every POST is recorded as (path, parsed body). Web API methods under /api/ answer
{"ok": true, "ts": ..., "channel": ...}; anything else (response URLs) answers {"ok": true}.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


class FakeSlackApi:
    def __init__(self):
        self.posts: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if "json" in (self.headers.get("Content-Type") or ""):
                    body = json.loads(raw or "{}")
                else:
                    body = {k: v[0] for k, v in parse_qs(raw).items()}
                with fake._lock:
                    fake.posts.append((self.path, body))
                reply = {"ok": True}
                if self.path.startswith("/api/"):
                    reply.update({"ts": f"{time.time():.6f}", "channel": body.get("channel", "C0")})
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_port}"

    @property
    def api_url(self) -> str:
        return self.base + "/api/"

    def response_url(self, n: int = 1) -> str:
        return f"{self.base}/response/{n}"

    def wait_for(self, predicate, timeout: float = 10.0) -> list[tuple[str, dict]]:
        """Block until some recorded post satisfies ``predicate``; return all posts then."""
        end = time.time() + timeout
        while time.time() < end:
            with self._lock:
                posts = list(self.posts)
            if any(predicate(p, b) for p, b in posts):
                return posts
            time.sleep(0.02)
        raise AssertionError(f"no matching post within {timeout}s; got {self.posts!r}")

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
