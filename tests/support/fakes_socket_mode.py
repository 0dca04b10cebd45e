"""A Socket Mode stand-in on 127.0.0.1: a real WebSocket server (RFC 6455, written on plain
sockets so every kind of drop can be made on purpose) that speaks Slack's Socket Mode.

Usage::

    with FakeSlack() as api, FakeSocketMode(api) as sm:   # api.socket_url now points here
        ... start the bot with TORCHBOT_SLACK_API_URL=api.url ...
        conn = sm.wait_connection()                        # it called apps.connections.open
        reply = sm.request("slash_commands", {...})        # an envelope; the bot's ack payload
        t0 = sm.drop("fin")                                # close | fin | reset | silent
        sm.wait_connection(after=t0)                       # back? (times in time.monotonic())

On each connection the server sends ``hello``, answers pings with pongs, records the acks
(``{"envelope_id": ..., "payload": ...}``) and close frames. ``sm.refresh()`` sends
``disconnect`` with reason ``refresh_requested`` and, like Slack, closes that connection a
little later. Drops:

- ``close``: a close frame (1001), then the TCP connection is closed;
- ``fin``: the TCP connection is shut down without a close frame;
- ``reset``: the TCP connection is reset (RST, SO_LINGER 0);
- ``silent``: the link goes quiet: nothing is read or answered any more, the socket stays open.

``sm.down = True`` refuses new WebSocket handshakes (HTTP 503) until set back.

Retries, as Slack makes them: ``sm.deliver(kind, payload, lose_acks=n)`` sends an envelope
and, when no ack comes within ``ack_timeout`` (Slack's 3 s) or the ack is one of the first n
(lost on the way, as in a partition), sends the same payload again in a new envelope with
``retry_attempt`` 1, 2, 3 and ``retry_reason`` ``timeout``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@dataclass
class Connection:
    sock: socket.socket
    opened: float
    ticket: str
    hello_sent: float | None = None
    closed: float | None = None
    silent: bool = False
    pings: int = 0
    acks: dict[str, dict] = field(default_factory=dict)
    send_lock: threading.Lock = field(default_factory=threading.Lock)

    def send_frame(self, opcode: int, data: bytes) -> None:
        header = bytes([0x80 | opcode])
        n = len(data)
        if n < 126:
            header += bytes([n])
        elif n < 1 << 16:
            header += bytes([126]) + struct.pack("!H", n)
        else:
            header += bytes([127]) + struct.pack("!Q", n)
        with self.send_lock:
            self.sock.sendall(header + data)

    def send_json(self, obj: dict) -> None:
        self.send_frame(0x1, json.dumps(obj).encode())


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
    return buf


class FakeSocketMode:
    def __init__(self, api=None, app_id: str = "A0TORCHBOT"):
        self.app_id = app_id
        self.connections: list[Connection] = []
        self.lock = threading.Condition()
        self.down = False
        self._stop = False
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self._tickets = 0
        if api is not None:
            api.socket_url = self.new_url

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> FakeSocketMode:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self.listener.close()
        for c in list(self.connections):
            with contextlib.suppress(OSError):
                c.sock.close()

    def new_url(self) -> str:
        with self.lock:
            self._tickets += 1
            return f"ws://127.0.0.1:{self.port}/link/?ticket={self._tickets}&app_id={self.app_id}"

    # -- the server ---------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stop:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _handshake(self, sock: socket.socket) -> str | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                return None
            data += chunk
        lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        key = headers.get("sec-websocket-key")
        if self.down or not key or not path.startswith("/link/"):
            sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
        return path

    def _serve(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            path = self._handshake(sock)
        except OSError:
            path = None
        if path is None:
            sock.close()
            return
        conn = Connection(sock, time.monotonic(), path.split("ticket=")[-1].split("&")[0])
        with self.lock:
            self.connections.append(conn)
        try:
            conn.send_json({"type": "hello", "num_connections": 1,
                            "debug_info": {"host": "applink-fake", "approximate_connection_time": 18060},
                            "connection_info": {"app_id": self.app_id}})
            with self.lock:
                conn.hello_sent = time.monotonic()
                self.lock.notify_all()
            self._read(conn)
        except (OSError, ConnectionError):
            pass
        finally:
            if not conn.silent:
                with contextlib.suppress(OSError):
                    sock.close()
            with self.lock:
                conn.closed = conn.closed or time.monotonic()
                self.lock.notify_all()

    def _read(self, conn: Connection) -> None:
        sock = conn.sock
        while not conn.silent:
            b1, b2 = _recv_exact(sock, 2)
            opcode, masked, n = b1 & 0x0F, b2 & 0x80, b2 & 0x7F
            if n == 126:
                n = struct.unpack("!H", _recv_exact(sock, 2))[0]
            elif n == 127:
                n = struct.unpack("!Q", _recv_exact(sock, 8))[0]
            mask = _recv_exact(sock, 4) if masked else b"\0\0\0\0"
            data = bytes(x ^ mask[i % 4] for i, x in enumerate(_recv_exact(sock, n)))
            if conn.silent:
                return
            if opcode == 0x9:  # ping -> pong
                conn.pings += 1
                conn.send_frame(0xA, data)
            elif opcode == 0x8:  # close -> close back, done
                with contextlib.suppress(OSError):
                    conn.send_frame(0x8, data[:2])
                return
            elif opcode == 0x1:
                msg = json.loads(data.decode())
                if "envelope_id" in msg:
                    with self.lock:
                        conn.acks[msg["envelope_id"]] = msg.get("payload") or {}
                        self.lock.notify_all()

    # -- what tests use -----------------------------------------------------------------

    def live(self) -> Connection | None:
        with self.lock:
            alive = [c for c in self.connections if c.closed is None and not c.silent and c.hello_sent]
            return alive[-1] if alive else None

    def wait_connection(self, after: float = 0.0, timeout: float = 30.0) -> Connection:
        """The first connection that got its hello after ``after`` (time.monotonic())."""
        end = time.monotonic() + timeout
        with self.lock:
            while True:
                for c in self.connections:
                    if c.hello_sent and c.hello_sent > after and c.closed is None and not c.silent:
                        return c
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no Socket Mode connection after {after:.3f} within {timeout} s")
                self.lock.wait(left)

    def request(self, kind: str, payload: dict, timeout: float = 10.0, conn: Connection | None = None,
                retry_attempt: int = 0, retry_reason: str = "") -> dict:
        """Send an envelope (slash_commands | interactive | events_api) and wait for its ack."""
        ack = self._send(kind, payload, timeout, conn, retry_attempt, retry_reason)
        if ack is None:
            raise AssertionError(f"no ack for {kind} envelope within {timeout} s")
        return ack

    def _send(self, kind: str, payload: dict, timeout: float, conn: Connection | None, retry_attempt: int,
              retry_reason: str) -> dict | None:
        conn = conn or self.wait_connection()
        envelope_id = str(uuid.uuid4())
        conn.send_json({"envelope_id": envelope_id, "type": kind, "payload": payload,
                        "accepts_response_payload": kind in ("slash_commands", "interactive"),
                        "retry_attempt": retry_attempt, "retry_reason": retry_reason})
        end = time.monotonic() + timeout
        with self.lock:
            while envelope_id not in conn.acks:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)
            return conn.acks[envelope_id]

    def deliver(self, kind: str, payload: dict, lose_acks: int = 0, ack_timeout: float = 3.0,
                conn: Connection | None = None) -> list[tuple[int, bool]]:
        """Deliver with Slack's retries (up to 3); one (retry_attempt, acked) per envelope sent."""
        made: list[tuple[int, bool]] = []
        for attempt in range(4):
            ack = self._send(kind, payload, ack_timeout, conn, attempt, "timeout" if attempt else "")
            made.append((attempt, ack is not None))
            if ack is not None and attempt >= lose_acks:
                break
        return made

    def refresh(self, close_after: float = 1.0) -> float:
        """``disconnect`` (refresh_requested) on the live connection; it closes ``close_after`` s later."""
        conn = self.live()
        assert conn is not None, "no live connection"
        t0 = time.monotonic()
        conn.send_json({"type": "disconnect", "reason": "refresh_requested", "debug_info": {"host": "applink-fake"}})

        def later():
            time.sleep(close_after)
            self._drop(conn, "close")

        threading.Thread(target=later, daemon=True).start()
        return t0

    def drop(self, kind: str) -> float:
        """Drop the live connection (close | fin | reset | silent); returns when, monotonic."""
        conn = self.live()
        assert conn is not None, "no live connection"
        t0 = time.monotonic()
        self._drop(conn, kind)
        return t0

    def _drop(self, conn: Connection, kind: str) -> None:
        try:
            if kind == "close":
                conn.send_frame(0x8, struct.pack("!H", 1001) + b"going away")
                conn.sock.shutdown(socket.SHUT_RDWR)
                conn.sock.close()
            elif kind == "fin":
                conn.sock.shutdown(socket.SHUT_RDWR)
                conn.sock.close()
            elif kind == "reset":
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.sock.close()
            elif kind == "silent":
                conn.silent = True
            else:
                raise ValueError(kind)
        except OSError:
            pass
        with self.lock:
            if kind == "silent":
                conn.closed = time.monotonic()
            self.lock.notify_all()
