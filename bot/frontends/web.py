"""The read-only web pages ``torchbot serve --http`` serves beside ``/slack/events``: ``/dashboard``
(release.dashboard.page: HTML and CSS, no JavaScript). GET only; nothing secret is on the page.

The page is a snapshot: a background thread (``Snapshot``) gathers the dashboard every
``REFRESH`` seconds and a request only sends the last one, so no page load waits on git, the
state DB or a slow GitHub, and none holds a worker thread Slack's requests need. Before the first
snapshot the page says so (503 with ``Retry-After``).

Who may read it: a local client (loopback), or anyone with TORCHBOT_API_TOKEN (``Authorization:
Bearer <token>``, or the token as the password of HTTP Basic; any user name). "Local" is judged
from the client, not from where torchbot listens: the peer address is loopback and no forwarding
header says the request came through a proxy; from a proxy in TORCHBOT_TRUSTED_PROXIES the client
is the address it adds to X-Forwarded-For. A local request must name a loopback host or one of
TORCHBOT_ALLOWED_HOSTS in its Host header (a DNS-rebinding page cannot read it); other requests
are checked against TORCHBOT_ALLOWED_HOSTS when it is set."""

from __future__ import annotations

import base64
import hmac
import ipaddress
import logging
import threading
import time
from collections.abc import Callable

from bot.frontends.incidents import report

log = logging.getLogger("torchbot.web")
PATH = "/dashboard"
REFRESH = 60.0  # seconds between two snapshots of the page
FORWARDING = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP", "HTTP_X_FORWARDED_HOST")
LOOPBACK_NAMES = ("localhost", "localhost.")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _networks(proxies) -> list:
    return [ipaddress.ip_network(p, strict=False) for p in proxies or ()]


def _in(addr: str, networks: list) -> bool:
    try:
        ip = ipaddress.ip_address(addr.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in n for n in networks)


def proxy_check(settings) -> Callable[[str], bool]:
    """Whether an address is one of TORCHBOT_TRUSTED_PROXIES (the server keeps no per-client limit
    on them: every client comes through them)."""
    networks = _networks(getattr(settings, "trusted_proxies", ()))
    return lambda addr: _in(addr, networks)


def client_address(environ, proxies: list) -> str | None:
    """The client's address: the peer's, or from a trusted proxy the nearest address of
    X-Forwarded-For that is not itself a trusted proxy (the first, when all are); None when a
    forwarding header came from a peer that is not trusted (the client is unknown, so never local)."""
    peer = str(environ.get("REMOTE_ADDR") or "")
    if _in(peer, proxies):
        hops = [h.strip() for h in str(environ.get("HTTP_X_FORWARDED_FOR") or "").split(",") if h.strip()]
        for hop in reversed(hops):
            if not _in(hop, proxies):
                return hop
        return hops[0] if hops else peer  # every hop a trusted proxy: the first is the client
    if any(environ.get(h) for h in FORWARDING):
        return None
    return peer


def is_local(environ, proxies: list) -> bool:
    addr = client_address(environ, proxies)
    return addr is not None and is_loopback(addr)


def _host_of(environ) -> str:
    host = str(environ.get("HTTP_HOST") or "").strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


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


def refusal(environ, token: str | None, proxies: list | None = None, hosts=()) -> tuple[str, str, list] | None:
    """(status, text, extra headers) refusing the request, or None to serve it."""
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        return "405 Method Not Allowed", "GET only\n", [("Allow", "GET, HEAD")]
    host = _host_of(environ)
    named = is_loopback(host) or host in hosts
    if is_local(environ, proxies or []):
        if not named:
            return ("421 Misdirected Request", "this page answers to localhost, 127.0.0.1, [::1] and "
                    "TORCHBOT_ALLOWED_HOSTS only\n", [])
        return None
    if hosts and not named:
        return "421 Misdirected Request", "this page answers to TORCHBOT_ALLOWED_HOSTS only\n", []
    if token is None:
        return ("403 Forbidden", "the dashboard is open to local clients only: set TORCHBOT_API_TOKEN to serve it "
                "to others (it asks for that token).\n", [])
    given = _token_of(environ.get("HTTP_AUTHORIZATION", ""))
    if given is None or not hmac.compare_digest(given.encode(), token.encode()):
        return "401 Unauthorized", "the dashboard needs torchbot's API token\n", [
            ("WWW-Authenticate", 'Basic realm="torchbot", charset="UTF-8"')]
    return None


class Snapshot:
    """The page, made by ``compute()`` on a background thread every ``every`` seconds (a failed
    refresh keeps the last page and logs under an error id); ``current()`` never waits."""

    def __init__(self, compute: Callable[[], str], every: float = REFRESH):
        self.compute, self.every = compute, every
        self.html: str | None = None
        self.at: float | None = None  # time.time() of the page's making
        self.started = time.time()
        self.error: str | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="torchbot-page", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> Snapshot:
        """Start refreshing (once; later calls do nothing)."""
        with self._lock:
            if not self._thread.is_alive() and not self._stop.is_set():
                self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def wait_ready(self, timeout: float) -> bool:
        """For callers that may wait (tests, benches): True once a first page was made or failed."""
        self.start()
        return self._ready.wait(timeout)

    def refresh(self) -> None:
        from config.errors import TorchbotError

        try:
            html = self.compute()
        except TorchbotError as err:  # said in one line (no repository, a state DB that does not answer)
            if self.error != err.message:
                log.warning("the dashboard page could not be gathered: %s", err.message)
            self.error = err.message
        except Exception:  # noqa: BLE001  (the page keeps its last snapshot; the error is logged with an id)
            self.error = report(log, "gathering the dashboard page")
        else:
            self.html, self.at, self.error = html, time.time(), None
        self._ready.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self.every)

    def current(self) -> tuple[str | None, str | None]:
        self.start()  # the first page load starts it when serve has not yet
        return self.html, self.error


def dashboard_app(ctx, host: str | None = None, *, every: float = REFRESH, snapshot: Snapshot | None = None):
    """A WSGI app serving ``/dashboard`` for ``ctx``'s repositories from a ``Snapshot``
    (``app.snapshot``; ``serve`` starts it as it starts serving). ``host`` (where torchbot listens)
    no longer decides who is local: the client does."""
    s = ctx.settings
    secret = s.api_token
    proxies = _networks(getattr(s, "trusted_proxies", ()))
    hosts = tuple(getattr(s, "allowed_hosts", ()) or ())

    def compute() -> str:
        from release.dashboard.commands import dashboard
        from release.dashboard.page import render

        return render(dashboard(ctx).model)

    snap = snapshot or Snapshot(compute, every)  # started by serve once it serves (or the first page load)

    def app(environ, start_response):
        refused = refusal(environ, secret.get_secret_value() if secret else None, proxies, hosts)
        if refused:
            status, text, extra = refused
            return _send(start_response, status, text, "text/plain; charset=utf-8", extra)
        html, error = snap.current()
        if html is None:
            why = (f"the dashboard could not be gathered yet ({error}); torchbot tries again every {snap.every:g} s"
                   if error else f"the dashboard is being gathered (for {time.time() - snap.started:.0f} s); "
                                 "reload in a few seconds")
            return _send(start_response, "503 Service Unavailable", why + "\n", "text/plain; charset=utf-8",
                         [("Retry-After", "5")])
        return _send(start_response, "200 OK", html, "text/html; charset=utf-8",
                     [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                      ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")],
                     head=environ.get("REQUEST_METHOD") == "HEAD")

    app.snapshot = snap
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
