"""Slow clients cannot starve Slack's endpoint (the production server, a real socket): a client
that drips its headers is closed once it has spent ``READ_TIMEOUT`` on one request; past
``PER_CLIENT`` connections of one address its stalled ones make room for new ones; a signed
request is answered meanwhile; Slack's requests go ahead of others in the workers' queue."""

from __future__ import annotations

import socket
import time

import pytest

from bot.frontends.slack import http_mode
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot, slash_body
from tests.support.waiting import wait_for


@pytest.fixture
def bot(tmp_path):
    with FakeSlack() as slack:
        bot = SlackBot(tmp_path, slack, repo_path=None)
        yield slack, bot
        bot.close()


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _slow(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    sock.setblocking(False)
    return sock


def test_a_client_dripping_its_headers_is_closed_after_the_read_timeout(bot):
    _slack, bot = bot
    sock = _slow(bot.server.server_port)
    start = time.monotonic()
    try:
        def dripped_and_closed() -> bool:
            try:
                sock.send(b"X-Drip: 1\r\n")  # a header line, again and again: activity, but no request
            except OSError:
                return True
            return _closed(sock)

        wait_for(dripped_and_closed, "the server to close the dripping client", timeout=30, every=0.5)
        took = time.monotonic() - start
        assert http_mode.READ_TIMEOUT <= took < http_mode.READ_TIMEOUT + 5, took
    finally:
        sock.close()


def test_past_the_per_client_cap_stalled_connections_make_room_and_slack_is_answered(bot):
    slack, bot = bot
    port = bot.server.server_port
    stalled = [_slow(port) for _ in range(3 * http_mode.PER_CLIENT)]
    try:
        wait_for(lambda: all(time.time() - c.last_activity > http_mode.STALLED
                             for c in bot.server._server.active_channels.values() if not c.requests),
                 "the slow connections to count as stalled", timeout=30)
        fresh = [_slow(port) for _ in range(http_mode.PER_CLIENT)]  # each new one closes a stalled one
        stalled += fresh
        wait_for(lambda: sum(_closed(s) for s in stalled[: 3 * http_mode.PER_CLIENT]) >= http_mode.PER_CLIENT,
                 "stalled connections to be closed for the new ones", timeout=30)
        body = slash_body(slack, "/variant", "H100 with Graviton3", 1)
        t = time.monotonic()
        assert bot.deliverer.send(body)[0] == 200
        assert time.monotonic() - t < 3  # Slack's limit
    finally:
        for s in stalled:
            s.close()


def test_slack_requests_go_ahead_of_others_in_the_queue():
    dispatcher = http_mode._dispatcher()

    class Channel:
        def __init__(self, path):
            self.requests = [type("R", (), {"path": path})()]

    page, slack_req, other = Channel("/dashboard"), Channel("/slack/events"), Channel("/favicon.ico")
    for c in (page, other, slack_req):
        dispatcher.add_task(c)
    assert list(dispatcher.queue) == [slack_req, page, other]
