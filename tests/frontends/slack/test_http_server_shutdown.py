"""``HttpServer.shutdown`` wakes waitress's loop instead of waiting out its one-second poll:
every restart of ``torchbot serve --http`` (and every test serving Slack over HTTP) stops at
once, with the loop ended, the port closed and the connections gone."""

from __future__ import annotations

import http.client
import socket
import time

from bot.frontends.slack.http_mode import HttpServer, start_in_thread


def _app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def test_shutdown_wakes_the_loop_closes_the_port_and_the_open_connections():
    took = []
    for _ in range(5):
        server = HttpServer(_app, "127.0.0.1", 0)
        thread = start_in_thread(server)
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"ok"  # served; the connection is kept alive
        start = time.monotonic()
        server.shutdown()
        took.append(time.monotonic() - start)
        assert not thread.is_alive()  # the loop has ended when shutdown returns
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", server.server_port)) != 0  # nobody listens any more
        conn.request("GET", "/")  # the kept-alive connection was closed by the server
        try:
            conn.getresponse()
            raise AssertionError("a request on a closed server's connection was answered")
        except (ConnectionError, http.client.HTTPException, OSError):
            pass
        conn.close()
    # waitress polls with a 1 s timeout: without the wake-up a shutdown that finds the loop asleep
    # in poll() waits that out (about one in three did)
    assert max(took) < 0.9, took


def test_shutdown_of_a_server_never_served_returns_at_once():
    server = HttpServer(_app, "127.0.0.1", 0)
    start = time.monotonic()
    server.shutdown()
    assert time.monotonic() - start < 0.5  # it does not wait for a loop that never ran
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", server.server_port)) != 0
