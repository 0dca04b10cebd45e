"""A real PostgreSQL server for the state-store tests, started once per test session in a
temporary directory (``initdb`` + ``pg_ctl`` from Debian's ``postgresql`` package, which
``make test`` installs when missing). PostgreSQL refuses to run as root, so as root the
server runs as the ``postgres`` system user (or ``nobody``).

Usage: ``from tests.support.fixtures_postgres import postgres`` in a test module, then a test takes
``postgres`` and calls ``postgres.new_database()`` for a SQLAlchemy URL of an empty database.
A test that stops the server (``halt()`` / ``resume()``: an outage that keeps the data) starts
its own ``PostgresServer().start()`` and ``stop()``s it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path:
        return path
    raise RuntimeError(f"{name} not found: run `make test` (it installs Debian's postgresql package)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="torchbot-pg-"))
        self.port = _free_port()
        self.user: str | None = None
        if os.getuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    pwd.getpwnam(name)
                except KeyError:
                    continue
                self.user = name
                break
            shutil.chown(self.dir, user=self.user)

    def _run(self, *args: str) -> None:
        r = subprocess.run(args, check=False, capture_output=True, text=True, user=self.user, cwd=self.dir, timeout=120)
        if r.returncode:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {r.stderr or r.stdout}")

    def start(self) -> PostgresServer:
        data = self.dir / "data"
        self._run(_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "torchbot", "-E", "UTF8", "--no-sync")
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        self._run(_bin("pg_ctl"), "-D", str(data), "-l", str(self.dir / "server.log"), "-o", opts, "-w", "start")
        return self

    def halt(self) -> None:
        """Stop the server and keep its data (an outage; ``resume()`` ends it)."""
        self._run(_bin("pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        self._run(_bin("pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "server.log"), "-o", opts,
                  "-w", "start")

    def stop(self) -> None:
        subprocess.run([_bin("pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "stop"],
                       check=False, capture_output=True, user=self.user, cwd=self.dir, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://torchbot@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=torchbot dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()
