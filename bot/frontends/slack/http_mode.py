"""Request-signed HTTP mode: a WSGI guard in front of Bolt's WSGI adapter, served by waitress.

The guard answers every request properly before bolt sees it: a request that is not signed
with the signing secret gets 401 (checked on the raw bytes, first), a signed one that is
malformed gets 400 naming what is wrong (body not UTF-8, a timestamp that is not ASCII digits, a
JSON content type on a form body, a ``payload`` or ``event`` that is not a JSON object,
``actions: []``), and
anything unexpected behind it is logged under an error id and answered with an apology,
never a 5xx. Bolt verifies the signature again (defence in depth).

The server is waitress, a production WSGI server, chosen over gunicorn and uvicorn because
torchbot is one process holding live state that every request shares (the job runner's
threads, the schedule, the deliveries already answered, the state-store workers):

- waitress runs inside that process, on threads, as a library (``create_server``), so
  ``torchbot serve --http`` stays one process with one start-up check, one log and one
  Ctrl-C; gunicorn forks worker processes, each of which would get a job runner and a
  schedule of its own (two builds of one branch at once), unless cut to a single worker;
- Bolt's app is synchronous: uvicorn would need an ASGI wrapper running it on a thread pool
  anyway, or a rewrite on Bolt's AsyncApp;
- waitress is pure Python with no dependencies, buffers slow clients' requests and
  responses off its worker threads (a slow or stalled client holds no worker), caps the
  body size and the number of connections, and answers malformed HTTP with 4xx itself.

Its worker threads (``THREADS``) only verify, parse and ack; listeners run on Bolt's own
executor after the ack, and slow work on the job runner."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import logging
import threading
import time
from collections.abc import Callable
from urllib.parse import parse_qs

from bot.frontends.incidents import report

log = logging.getLogger("torchbot.slack")
PATH = "/slack/events"
MAX_BODY = 1 << 20  # Slack's payloads are far smaller
THREADS = 8  # waitress workers: each verifies, parses and acks (listeners run on Bolt's executor)


def _reply(start_response, status: str, text: str, ctype: str = "text/plain; charset=utf-8"):
    data = text.encode()
    start_response(status, [("Content-Type", ctype), ("Content-Length", str(len(data)))])
    return [data]


def malformed(body: bytes, ctype: str) -> str | None:
    """Why a signed request body cannot be a Slack request, or None when it can."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    if "application/json" in ctype:
        try:
            data = json.loads(text)
        except ValueError:
            return "the body is not JSON, but the Content-Type says it is"
        if not isinstance(data, dict):
            return "the JSON body is not an object"
        if "event" in data and not isinstance(data["event"], dict):
            return "event is not a JSON object"
        return _shape(data, EVENT_SHAPE) or (_shape(data["event"], INNER_EVENT_SHAPE, "event.")
                                             if "event" in data else None)
    form = parse_qs(text, keep_blank_values=True)
    if "payload" not in form:
        return None if "command" in form or "ssl_check" in form or not text else "the form has no command or payload"
    try:
        payload = json.loads(form["payload"][0])
    except ValueError:
        return "payload is not JSON"
    if not isinstance(payload, dict):
        return "payload is not a JSON object"
    if why := _shape(payload, PAYLOAD_SHAPE):
        return why
    if payload.get("type") == "block_actions":
        actions = payload.get("actions")
        if not isinstance(actions, list) or not actions or not all(
                isinstance(a, dict) and a.get("action_id") for a in actions):
            return "block_actions payload without actions"
    return None


# The types Slack gives the fields torchbot (and Bolt) read, by where they are: a signed body whose
# field has another type is answered 400 naming it (never handed on to fail deeper as a 5xx).
_OBJ, _STR, _LIST = (dict, type(None)), (str, type(None)), (list, type(None))
PAYLOAD_SHAPE = {"type": _STR, "user": _OBJ, "team": _OBJ, "channel": _OBJ, "enterprise": _OBJ,
                 "container": _OBJ, "message": _OBJ, "view": _OBJ, "state": _OBJ, "actions": _LIST,
                 "response_url": _STR, "trigger_id": _STR, "api_app_id": _STR, "token": _STR,
                 "callback_id": _STR, "action_ts": _STR, "is_enterprise_install": (bool, type(None))}
EVENT_SHAPE = {"type": _STR, "team_id": _STR, "api_app_id": _STR, "event_id": _STR, "enterprise_id": _STR,
               "authorizations": _LIST, "token": _STR, "challenge": _STR, "context_team_id": _STR,
               "is_ext_shared_channel": (bool, type(None))}
INNER_EVENT_SHAPE = {"type": _STR, "user": (str, dict, type(None)), "channel": (str, dict, type(None)),
                     "text": _STR, "ts": _STR, "thread_ts": _STR, "event_ts": _STR, "team": (str, dict, type(None)),
                     "bot_id": _STR, "subtype": _STR, "blocks": _LIST, "files": _LIST, "tab": _STR,
                     "view": _OBJ, "message": _OBJ, "previous_message": _OBJ}
_KIND = {_OBJ: "a JSON object", _STR: "a string", _LIST: "a list", (bool, type(None)): "a boolean"}
_SUB_SHAPE = {"id": _STR, "team_id": _STR, "name": _STR, "username": _STR, "domain": _STR}


def _shape(data: dict, shape: dict, where: str = "") -> str | None:
    """Why ``data`` is not of Slack's shape (a field of another type), or None."""
    for name, types in shape.items():
        if name in data and not isinstance(data[name], types):
            return f"{where}{name} is not {_KIND.get(types, 'of the type Slack gives it')}"
        value = data.get(name)
        if isinstance(value, dict) and name in ("user", "team", "channel", "enterprise"):
            for sub, sub_types in _SUB_SHAPE.items():
                if sub in value and not isinstance(value[sub], sub_types):
                    return f"{where}{name}.{sub} is not a string"
    actions = data.get("actions") if not where else None
    if isinstance(actions, list):
        for a in actions:
            if isinstance(a, dict):
                for sub in ("action_id", "block_id", "value", "type", "action_ts"):
                    if sub in a and not isinstance(a[sub], _STR):
                        return f"actions[].{sub} is not a string"
    return None


MAX_TIMESTAMP_DIGITS = 12  # Unix seconds have 10 digits until the year 2286


def timestamp_problem(timestamp: str) -> str | None:
    """Why an X-Slack-Request-Timestamp is not a Unix time in ASCII digits, or None when it is
    (``isdigit`` alone admits "²", which ``int`` refuses, and 5000 digits, which it refuses too)."""
    if not (timestamp.isascii() and timestamp.isdigit()):
        return "X-Slack-Request-Timestamp is not an integer"
    if len(timestamp) > MAX_TIMESTAMP_DIGITS:
        return "X-Slack-Request-Timestamp is too long"
    return None


def signed(secret: bytes, timestamp: str, body: bytes, signature: str, now: float | None = None) -> bool:
    """Slack's v0 signature over the raw bytes (slack_sdk's verifier decodes the body as UTF-8
    first, which a forged body can make fail), within Slack's 5 minutes. The timestamp must
    have passed ``timestamp_problem``; a signature that is not ASCII is simply not Slack's."""
    if abs((now or time.time()) - int(timestamp)) > 300 or not signature.isascii():
        return False
    mac = hmac.new(secret, b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(b"v0=" + mac.encode(), signature.encode("ascii"))


def guard(inner, signing_secret: str):
    """WSGI middleware: 401 for unsigned, 400 for malformed, an apology for the unexpected.

    Every step runs inside one try: a request the guard itself cannot handle is logged under an
    error id and answered 400 before its signature is verified (nothing unsigned reaches a 5xx
    or Bolt), and with the apology after."""
    secret = signing_secret.encode()

    def app(environ, start_response):
        verified = False
        try:
            reply = _checked(environ, secret)
            if reply is not None:
                return _reply(start_response, *reply)
            verified = True
            return _no_5xx(inner, environ, start_response)
        except Exception:  # noqa: BLE001  (the request boundary: an answer with an error id, never a 5xx)
            if not verified:
                return _reply(start_response, "400 Bad Request", report(log, "checking a Slack request") + "\n")
            text = report(log, "handling a Slack request")
            return _reply(start_response, "200 OK", json.dumps({"response_type": "ephemeral", "text": text}),
                          "application/json")

    return app


def _no_5xx(inner, environ, start_response):
    """``inner``'s answer, except that a 5xx (Bolt answers 500 when a listener or middleware
    raised) becomes the apology with an error id: Slack is never answered 5xx."""
    said: list = []

    def capture(status, headers, exc_info=None):
        said[:] = [status, headers]
        return lambda data: None  # the legacy write(): Bolt's adapter returns its body instead

    body = b"".join(inner(environ, capture))
    if not said or said[0][:1] == "5":
        text = report(log, f"handling a Slack request (answered {said[0] if said else 'nothing'})")
        return _reply(start_response, "200 OK", json.dumps({"response_type": "ephemeral", "text": text}),
                      "application/json")
    start_response(*said)
    return [body]


def _checked(environ, secret: bytes) -> tuple[str, str] | None:
    """The (status, text) that refuses this request, or None for a signed, well-formed one (its
    body then put back in ``wsgi.input`` for Bolt)."""
    if environ.get("PATH_INFO") != PATH:
        return "404 Not Found", f"torchbot answers on {PATH}\n"
    if environ.get("REQUEST_METHOD") != "POST":
        return "405 Method Not Allowed", "POST only\n"
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return "400 Bad Request", "bad Content-Length\n"
    if length > MAX_BODY:
        return "413 Content Too Large", "request too large\n"
    body = environ["wsgi.input"].read(length) if length else b""
    ts = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "").strip()
    sig = environ.get("HTTP_X_SLACK_SIGNATURE", "").strip()
    if not ts or not sig:
        return "401 Unauthorized", "unsigned request\n"
    problem = timestamp_problem(ts)
    if problem:
        return "400 Bad Request", problem + "\n"
    if not signed(secret, ts, body, sig):
        return "401 Unauthorized", "invalid or expired signature\n"
    why = malformed(body, environ.get("CONTENT_TYPE", ""))
    if why:
        return "400 Bad Request", why + "\n"
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return None


READ_TIMEOUT = 5.0  # seconds a client has to send a whole request, headers and body (Slack sends at once)
IDLE_TIMEOUT = 15  # seconds a connection may sit idle between requests
PER_CLIENT = 16  # connections of one address; past it, each new one closes its oldest stalled one
STALLED = 1.0  # seconds without a byte after which a connection not being answered counts as stalled
CONNECTION_LIMIT = 1000  # connections at most; near it, the oldest one not being answered is closed


def _first_path(channel) -> str:
    requests = getattr(channel, "requests", None) or []
    return str(getattr(requests[0], "path", "") or "") if requests else ""


def _dispatcher():
    """waitress's thread pool with Slack's requests ahead of every other (page loads, probes):
    a task for ``PATH`` goes to the front of the queue."""
    from waitress.task import ThreadedTaskDispatcher

    class SlackFirst(ThreadedTaskDispatcher):
        def add_task(self, task):
            if _first_path(task) == PATH:
                with self.lock:
                    self.queue.appendleft(task)
                    self.queue_cv.notify()
                return
            super().add_task(task)

    return SlackFirst()


def _channel_class():
    """waitress's connection with the time its current request began (``request_started``)."""
    from waitress.channel import HTTPChannel

    class Deadlined(HTTPChannel):
        request_started: float | None = None

        def received(self, data):
            if data and self.request is None and self.request_started is None:
                self.request_started = time.monotonic()
            try:
                return super().received(data)
            finally:
                if self.request is None:  # every request received is whole: nothing is being read
                    self.request_started = None

    return Deadlined


def _server_class(base, trusted: Callable[[str], bool]):
    """waitress's server, which also closes a connection that has been sending one request for
    longer than ``READ_TIMEOUT`` (a slow client: headers a line every 20 s); past ``PER_CLIENT``
    connections of one address (trusted proxies excepted) closes its oldest stalled one for each
    new one; and makes room near ``CONNECTION_LIMIT`` by closing the oldest connection not being
    answered. New clients (Slack) always get in."""

    class Guarded(base):
        def maintenance(self, now):
            super().maintenance(now)
            late = time.monotonic() - READ_TIMEOUT
            for channel in list(self.active_channels.values()):
                started = getattr(channel, "request_started", None)
                if started is not None and started < late and not channel.requests and not channel.total_outbufs_len:
                    channel.will_close = True
                    log.info("closed a connection from %s: no whole request in %g s", channel.addr[0], READ_TIMEOUT)

        def _evictable(self, addr: str | None, stalled: bool) -> list:
            """Connections not being answered (of ``addr``, or any), oldest first; ``stalled``:
            only those that sent nothing for ``STALLED`` seconds."""
            now = time.time()
            return sorted((c for c in self.active_channels.values()
                           if not c.requests and not c.will_close and not c.total_outbufs_len  # nothing to send
                           and (addr is None or c.addr[0] == addr)
                           and (not stalled or now - c.last_activity > STALLED)),
                          key=lambda c: c.creation_time)

        def handle_accept(self):
            try:
                v = self.accept()
                if v is None:
                    return
                conn, addr = v
                self.set_socket_options(conn)
            except OSError:
                return
            addr = self.fix_addr(addr)
            host = addr[0] if isinstance(addr, tuple) else str(addr)
            if not trusted(host) and sum(c.addr[0] == host for c in self.active_channels.values()) >= PER_CLIENT:
                for victim in self._evictable(host, stalled=True)[:1]:
                    log.info("closed a stalled connection of %s: it holds %d", host, PER_CLIENT)
                    victim.handle_close()
            if len(self._map) >= CONNECTION_LIMIT - 8:
                for victim in self._evictable(None, stalled=False)[:1]:
                    victim.handle_close()
            self.channel_class(self, conn, addr, self.adj, map=self._map)

    return Guarded


class HttpServer:
    """waitress serving a WSGI app on host:port, in this process: ``server_port`` (the port
    bound, also when 0 was asked), ``serve_forever()``, and ``shutdown()`` from another thread.

    Slow clients cannot starve Slack's endpoint: a request must arrive whole within
    ``READ_TIMEOUT`` seconds (headers and body), an idle connection closes after
    ``IDLE_TIMEOUT``, past ``PER_CLIENT`` connections of one address its stalled ones make room
    (``trusted`` addresses, the reverse proxies, excepted), near ``CONNECTION_LIMIT`` the oldest
    connection not being answered makes room, and Slack's requests go ahead of every other in the queue of
    the ``threads`` workers."""

    def __init__(self, wsgi_app, host: str, port: int, threads: int = THREADS,
                 trusted: Callable[[str], bool] | None = None):
        from waitress.adjustments import Adjustments
        from waitress.server import TcpWSGIServer

        adj = Adjustments(
            host=host, port=port, threads=threads, ident="torchbot",
            backlog=1024,  # bursts of concurrent requests queue instead of being reset
            connection_limit=CONNECTION_LIMIT, channel_timeout=IDLE_TIMEOUT, cleanup_interval=1,
            max_request_body_size=MAX_BODY, max_request_header_size=64 * 1024,
            clear_untrusted_proxy_headers=False,  # bot.frontends.web judges forwarding headers itself
            asyncore_use_poll=True)
        dispatcher = _dispatcher()
        dispatcher.set_thread_count(threads)
        server_class = _server_class(TcpWSGIServer, trusted or (lambda _addr: False))
        shared: dict = {}
        servers = [server_class(wsgi_app, map=shared, dispatcher=dispatcher, adj=adj, sockinfo=info)
                   for info in adj.listen]  # one per address the host resolves to, one loop over all
        for server in servers:
            server.channel_class = _channel_class()
        self._server = servers[0]
        self.server_port = int(self._server.effective_port)
        self._serving = threading.Event()
        self._stopped = threading.Event()

    def serve_forever(self) -> None:
        self._serving.set()
        try:
            self._server.run()
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop accepting, close every connection and the workers; returns once the loop ended.

        The loop sleeps in poll() for up to a second: the channels are closed by the loop itself,
        woken through waitress's trigger, which leaves its map empty, so it ends at once."""
        server = self._server

        def close_all() -> None:  # the listener (which closes the trigger too) and each connection
            for channel in list(server._map.values()):
                with contextlib.suppress(OSError):
                    channel.close()

        woken = False
        if self._serving.is_set() and not self._stopped.is_set():
            with contextlib.suppress(OSError):  # the loop ended meanwhile: the trigger is closed
                server.trigger.pull_trigger(close_all)
                woken = True
        if not woken:
            close_all()
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=5)
        if self._serving.is_set():
            self._stopped.wait(5)
        close_all()  # nothing left when the loop did it; otherwise (it never woke) here

    def server_close(self) -> None:
        """Nothing more to close after ``shutdown`` (kept for callers that close in two steps)."""


def make_http_server(app, host: str = "127.0.0.1", port: int = 3000, pages=None,
                     trusted: Callable[[str], bool] | None = None) -> HttpServer:
    """Bolt's WSGI adapter on ``/slack/events`` behind the guard, served by waitress; ``pages``
    (a WSGI app taking every request and handing the rest on, see ``bot.frontends.web.route``)
    serves read-only pages beside it."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    secret = app._torchbot_signing_secret  # set by create_app
    if not secret:
        from config.errors import ConfigError

        raise ConfigError("TORCHBOT_SLACK_SIGNING_SECRET is not set: HTTP mode checks every request against it.")
    slack = guard(SlackRequestHandler(app, path=PATH), secret)
    return HttpServer(pages(slack) if pages else slack, host, port, trusted=trusted)


def start_in_thread(server: HttpServer) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, name="torchbot-http", daemon=True)
    t.start()
    return t
