"""The read-only web pages ``torchbot serve --http`` serves beside ``/slack/events``: ``/dashboard``
(release.dashboard.page: HTML and CSS, no JavaScript). GET only; nothing secret is on the page.

Listening on loopback, the page is open to whoever can reach it (this host). Listening beyond it,
it needs TORCHBOT_API_TOKEN: ``Authorization: Bearer <token>``, or the token as the password of
HTTP Basic (a browser asks for it; any user name); without the setting it answers 403 saying so."""

from __future__ import annotations

import base64
import hmac
import ipaddress
import logging

from bot.frontends.incidents import report

log = logging.getLogger("torchbot.web")
PATH = "/dashboard"


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _token_of(header: str) -> str | None:
    kind, _, value = header.partition(" ")
    if kind.lower() == "bearer":
        return value.strip()
    if kind.lower() == "basic":
        try:
            return base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return None
    return None


def refusal(environ, host: str, token: str | None) -> tuple[str, str, list] | None:
    """(status, text, extra headers) refusing the request, or None to serve it."""
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        return "405 Method Not Allowed", "GET only\n", [("Allow", "GET, HEAD")]
    if is_loopback(host):
        return None
    if token is None:
        return ("403 Forbidden", "torchbot listens beyond loopback: set TORCHBOT_API_TOKEN to serve /dashboard "
                "(it asks for that token).\n", [])
    given = _token_of(environ.get("HTTP_AUTHORIZATION", ""))
    if given is None or not hmac.compare_digest(given.encode(), token.encode()):
        return "401 Unauthorized", "the dashboard needs torchbot's API token\n", [
            ("WWW-Authenticate", 'Basic realm="torchbot", charset="UTF-8"')]
    return None


def dashboard_app(ctx, host: str):
    """A WSGI app serving ``/dashboard`` for ``ctx``'s repositories."""
    secret = ctx.settings.api_token

    def app(environ, start_response):
        refused = refusal(environ, host, secret.get_secret_value() if secret else None)
        if refused:
            status, text, extra = refused
            return _send(start_response, status, text, "text/plain; charset=utf-8", extra)
        try:
            from release.dashboard.commands import dashboard
            from release.dashboard.page import render

            html = render(dashboard(ctx).model)
        except Exception:  # noqa: BLE001  (the request boundary: a sentence with an error id)
            return _send(start_response, "500 Internal Server Error", report(log, "the dashboard page") + "\n",
                         "text/plain; charset=utf-8")
        return _send(start_response, "200 OK", html, "text/html; charset=utf-8",
                     [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                      ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")],
                     head=environ.get("REQUEST_METHOD") == "HEAD")

    return app


def _send(start_response, status: str, text: str, ctype: str, extra=(), head: bool = False):
    data = text.encode()
    start_response(status, [("Content-Type", ctype), ("Content-Length", str(len(data))), *extra])
    return [b""] if head else [data]


def route(pages: dict, fallback):
    """WSGI: ``pages`` (path -> app) first, everything else to ``fallback``."""

    def app(environ, start_response):
        page = pages.get(environ.get("PATH_INFO", ""))
        return (page or fallback)(environ, start_response)

    return app
