"""HTTP mode on its production server (waitress), on a real socket: signed requests get 200,
unsigned or forged ones 401, signed malformed ones 400, oversized ones 413, broken HTTP 400,
and never a 5xx; a client that stalls mid-request holds up nobody else; 20 clients at once
are all answered."""

from __future__ import annotations

import json
import socket
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest

from bot.frontends.slack.http_mode import MAX_BODY
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot, slash_body


@pytest.fixture
def bot(tmp_path):
    with FakeSlack() as slack:
        bot = SlackBot(tmp_path, slack, repo_path=None)
        yield slack, bot
        bot.close()


def raw(port: int, data: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are; the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed before reading everything (413)
            pass
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except ConnectionResetError:
            pass
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def request(body: bytes, headers: dict[str, str], path: str = "/slack/events") -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/x-www-form-urlencoded",
            f"Content-Length: {len(body)}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_signed_unsigned_and_malformed_requests_on_the_production_server(bot):
    slack, bot = bot
    port = bot.server.server_port
    body = slash_body(slack, "/variant", "H100 with Graviton3", 1)

    status, headers, reply = raw(port, request(body, bot.deliverer.sign(body)))
    assert status == 200 and headers["server"] == "torchbot"  # waitress, named torchbot
    assert "sm90-armv8_2" in json.loads(reply)["blocks"][0]["text"]["text"]

    assert raw(port, request(body, {}))[0] == 401
    forged = bot.deliverer.sign(body + b"x")
    assert raw(port, request(body, forged))[0] == 401

    bad = b"payload=%7Bnot+json"
    status, _, reply = raw(port, request(bad, bot.deliverer.sign(bad)))
    assert status == 400 and b"payload is not JSON" in reply

    assert raw(port, request(body, bot.deliverer.sign(body), path="/other"))[0] == 404
    too_big = request(b"", {}).replace(b"Content-Length: 0", b"Content-Length: %d" % (MAX_BODY + 1))
    assert raw(port, too_big)[0] == 413  # refused on its headers, before a byte of the body is read
    assert raw(port, b"NONSENSE\r\n\r\n")[0] == 400
    bad_length = request(body, bot.deliverer.sign(body)).replace(b"Content-Length: ", b"Content-Length: x")
    assert raw(port, bad_length)[0] == 400


def test_chunked_bodies_are_read_whole(bot):
    slack, bot = bot
    body = slash_body(slack, "/variant", "DGX Spark", 1)
    head = ["POST /slack/events HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/x-www-form-urlencoded",
            "Transfer-Encoding: chunked", "Connection: close",
            *(f"{k}: {v}" for k, v in bot.deliverer.sign(body).items())]
    half = len(body) // 2
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:])) + b"0\r\n\r\n"
    status, _, reply = raw(bot.server.server_port, ("\r\n".join(head) + "\r\n\r\n").encode() + chunks)
    assert status == 200 and b"sm121" in reply


def test_a_stalled_client_holds_up_nobody_and_twenty_at_once_are_answered(bot):
    slack, bot = bot
    port = bot.server.server_port
    stalled = []
    for _ in range(12):  # more stalled clients than the server has worker threads
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\ncommand=")
        stalled.append(sock)
    try:
        def one(i: int) -> int:
            body = slash_body(slack, "/variant", f"p5.48xlarge python 3.1{i % 4}", i)
            return bot.deliverer.send(body)[0]

        with ThreadPoolExecutor(20) as pool:
            assert list(pool.map(one, range(40))) == [200] * 40
    finally:
        for sock in stalled:
            sock.close()


def test_form_and_json_content_types_are_checked_before_bolt(bot):
    _slack, bot = bot
    body = urllib.parse.urlencode({"command": "/variant", "text": "H100"}).encode()
    headers = {**bot.deliverer.sign(body), "Content-Type": "application/json"}
    data = request(body, headers).replace(b"Content-Type: application/x-www-form-urlencoded\r\n", b"")
    assert raw(bot.server.server_port, data)[0] == 400


def test_odd_signature_headers_on_an_unsigned_request_get_4xx_never_a_5xx(bot):
    """A timestamp of "²" (a digit to ``isdigit``, not to ``int``), one of 5000 digits (past
    Python's int-string limit), or a non-ASCII signature with a current timestamp (which
    ``hmac.compare_digest`` refuses as str) are refused before Bolt, as the bytes arrive."""
    slack, bot = bot
    port = bot.server.server_port
    body = slash_body(slack, "/variant", "H100", 1)
    now = bot.deliverer.sign(body)["X-Slack-Request-Timestamp"].encode()

    def with_headers(timestamp: bytes, signature: bytes) -> bytes:
        data = request(body, {"X-Slack-Request-Timestamp": "TS", "X-Slack-Signature": "SIG"})
        return data.replace(b": TS\r\n", b": " + timestamp + b"\r\n").replace(b": SIG\r\n", b": " + signature + b"\r\n")

    status, _, reply = raw(port, with_headers(b"\xb2", b"v0=abc"))
    assert (status, reply) == (400, b"X-Slack-Request-Timestamp is not an integer\n")
    status, _, reply = raw(port, with_headers(b"9" * 5000, b"v0=abc"))
    assert (status, reply) == (400, b"X-Slack-Request-Timestamp is too long\n")
    status, _, reply = raw(port, with_headers(now, b"v0=\xe9"))
    assert (status, reply) == (401, b"invalid or expired signature\n")
    status, _, reply = raw(port, with_headers(now, b"v0=" + "é".encode() * 32))
    assert status == 401


def test_a_signed_event_callback_whose_event_is_not_an_object_gets_400(bot):
    _slack, bot = bot
    body = json.dumps({"type": "event_callback", "event": "x", "event_id": "Ev9"}).encode()
    data = request(body, bot.deliverer.sign(body)).replace(b"application/x-www-form-urlencoded", b"application/json")
    status, _, reply = raw(bot.server.server_port, data)
    assert (status, reply) == (400, b"event is not a JSON object\n")
