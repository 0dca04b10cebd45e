"""Request-signed HTTP mode: a WSGI guard in front of bolt's WSGI adapter, and the server.

The guard answers every request properly before bolt sees it: a request that is not signed
with the signing secret gets 401 (checked on the raw bytes, first), a signed one that is
malformed gets 400 naming what is wrong (body not UTF-8, a non-integer timestamp, a JSON
content type on a form body, a ``payload`` that is not a JSON object, ``actions: []``), and
anything unexpected behind it is logged under an error id and answered with an apology,
never a 5xx. Bolt verifies the signature again (defence in depth)."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import threading
import time
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from bot.frontends.incidents import report

log = logging.getLogger("torchbot.slack")
PATH = "/slack/events"
MAX_BODY = 1 << 20  # Slack's payloads are far smaller


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
        return None if isinstance(data, dict) else "the JSON body is not an object"
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


def signed(secret: bytes, timestamp: str, body: bytes, signature: str, now: float | None = None) -> bool:
    """Slack's v0 signature over the raw bytes (slack_sdk's verifier decodes the body as UTF-8
    first, which a forged body can make fail), within Slack's 5 minutes."""
    if abs((now or time.time()) - int(timestamp)) > 300:
        return False
    mac = hmac.new(secret, b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest("v0=" + mac, signature)


def guard(inner, signing_secret: str):
    """WSGI middleware: 401 for unsigned, 400 for malformed, an apology for the unexpected."""
    secret = signing_secret.encode()

    def app(environ, start_response):
        if environ.get("PATH_INFO") != PATH:
            return _reply(start_response, "404 Not Found", f"torchbot answers on {PATH}\n")
        if environ.get("REQUEST_METHOD") != "POST":
            return _reply(start_response, "405 Method Not Allowed", "POST only\n")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _reply(start_response, "400 Bad Request", "bad Content-Length\n")
        if length > MAX_BODY:
            return _reply(start_response, "413 Content Too Large", "request too large\n")
        body = environ["wsgi.input"].read(length) if length else b""
        ts = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "")
        sig = environ.get("HTTP_X_SLACK_SIGNATURE", "")
        if not ts or not sig:
            return _reply(start_response, "401 Unauthorized", "unsigned request\n")
        if not ts.strip().isdigit():
            return _reply(start_response, "400 Bad Request", "X-Slack-Request-Timestamp is not an integer\n")
        if not signed(secret, ts.strip(), body, sig):
            return _reply(start_response, "401 Unauthorized", "invalid or expired signature\n")
        why = malformed(body, environ.get("CONTENT_TYPE", ""))
        if why:
            return _reply(start_response, "400 Bad Request", why + "\n")
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        try:
            return inner(environ, start_response)
        except Exception:
            text = report(log, "handling a Slack request")
            return _reply(start_response, "200 OK", json.dumps({"response_type": "ephemeral", "text": text}),
                          "application/json")

    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 resets connections under concurrent load


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # request lines go to debug, not stderr
        log.debug("%s - %s", self.address_string(), format % args)


def make_http_server(app, host: str = "127.0.0.1", port: int = 3000):
    """Bolt's WSGI adapter on ``/slack/events`` behind the guard, in a threading server."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    secret = app._torchbot_signing_secret  # set by create_app
    if not secret:
        from config.errors import ConfigError

        raise ConfigError("TORCHBOT_SLACK_SIGNING_SECRET is not set: HTTP mode checks every request against it.")
    handler = guard(SlackRequestHandler(app, path=PATH), secret)
    return make_server(host, port, handler, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)


def start_in_thread(server) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return t
