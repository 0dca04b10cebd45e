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
        return None
    form = parse_qs(text, keep_blank_values=True)
    if "payload" not in form:
        return None if "command" in form or "ssl_check" in form or not text else "the form has no command or payload"
    try:
        payload = json.loads(form["payload"][0])
    except ValueError:
        return "payload is not JSON"
    if not isinstance(payload, dict):
        return "payload is not a JSON object"
    if payload.get("type") == "block_actions":
        actions = payload.get("actions")
        if not isinstance(actions, list) or not actions or not all(
                isinstance(a, dict) and a.get("action_id") for a in actions):
            return "block_actions payload without actions"
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
            return inner(environ, start_response)
        except Exception:  # noqa: BLE001  (the request boundary: an answer with an error id, never a 5xx)
            if not verified:
                return _reply(start_response, "400 Bad Request", report(log, "checking a Slack request") + "\n")
            text = report(log, "handling a Slack request")
            return _reply(start_response, "200 OK", json.dumps({"response_type": "ephemeral", "text": text}),
                          "application/json")

    return app


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


class HttpServer:
    """waitress serving a WSGI app on host:port, in this process: ``server_port`` (the port
    bound, also when 0 was asked), ``serve_forever()``, and ``shutdown()`` from another thread."""

    def __init__(self, wsgi_app, host: str, port: int, threads: int = THREADS):
        from waitress.server import create_server

        self._server = create_server(
            wsgi_app, host=host, port=port, threads=threads, ident="torchbot",
            backlog=1024,  # bursts of concurrent requests queue instead of being reset
            connection_limit=200, channel_timeout=60, max_request_body_size=MAX_BODY,
            clear_untrusted_proxy_headers=True, asyncore_use_poll=True)
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


def make_http_server(app, host: str = "127.0.0.1", port: int = 3000, pages=None) -> HttpServer:
    """Bolt's WSGI adapter on ``/slack/events`` behind the guard, served by waitress; ``pages``
    (a WSGI app taking every request and handing the rest on, see ``bot.frontends.web.route``)
    serves read-only pages beside it."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    secret = app._torchbot_signing_secret  # set by create_app
    if not secret:
        from config.errors import ConfigError

        raise ConfigError("TORCHBOT_SLACK_SIGNING_SECRET is not set: HTTP mode checks every request against it.")
    slack = guard(SlackRequestHandler(app, path=PATH), secret)
    return HttpServer(pages(slack) if pages else slack, host, port)


def start_in_thread(server: HttpServer) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, name="torchbot-http", daemon=True)
    t.start()
    return t
