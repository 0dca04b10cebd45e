"""Socket Mode that holds: slack_sdk's websocket-client based Socket Mode client (Bolt's
``slack_bolt.adapter.socket_mode.websocket_client``), with pings that notice a dead link in
seconds.

Why this client: measured against the loopback Socket Mode stand-in (tests/support/fakes_socket_mode.py),
the built-in client spins at 100% of a core after a FIN without a close frame until its
stale-connection check fires (4 ping periods), and notices a silent link only after those 4
periods too; the websocket-client one notices a close frame, a FIN and a reset at once, without
a busy loop, and reconnects within about a second. It notices a silent link when a ping goes
unanswered for ``ping_timeout`` seconds, but slack_sdk does not pass ``ping_timeout`` to
websocket-client's ``run_forever``, so :class:`_Client` does. (The aiohttp and websockets
clients need an asyncio Bolt app.) ``TORCHBOT_SOCKET_PING_SECONDS`` sets the ping period; the
pong timeout is two thirds of it, at most 1 s, so a silent link is found within about two
periods and the bot is back within 5 s of any kind of drop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from slack_bolt.adapter.socket_mode.base_handler import BaseSocketModeHandler
from slack_bolt.adapter.socket_mode.internals import run_bolt_app, send_response
from slack_sdk.socket_mode.websocket_client import SocketModeClient

log = logging.getLogger("torchbot.slack")


def ping_timeout(ping_seconds: float) -> float:
    return min(1.0, ping_seconds * 2 / 3)


class _Client(SocketModeClient):
    """slack_sdk's websocket-client Socket Mode client, made to come back fast:

    - pings carry a pong timeout (slack_sdk passes none), so a silent link ends the session;
    - each session runs in a thread of its own, started as soon as it exists: websocket-client
      waits up to 3 s for a close frame when it tears a dead session down, and that wait must
      not hold up the next session (slack_sdk runs every session on one thread);
    - a session that ends in an error (pong timeout, reset) asks for a new URL at once, instead
      of after that teardown or at the next monitor tick;
    - every way of reconnecting (close, error, monitor, ``disconnect``) goes through one gate
      that backs off while Slack keeps failing (1, 2, 4 … 30 s between tries) until a ``hello``
      arrives, so an outage costs neither a busy loop nor a flood of apps.connections.open;
    - the monitor leaves a session alone while its handshake is under way (slack_sdk's first
      check comes right after the first connect and would replace it).
    """

    def __init__(self, *args, pong_timeout: float, **kwargs):
        self.pong_timeout = pong_timeout  # set first: the base class starts its session runner
        self._started: set[int] = set()
        self._gate = threading.Lock()
        self._born = 0.0
        self._failures = 0
        self._next_try = 0.0
        super().__init__(*args, **kwargs)
        self.on_error_listeners.append(self._on_session_error)

    # -- reconnecting -----------------------------------------------------------------------

    def connect_to_new_endpoint(self, force: bool = False):
        with self._gate:
            now = time.monotonic()
            if now < self._next_try:
                return  # the monitor tries again when the back-off has passed
            self._next_try = now + (0.0 if self._failures == 0 else min(30.0, 2.0 ** (self._failures - 1)))
            self._failures += 1
        super().connect_to_new_endpoint(force)

    def connected_ok(self) -> None:
        """A ``hello`` arrived: the next drop is retried at once again."""
        with self._gate:
            self._failures, self._next_try = 0, 0.0

    def connect(self) -> None:
        self._born = time.monotonic()
        super().connect()
        self._start(self.current_session)

    def _monitor_current_session(self):
        if time.monotonic() - self._born < max(2.0, self.ping_interval):
            return
        super()._monitor_current_session()

    def _on_session_error(self, ws, error: Exception) -> None:
        if self.closed or not self.auto_reconnect_enabled or ws is not self.current_session:
            return

        def reconnect():
            try:
                self.connect_to_new_endpoint(force=True)
            except Exception as err:  # noqa: BLE001  Slack unreachable: the monitor tries again
                self.logger.warning("Socket Mode reconnect failed: %s: %s", type(err).__name__, err)

        threading.Thread(target=reconnect, name="torchbot-socket-reconnect", daemon=True).start()

    # -- one thread per session --------------------------------------------------------------

    def _run_current_session(self):
        self._start(self.current_session)

    def _start(self, session) -> None:
        if session is None:
            return
        with self._gate:
            if id(session) in self._started:
                return
            self._started.add(id(session))
        threading.Thread(target=self._run, args=(session,), name="torchbot-socket-session", daemon=True).start()

    def _run(self, session) -> None:
        try:
            session.run_forever(ping_interval=self.ping_interval, ping_timeout=self.pong_timeout)
        except Exception as err:  # noqa: BLE001  the monitor reconnects; the log says why
            self.logger.warning("Socket Mode session ended: %s: %s", type(err).__name__, err)
            session.close()


class SocketHandler(BaseSocketModeHandler):
    """Bolt's Socket Mode handler over :class:`_Client`; ``on_hello`` runs on every ``hello``."""

    def __init__(self, app, app_token: str, ping_seconds: float, on_hello: Callable[[int], None] | None = None,
                 concurrency: int = 10):
        self.app = app
        self.app_token = app_token
        self.hellos = 0
        self._hello = threading.Event()
        self.client = _Client(app_token=app_token, logger=log, web_client=app.client, ping_interval=ping_seconds,
                              concurrency=concurrency, pong_timeout=ping_timeout(ping_seconds))
        self.client.socket_mode_request_listeners.append(self.handle)

        def hello(_ws, message: str) -> None:
            if message.startswith('{"type": "hello"') or '"type":"hello"' in message[:40]:
                self.hellos += 1
                self.client.connected_ok()
                self._hello.set()
                if on_hello:
                    on_hello(self.hellos)

        self.client.on_message_listeners.append(hello)

    def handle(self, client, req) -> None:
        start = time.time()
        send_response(client, req, run_bolt_app(self.app, req), start)

    def wait_hello(self, timeout: float) -> bool:
        return self._hello.wait(timeout)
