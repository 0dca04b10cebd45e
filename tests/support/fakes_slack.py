"""A fake Slack Web API on 127.0.0.1 for tests (reusable by any torchbot area).

Usage::

    with FakeSlack() as slack:                       # threaded http.server, random port
        client = WebClient(token="xoxb-test", base_url=slack.url)   # slack.url ends with "/"
        client.chat_postMessage(channel="C1", text="hi")
        slack.messages("C1")                          # what was posted, oldest first

Strict as Slack (its method docs, slack_sdk's models; every exchange is also checked by
``slack_conformance``): a call with an argument the method does not document answers
``invalid_arguments``, ``client_msg_id`` (Slack's own clients') is dropped, blocks that
slack_sdk's Block Kit models or Slack's limits refuse answer ``invalid_blocks``; reads
(``conversations.history``/``replies``) answer ``not_in_channel`` unless torchbot is a member
(``slack.members``, ``conversations.join`` or ``slack.join(c)``), posts do in a private channel
(``slack.private``) it was not invited to; reads paginate at ``page_size`` (20) items with
``has_more``/``response_metadata.next_cursor``, whatever ``limit`` asks; ``metadata`` comes back
only with ``include_all_metadata``; ``chat.update`` answers its ``message``; scopes
(``slack.scopes``, the manifest's) are checked where Slack checks them.

Implemented methods: ``auth.test``, ``chat.postMessage``, ``chat.update``,
``chat.postEphemeral``, ``conversations.join``, ``conversations.open`` (a DM: ``slack.dm(user)``
lists what torchbot sent there), ``views.publish`` (App Home; ``user_id``, a ``home`` view),
``conversations.replies`` and ``conversations.history`` (from ``oldest`` to ``latest``), the three
steps of ``files_upload_v2`` (``files.getUploadURLExternal``, the POST of the bytes to the upload
URL, ``files.completeUploadExternal``; ``slack.files`` holds what was shared, and the file shows in
its channel or thread), ``usergroups.users.list`` and ``apps.connections.open`` (with the
app-level token ``app_token``; answers ``socket_url()`` when a Socket Mode stand-in set it).
Unknown methods answer ``{"ok": false, "error": "unknown_method"}``.

Response URLs: ``slack.response_url(n)`` is ``/response/n`` on the same server; what is posted
there is recorded. As Slack, it answers 5 times within 30 minutes, then HTTP 404 ``used_url`` /
``expired_url`` (kept in ``slack.refused_posts``); ``slack.advance(seconds)`` moves the stand-in's
clock (and the ts it gives). Clicks in Slack's shapes: ``slack.message_click(...)`` (channel,
message container, response_url) and ``slack.home_click(...)`` (an App Home ``view`` container,
no channel, no response_url). ``slack.posts`` lists (path, body) of every request in order (Web API
calls as ``/api/<method>``), and ``slack.wait_for(predicate)`` waits for a matching one.

Switches for failure tests:
- ``slack.rate_limit(n, retry_after=1)``: the next n calls answer HTTP 429 with Retry-After.
- ``slack.fail(n, error="internal_error", status=200)``: the next n calls fail
  (``{"ok": false}`` with HTTP ``status``; use 503 for an outage).
- ``slack.down = True``: every call answers HTTP 503 until set back to False.
``slack.calls`` lists (method, params) of every request received, including refused ones.
A bad or missing bearer token answers ``invalid_auth`` (the expected token is ``token``).

User groups: ``slack.usergroups = {"S0ADMINS": ["U1", "U2"]}`` answers
``usergroups.users.list`` as Slack does (``no_such_subteam`` for an unknown group,
``missing_scope`` with ``needed``/``provided`` when ``slack.scopes`` lacks ``usergroups:read``,
``invalid_arguments`` without ``usergroup``; disabled groups, ``slack.disabled``, list no
users unless ``include_disabled``).

Deliveries to the app (Slack's side of the Events API over HTTP): :class:`Deliverer` POSTs
signed requests to the app's request URL and retries as Slack documents.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.support import slack_conformance
from tests.support.slack_conformance import blocks_problem  # (tests import it from here)

RESPONSE_URL_USES, RESPONSE_URL_SECONDS = 5, 30 * 60  # Slack: a response_url answers 5 times within 30 minutes


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
        self._clock = 0.0  # the newest ts given (ts only grow, on the tests' clock)
        self.usergroups: dict[str, list[str]] = {}
        self.refused_posts: list[tuple[str, dict[str, Any], str]] = []  # response_url posts past their life
        self.views: dict[str, dict[str, Any]] = {}  # user -> the App Home view published for them
        self.disabled: set[str] = set()
        self.slow: dict[str, float] = {}  # method -> seconds it takes to answer (a slow Slack)
        self.scopes = {"chat:write", "chat:write.public", "commands", "app_mentions:read", "files:write",
                       "usergroups:read", "channels:join", "channels:history", "groups:history", "im:write"}
        self.members: set[str] = set()  # channels torchbot is a member of (reads elsewhere: not_in_channel)
        self.private: set[str] = set()  # private channels: no posting or joining without an invitation
        self.page_size = 20  # Slack may return fewer items than ``limit``: reads answer at most this many
        self.offset = 0.0  # the tests' clock: ``advance(seconds)`` moves it (response_url expiry)
        self._response_urls: dict[str, dict[str, float]] = {}  # path -> issued, uses
        self._ims: dict[str, str] = {}  # user -> the DM channel conversations.open gave
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

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeSlack:
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

    def user_message(self, channel: str, text: str, user: str = "U1", thread_ts: str | None = None,
                     at: float | None = None) -> str:
        """A message a person posted (e.g. the mention a bot answers in its thread, or a reply in
        ``thread_ts``), now or ``at`` a given time; its ts."""
        with self.lock:
            ts = self._next_ts() if at is None else f"{at:.6f}"
            msg = {"type": "message", "user": user, "ts": ts, "text": text}
            if thread_ts:
                msg["thread_ts"] = thread_ts
                parent = next(m for m in self.channels[channel] if m["ts"] == thread_ts)
                parent["reply_count"] = parent.get("reply_count", 0) + 1
            self.channels.setdefault(channel, []).append(msg)
        return ts

    def messages(self, channel: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(m) for m in self.channels.get(channel, [])]

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        return [m for m in self.messages(channel) if m["ts"] == ts or m.get("thread_ts") == ts]

    def method_calls(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [p for m, p in self.calls if m == method]

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        """Move the stand-in's clock (response URLs expire 30 minutes after they were issued)."""
        with self.lock:
            self.offset += seconds

    def response_url(self, n: int = 1) -> str:
        """The response URL of the nth request a test sends; issued now (it answers 5 times within
        30 minutes, then ``used_url``/``expired_url`` with HTTP 404, as Slack does)."""
        with self.lock:
            self._response_urls.setdefault(f"/response/{n}", {"issued": self.now(), "uses": 0})
        return f"{self.base}/response/{n}"

    def join(self, channel: str) -> None:
        """Torchbot was invited to ``channel``."""
        with self.lock:
            self.members.add(channel)

    def dm(self, user: str) -> list[dict[str, Any]]:
        """The messages torchbot sent ``user`` in their DM with it."""
        with self.lock:
            im = self._ims.get(user)
        return self.messages(im) if im else []

    # -- Slack's interaction payloads (block_actions) --------------------------------------

    def message_click(self, action_id: str, value: str, n: int, user: str = "UADMIN", channel: str = "CREL",
                      message_ts: str | None = None, trigger: str | None = None,
                      action_ts: str | None = None) -> dict[str, Any]:
        """A click on a button of a message, as Slack sends it: the channel, the message's container
        and a response_url."""
        ts = message_ts or f"{self.now():.6f}"
        return {"type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": "T1"},
                "api_app_id": "A1", "token": "verification-token", "team": {"id": "T1", "domain": "acme"},
                "enterprise": None, "is_enterprise_install": False,
                "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": True},
                "channel": {"id": channel, "name": "releases"}, "state": {"values": {}},
                "response_url": self.response_url(n), "trigger_id": trigger or _trigger_id(),
                "actions": [_action(action_id, value, action_ts or f"{self.now():.6f}")]}

    def home_click(self, action_id: str, value: str, user: str = "UADMIN", trigger: str | None = None,
                   action_ts: str | None = None) -> dict[str, Any]:
        """A click on a button of the App Home view, as Slack sends it: a ``view`` container, the
        view, and no channel and no response_url."""
        view = dict(self.views.get(user) or {"type": "home", "blocks": []})
        view.update({"id": "VHOME" + user, "team_id": "T1", "app_id": "A1", "hash": "1.abc"})
        return {"type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": "T1"},
                "api_app_id": "A1", "token": "verification-token", "team": {"id": "T1", "domain": "acme"},
                "enterprise": None, "is_enterprise_install": False,
                "container": {"type": "view", "view_id": view["id"]}, "view": view, "state": {"values": {}},
                "trigger_id": trigger or _trigger_id(),
                "actions": [_action(action_id, value, action_ts or f"{self.now():.6f}")]}

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
            data = (
                json.loads(body or b"{}") if "json" in ctype else {k: v[-1] for k, v in parse_qs(body.decode()).items()}
            )
            with self.lock:
                url = self._response_urls.setdefault(parsed.path, {"issued": self.now(), "uses": 0})
                url["uses"] += 1
                if url["uses"] > RESPONSE_URL_USES or self.now() - url["issued"] > RESPONSE_URL_SECONDS:
                    refused = "used_url" if url["uses"] > RESPONSE_URL_USES else "expired_url"
                    self.refused_posts.append((parsed.path, data, refused))
                    return self._send_text(req, 404, refused)
                self.posts.append((parsed.path, data))
            slack_conformance.record("response_url", data, 200, None)
            return self._send(req, 200, {"ok": True})
        if body:
            if "json" in ctype:
                params.update(json.loads(body))
            else:
                params.update({k: v[-1] for k, v in parse_qs(body.decode()).items()})
        for key in ("metadata", "blocks", "attachments", "files"):
            if isinstance(params.get(key), str):
                with contextlib.suppress(ValueError):
                    params[key] = json.loads(params[key])
        if self.slow.get(method):
            time.sleep(self.slow[method])  # outside the lock: other requests are answered meanwhile
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
            sent = dict(params)  # as torchbot sent it (client_msg_id and all), for the conformance check
            if handler is None:
                status, payload = 200, {"ok": False, "error": "unknown_method"}
            else:
                status, payload = self._strict(method, params) or handler(params)
        slack_conformance.record(method, sent, status, payload)
        self._send(req, status, payload)

    def _strict(self, method: str, params: dict[str, Any]) -> tuple[int, dict] | None:
        """Slack's checks before a method runs: documented arguments only (``client_msg_id`` is
        Slack's own clients' and is dropped), required ones present, blocks valid."""
        params.pop("client_msg_id", None)
        required, optional = slack_conformance.METHODS[method]
        unknown = sorted(k for k in params if k not in required | optional | slack_conformance.ANY_METHOD)
        missing = sorted(k for k in required if params.get(k) in (None, ""))
        if unknown or missing:
            return 200, {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": [
                *(f"[ERROR] unknown argument: {k}" for k in unknown),
                *(f"[ERROR] missing required field: {k}" for k in missing)]}}
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral") and params.get("blocks"):
            problem = blocks_problem(params["blocks"])
            if problem:
                return 200, {"ok": False, "error": "invalid_blocks", "response_metadata": {"messages": [problem]}}
        return None

    @staticmethod
    def _send_text(req, status: int, text: str) -> None:
        data = text.encode()
        req.send_response(status)
        req.send_header("Content-Type", "text/plain")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

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
        self._clock = max(self._clock + 0.000001, self.now())
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
        refused = self._may_post(p["channel_id"]) if p.get("channel_id") else None
        if refused:  # sharing into a channel: as posting there
            return 200, {"ok": False, "error": refused}
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

    def _may_post(self, channel: str) -> str | None:
        """Why torchbot may not post in ``channel`` (Slack's error), or None: a member may; a DM it
        opened may; a public channel may with ``chat:write.public``."""
        if channel in self.members or channel in self._ims.values():
            return None
        if channel.startswith(("U", "W")) and "im:write" in self.scopes:  # Slack posts to the app's DM
            self._ims.setdefault(channel, "D" + channel)
            return None
        if channel in self.private or "chat:write.public" not in self.scopes:
            return "not_in_channel"
        return None

    def _may_read(self, channel: str) -> str | None:
        if channel in self.members or channel in self._ims.values():
            return None
        return "not_in_channel"

    def _page(self, msgs: list[dict], p: dict, meta: bool) -> dict:
        """One page of ``msgs`` (Slack: ``limit`` at most 999, fewer items than asked may come back;
        here at most ``page_size``), with ``has_more`` and ``response_metadata.next_cursor``."""
        start = int(str(p.get("cursor") or "0").removeprefix("next_ts_") or 0)
        limit = min(int(p.get("limit") or 100), 999, self.page_size)
        page = msgs[start:start + limit]
        more = start + limit < len(msgs)
        out = {"ok": True, "messages": [self._public(m, meta) for m in page], "has_more": more,
               "response_metadata": {"next_cursor": f"next_ts_{start + limit}" if more else ""}}
        return out

    def _m_conversations_join(self, p):
        channel = p["channel"]
        if "channels:join" not in self.scopes:
            return 200, {"ok": False, "error": "missing_scope", "needed": "channels:join",
                         "provided": ",".join(sorted(self.scopes))}
        if channel in self.private:
            return 200, {"ok": False, "error": "method_not_supported_for_channel_type"}
        already = channel in self.members
        self.members.add(channel)
        answer = {"ok": True, "channel": {"id": channel, "is_channel": True, "is_member": True}}
        if already:
            answer["warning"] = "already_in_channel"
        return 200, answer

    def _m_conversations_open(self, p):
        if "im:write" not in self.scopes:
            return 200, {"ok": False, "error": "missing_scope", "needed": "im:write",
                         "provided": ",".join(sorted(self.scopes))}
        users = [u for u in str(p.get("users") or "").split(",") if u]
        if len(users) != 1:
            return 200, {"ok": False, "error": "users_list_not_supplied" if not users else "not_implemented"}
        im = self._ims.setdefault(users[0], "D" + users[0])
        return 200, {"ok": True, "channel": {"id": im}}

    def _m_chat_postMessage(self, p):
        channel = p.get("channel")
        if not channel:
            return 200, {"ok": False, "error": "channel_not_found"}
        if not (p.get("text") or p.get("blocks")):
            return 200, {"ok": False, "error": "no_text"}
        refused = self._may_post(channel)
        if refused:
            return 200, {"ok": False, "error": refused}
        channel = self._ims.get(channel, channel) if channel.startswith(("U", "W")) else channel
        msg = {"type": "message", "user": "UBOT", "bot_id": "BBOT", "ts": self._next_ts(), "text": p.get("text", "")}
        for key in ("thread_ts", "metadata", "blocks"):
            if p.get(key):
                msg[key] = p[key]
        if msg.get("thread_ts"):
            parent = next((m for m in self.channels.get(channel, []) if m["ts"] == msg["thread_ts"]), None)
            if parent is None:
                return 200, {"ok": False, "error": "thread_not_found"}
            parent["reply_count"] = parent.get("reply_count", 0) + 1
        self.channels.setdefault(channel, []).append(msg)
        return 200, {"ok": True, "channel": channel, "ts": msg["ts"], "message": self._public(msg, True)}

    def _m_views_publish(self, p):
        """As Slack: ``user_id`` and a ``view`` of type ``home`` with at most 100 blocks, each with a
        ``type``, texts within their limits (section 3,000, header 150); kept in ``views``."""
        view = p.get("view")
        if isinstance(view, str):
            try:
                view = json.loads(view)
            except ValueError:
                return 200, {"ok": False, "error": "invalid_arguments"}
        if not p.get("user_id"):
            return 200, {"ok": False, "error": "invalid_arguments", "response_metadata": {
                "messages": ["[ERROR] missing required field: user_id"]}}
        if not isinstance(view, dict) or view.get("type") != "home" or not isinstance(view.get("blocks"), list):
            return 200, {"ok": False, "error": "invalid_arguments"}
        problem = blocks_problem(view["blocks"], 100)
        if problem:
            return 200, {"ok": False, "error": "invalid_blocks", "response_metadata": {"messages": [problem]}}
        self.views[p["user_id"]] = view
        return 200, {"ok": True, "view": {"id": "V" + str(len(self.views)), "type": "home", **view}}

    def _m_chat_postEphemeral(self, p):
        return 200, {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_update(self, p):
        for msg in self.channels.get(p.get("channel"), []):
            if msg["ts"] == p.get("ts"):
                if "text" in p:
                    msg["text"] = p["text"]
                if "blocks" in p:
                    msg["blocks"] = p["blocks"]
                if "metadata" in p:
                    msg["metadata"] = p["metadata"]
                msg["edited"] = {"user": "UBOT", "ts": self._next_ts()}
                return 200, {"ok": True, "channel": p["channel"], "ts": msg["ts"], "text": msg["text"],
                             "message": self._public(msg, True)}
        return 200, {"ok": False, "error": "message_not_found"}

    def _m_conversations_replies(self, p):
        """The parent, then its replies oldest first, from ``oldest``/up to ``latest`` (exclusive
        unless ``inclusive``), paginated; only in a channel torchbot is a member of."""
        refused = self._may_read(p["channel"])
        if refused:
            return 200, {"ok": False, "error": refused}
        ts = p.get("ts")
        thread = [m for m in self.channels.get(p.get("channel"), []) if m["ts"] == ts or m.get("thread_ts") == ts]
        if not thread:
            return 200, {"ok": False, "error": "thread_not_found"}
        parent = next((m for m in thread if m["ts"] == ts), thread[0])
        replies = sorted((m for m in thread if m is not parent and self._within(m, p)), key=lambda m: float(m["ts"]))
        meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
        return 200, self._page([parent, *replies], p, meta)

    @staticmethod
    def _within(m: dict, p: dict) -> bool:
        t, inclusive = float(m["ts"]), str(p.get("inclusive", "")).lower() in ("1", "true")
        oldest, latest = float(p.get("oldest") or 0), float(p.get("latest") or 1e12)
        return (oldest <= t <= latest) if inclusive else (oldest < t < latest)

    def _m_conversations_history(self, p):
        """The channel's messages (not thread replies), newest first, paginated; only for a member."""
        refused = self._may_read(p["channel"])
        if refused:
            return 200, {"ok": False, "error": refused}
        msgs = sorted((m for m in self.channels.get(p.get("channel"), [])
                       if not m.get("thread_ts") and self._within(m, p)), key=lambda m: float(m["ts"]))
        meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
        return 200, self._page(list(reversed(msgs)), p, meta)

    def _m_usergroups_users_list(self, p):
        if "usergroups:read" not in self.scopes:
            return 200, {"ok": False, "error": "missing_scope", "needed": "usergroups:read",
                         "provided": ",".join(sorted(self.scopes))}
        group = p.get("usergroup")
        if not group:
            return 200, {"ok": False, "error": "invalid_arguments",
                         "response_metadata": {"messages": ["[ERROR] missing required field: usergroup"]}}
        if group not in self.usergroups:
            return 200, {"ok": False, "error": "no_such_subteam"}
        include_disabled = str(p.get("include_disabled", "")).lower() in ("1", "true")
        if group in self.disabled and not include_disabled:
            return 200, {"ok": True, "users": []}
        return 200, {"ok": True, "users": list(self.usergroups[group])}


def _trigger_id() -> str:
    return f"{time.time_ns()}.{time.time_ns() % 1000003:x}"


def _action(action_id: str, value: str, action_ts: str) -> dict[str, Any]:
    return {"action_id": action_id, "block_id": "b", "value": value, "type": "button",
            "text": {"type": "plain_text", "text": "Go"}, "action_ts": action_ts}


class Deliverer:
    """Slack delivering to an app's request URL, with real request signing and Slack's retries.

    ``deliver(body)`` POSTs an Events API body (JSON). An answer that is not 2xx within
    ``ack_timeout`` seconds (Slack's 3) counts as failed, and Slack sends the same body again,
    up to 3 times, with ``X-Slack-Retry-Num`` (1, 2, 3) and ``X-Slack-Retry-Reason``
    (``http_timeout`` for a late answer, ``http_error`` for an error status,
    ``connection_failed`` when nothing listens), ``delays`` seconds after the failure (Slack:
    at once, after 1 minute, after 5 minutes; tests pass shorter ones). ``lose_acks=n`` makes
    the first n answers get lost on their way back (Slack sees a timeout, as in a network
    partition), which is how a test makes Slack retry an app that did answer. Returns one
    ``(retry_num, status)`` per delivery made (status None when none came back).

    ``send(body, ctype)`` POSTs once, as Slack sends slash commands and interactive payloads
    (never retried); ``again`` re-sends a body as a proxy that repeats a request would."""

    def __init__(self, url: str, secret: str, ack_timeout: float = 3.0, delays: tuple[float, ...] = (0.0, 60.0, 300.0)):
        self.url, self.secret, self.ack_timeout, self.delays = url, secret, ack_timeout, delays

    def sign(self, body: bytes, ts: int | None = None) -> dict[str, str]:
        stamp = str(int(time.time()) if ts is None else ts)
        mac = hmac.new(self.secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=" + mac}

    def _post(self, body: bytes, ctype: str, extra: dict[str, str]) -> tuple[int | None, str, str]:
        headers = {"Content-Type": ctype, **self.sign(body), **extra}
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.ack_timeout) as r:
                return r.status, r.read().decode(), ""
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), "http_error"
        except TimeoutError:
            return None, "", "http_timeout"
        except urllib.error.URLError as e:
            late = isinstance(e.reason, (TimeoutError, socket.timeout))
            return None, "", "http_timeout" if late else "connection_failed"

    def send(self, body: bytes | str | dict, ctype: str = "application/x-www-form-urlencoded", retry: int = 0,
             reason: str = "http_timeout") -> tuple[int | None, str]:
        """POST once (a dict as JSON); ``retry`` > 0 sends it as that retry of an earlier delivery."""
        if isinstance(body, dict):
            body, ctype = json.dumps(body), "application/json"
        data = body.encode() if isinstance(body, str) else body
        extra = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": reason} if retry else {}
        status, text, _ = self._post(data, ctype, extra)
        return status, text

    again = send

    def deliver(self, body: dict | str, lose_acks: int = 0) -> list[tuple[int, int | None]]:
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        made: list[tuple[int, int | None]] = []
        extra: dict[str, str] = {}
        for attempt in range(len(self.delays) + 1):
            status, _, reason = self._post(data, "application/json", extra)
            made.append((attempt, status))
            if status is not None and 200 <= status < 300 and attempt >= lose_acks:
                return made
            if attempt == len(self.delays):
                return made
            reason = reason or "http_timeout"  # an answer lost on its way back looks late to Slack
            time.sleep(self.delays[attempt])
            extra = {"X-Slack-Retry-Num": str(attempt + 1), "X-Slack-Retry-Reason": reason}
        return made
