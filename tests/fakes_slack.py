"""A fake Slack Web API on 127.0.0.1 for tests (reusable by any torchbot area).

Usage::

    with FakeSlack() as slack:                       # threaded http.server, random port
        client = WebClient(token="xoxb-test", base_url=slack.url)   # slack.url ends with "/"
        client.chat_postMessage(channel="C1", text="hi")
        slack.messages("C1")                          # what was posted, oldest first

Implemented methods (JSON bodies, form bodies and query strings are all accepted):
``auth.test``, ``chat.postMessage`` (``thread_ts``, ``metadata``, ``client_msg_id`` kept),
``chat.update``, ``chat.postEphemeral``, ``conversations.replies`` and
``conversations.history`` (``metadata`` returned only with ``include_all_metadata``, as
Slack does), the three steps of ``files_upload_v2`` (``files.getUploadURLExternal``, the
POST of the bytes to the upload URL, ``files.completeUploadExternal``; ``slack.files`` holds
what was shared, and the file shows in its channel or thread), and
``apps.connections.open`` (with the app-level token ``app_token``; answers
``socket_url()`` when a Socket Mode stand-in set it). Unknown methods answer
``{"ok": false, "error": "unknown_method"}``.

Response URLs: ``slack.response_url(n)`` is ``/response/n`` on the same server; what is posted
there is recorded. ``slack.posts`` lists (path, body) of every request in order (Web API
calls as ``/api/<method>``), and ``slack.wait_for(predicate)`` waits for a matching one.

Switches for failure tests:
- ``slack.rate_limit(n, retry_after=1)``: the next n calls answer HTTP 429 with Retry-After.
- ``slack.fail(n, error="internal_error", status=200)``: the next n calls fail
  (``{"ok": false}`` with HTTP ``status``; use 503 for an outage).
- ``slack.down = True``: every call answers HTTP 503 until set back to False.
``slack.calls`` lists (method, params) of every request received, including refused ones.
A bad or missing bearer token answers ``invalid_auth`` (the expected token is ``token``).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


class FakeSlack:
    def __init__(self, token: str = "xoxb-test", app_token: str = "xapp-test"):
        self.token = token
        self.app_token = app_token
        self.socket_url = None  # a callable returning a ws:// URL, set by a Socket Mode stand-in
        self.lock = threading.Lock()
        self.channels: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.posts: list[tuple[str, dict[str, Any]]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self._uploads: dict[str, dict[str, Any]] = {}
        self.down = False
        self._rate_limited = 0
        self._retry_after = 1
        self._failures = 0
        self._fail_error = "internal_error"
        self._fail_status = 200
        self._clock = time.time()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                fake._handle(self)

            def do_POST(self):
                fake._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.request_queue_size = 128
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.api_url = self.base + "/api/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> "FakeSlack":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "FakeSlack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- switches and inspection --------------------------------------------------------

    def rate_limit(self, n: int, retry_after: int = 1) -> None:
        with self.lock:
            self._rate_limited, self._retry_after = n, retry_after

    def fail(self, n: int, error: str = "internal_error", status: int = 200) -> None:
        with self.lock:
            self._failures, self._fail_error, self._fail_status = n, error, status

    def messages(self, channel: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(m) for m in self.channels.get(channel, [])]

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        return [m for m in self.messages(channel) if m["ts"] == ts or m.get("thread_ts") == ts]

    def method_calls(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [p for m, p in self.calls if m == method]

    def response_url(self, n: int = 1) -> str:
        return f"{self.base}/response/{n}"

    def wait_for(self, predicate, timeout: float = 10.0) -> list[tuple[str, dict[str, Any]]]:
        """Block until some recorded (path, body) satisfies ``predicate``; return all then."""
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                posts = list(self.posts)
            if any(predicate(p, b) for p, b in posts):
                return posts
            time.sleep(0.02)
        raise AssertionError(f"no matching post within {timeout}s; got {self.posts!r}")

    # -- HTTP ---------------------------------------------------------------------------

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(req.path)
        method = parsed.path.rsplit("/", 1)[-1]
        params: dict[str, Any] = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        ctype = req.headers.get("Content-Type", "")
        if parsed.path.startswith("/upload/"):
            return self._upload(req, method, body)
        if not parsed.path.startswith("/api/"):  # a response_url
            data = json.loads(body or b"{}") if "json" in ctype else {k: v[-1] for k, v in parse_qs(body.decode()).items()}
            with self.lock:
                self.posts.append((parsed.path, data))
            return self._send(req, 200, {"ok": True})
        if body:
            if "json" in ctype:
                params.update(json.loads(body))
            else:
                params.update({k: v[-1] for k, v in parse_qs(body.decode()).items()})
        for key in ("metadata", "blocks", "attachments", "files"):
            if isinstance(params.get(key), str):
                try:
                    params[key] = json.loads(params[key])
                except ValueError:
                    pass
        auth = req.headers.get("Authorization", "")
        if not auth and "token" in params:
            auth = "Bearer " + str(params["token"])
        with self.lock:
            self.calls.append((method, params))
            self.posts.append(("/api/" + method, params))
            if self.down:
                return self._send(req, 503, {"ok": False, "error": "service_unavailable"})
            if self._rate_limited > 0:
                self._rate_limited -= 1
                return self._send(req, 429, {"ok": False, "error": "ratelimited"},
                                  {"Retry-After": str(self._retry_after)})
            if self._failures > 0:
                self._failures -= 1
                return self._send(req, self._fail_status, {"ok": False, "error": self._fail_error})
            expected = self.app_token if method == "apps.connections.open" else self.token
            if auth != f"Bearer {expected}":
                return self._send(req, 200, {"ok": False, "error": "invalid_auth"})
            handler = getattr(self, "_m_" + method.replace(".", "_"), None)
            if handler is None:
                return self._send(req, 200, {"ok": False, "error": "unknown_method"})
            status, payload = handler(params)
        self._send(req, status, payload)

    @staticmethod
    def _send(req, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json; charset=utf-8")
        req.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            req.send_header(k, v)
        req.end_headers()
        req.wfile.write(data)

    def _next_ts(self) -> str:
        self._clock = max(self._clock + 0.000001, time.time())
        return f"{self._clock:.6f}"

    @staticmethod
    def _public(msg: dict, with_metadata: bool) -> dict:
        out = {k: v for k, v in msg.items() if k != "metadata"}
        if with_metadata and msg.get("metadata"):
            out["metadata"] = msg["metadata"]
        return out

    # -- methods (called with the lock held) -----------------------------------------------

    def _upload(self, req, file_id: str, body: bytes) -> None:
        with self.lock:
            pending = self._uploads.get(file_id)
            if pending is not None:
                pending["content"] = body
        if pending is None:
            req.send_response(404)
            req.send_header("Content-Length", "0")
            req.end_headers()
            return
        data = f"OK - {len(body)}".encode()
        req.send_response(200)
        req.send_header("Content-Type", "text/plain")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def _m_auth_test(self, p):
        return 200, {"ok": True, "url": "https://acme.slack.com/", "team": "Acme", "user": "torchbot",
                     "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1"}

    def _m_apps_connections_open(self, p):
        if self.socket_url is None:
            return 200, {"ok": False, "error": "socket_mode_not_enabled"}
        return 200, {"ok": True, "url": self.socket_url()}

    def _m_files_getUploadURLExternal(self, p):
        if not p.get("filename") or not str(p.get("length", "")).isdigit():
            return 200, {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{len(self._uploads) + 1:08d}"
        self._uploads[file_id] = {"name": p["filename"], "length": int(p["length"]), "content": None}
        return 200, {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, p):
        files = p.get("files") or []
        shared = []
        for f in files:
            up = self._uploads.get(f.get("id"))
            if up is None or up["content"] is None or len(up["content"]) != up["length"]:
                return 200, {"ok": False, "error": "file_not_found"}
            channel = p.get("channel_id")
            entry = {"id": f["id"], "name": up["name"], "title": f.get("title") or up["name"],
                     "content": up["content"].decode("utf-8", "replace"), "channel": channel,
                     "thread_ts": p.get("thread_ts"), "initial_comment": p.get("initial_comment")}
            self.files[f["id"]] = entry
            shared.append({"id": f["id"], "name": up["name"], "title": entry["title"]})
            if channel:
                msg = {"type": "message", "user": "UBOT", "ts": self._next_ts(),
                       "text": p.get("initial_comment") or "", "files": [shared[-1]]}
                if p.get("thread_ts"):
                    msg["thread_ts"] = p["thread_ts"]
                self.channels.setdefault(channel, []).append(msg)
        return 200, {"ok": True, "files": shared}

    def _m_chat_postMessage(self, p):
        channel = p.get("channel")
        if not channel:
            return 200, {"ok": False, "error": "channel_not_found"}
        if not (p.get("text") or p.get("blocks")):
            return 200, {"ok": False, "error": "no_text"}
        msg = {"type": "message", "user": "UBOT", "bot_id": "BBOT", "ts": self._next_ts(), "text": p.get("text", "")}
        for key in ("thread_ts", "metadata", "client_msg_id", "blocks"):
            if p.get(key):
                msg[key] = p[key]
        if msg.get("thread_ts"):
            parent = next((m for m in self.channels.get(channel, []) if m["ts"] == msg["thread_ts"]), None)
            if parent is None:
                return 200, {"ok": False, "error": "thread_not_found"}
            parent["reply_count"] = parent.get("reply_count", 0) + 1
        self.channels.setdefault(channel, []).append(msg)
        return 200, {"ok": True, "channel": channel, "ts": msg["ts"], "message": self._public(msg, True)}

    def _m_chat_postEphemeral(self, p):
        return 200, {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_update(self, p):
        for msg in self.channels.get(p.get("channel"), []):
            if msg["ts"] == p.get("ts"):
                if "text" in p:
                    msg["text"] = p["text"]
                if "blocks" in p:
                    msg["blocks"] = p["blocks"]
                msg["edited"] = {"user": "UBOT", "ts": self._next_ts()}
                return 200, {"ok": True, "channel": p["channel"], "ts": msg["ts"], "text": msg["text"]}
        return 200, {"ok": False, "error": "message_not_found"}

    def _m_conversations_replies(self, p):
        ts = p.get("ts")
        msgs = [m for m in self.channels.get(p.get("channel"), []) if m["ts"] == ts or m.get("thread_ts") == ts]
        if not msgs:
            return 200, {"ok": False, "error": "thread_not_found"}
        meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
        return 200, {"ok": True, "messages": [self._public(m, meta) for m in msgs], "has_more": False}

    def _m_conversations_history(self, p):
        oldest = float(p.get("oldest") or 0)
        msgs = [m for m in self.channels.get(p.get("channel"), []) if not m.get("thread_ts") and float(m["ts"]) > oldest]
        meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
        return 200, {"ok": True, "messages": [self._public(m, meta) for m in reversed(msgs)], "has_more": False}
