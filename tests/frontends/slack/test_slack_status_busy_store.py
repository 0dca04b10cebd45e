"""A busy store answers (issue 26, point 7): with another process holding the SQLite state DB
locked (for as long as the test needs: longer than the store's own 10 s timeouts would be),
`/torchbot status` to a real `torchbot serve --http` is answered within a few seconds, saying
what it could not read, while the lock is still held; once the lock is gone it reads everything
again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_serve import ServeProcess, post, sign

SECRET = "busy-signing-secret"
LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
if sys.argv[2] == "exclusive":
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # nobody else may even read while it holds the lock
conn.execute("BEGIN IMMEDIATE" if sys.argv[2] == "write" else "BEGIN EXCLUSIVE")
conn.execute("UPDATE pending_plans SET summary = summary")
print("locked", flush=True)
sys.stdin.readline()  # held until the test lets go (or ends: end of input)
conn.execute("COMMIT")
conn.close()
print("released", flush=True)
"""


def _lock(db: Path, how: str) -> subprocess.Popen:
    """Another process holding ``db`` locked until ``_release``."""
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(db), how], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert locker.stdout.readline().strip() == "locked"
    return locker


def _release(locker: subprocess.Popen) -> None:
    if locker.poll() is None:
        locker.stdin.close()  # its readline returns: it commits, closes and says so
    try:
        assert locker.stdout.readline().strip() == "released"
        assert locker.wait(timeout=60) == 0
    finally:
        if locker.poll() is None:
            locker.kill()
            locker.wait()


def _status(slack: FakeSlack, url: str, n: int) -> tuple[float, str]:
    body = urllib.parse.urlencode({"command": "/torchbot", "text": "status", "user_id": "UADMIN", "team_id": "T1",
                                   "channel_id": "C1", "response_url": slack.response_url(n)}).encode()
    start = time.monotonic()
    assert post(url, body, sign(body, SECRET))[0] == 200
    posts = slack.wait_for(lambda p, b: p == f"/response/{n}", 30)
    text = json.dumps(next(b for p, b in posts if p == f"/response/{n}"))  # the text and its blocks
    return time.monotonic() - start, text


def test_status_with_the_sqlite_store_write_locked_is_answered_within_seconds_and_after(tmp_path: Path):
    db = tmp_path / "state.db"
    with FakeSlack(token="xoxb-test") as slack:
        env = dict(TORCHBOT_SLACK_BOT_TOKEN="xoxb-test", TORCHBOT_SLACK_SIGNING_SECRET=SECRET,
                   TORCHBOT_SLACK_API_URL=slack.url, TORCHBOT_ADMINS="UADMIN", TORCHBOT_STATE_DB=str(db),
                   TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"), TORCHBOT_LOG_DIR=str(tmp_path / "logs"))
        bot = ServeProcess(tmp_path, env, ["--http", "--host", "127.0.0.1", "--port", "0", "--no-schedule"])
        try:
            url = bot.events_url(60)
            took, text = _status(slack, url, 1)
            assert "pending plans: 0" in text
            locker = _lock(db, "write")
            try:
                took, text = _status(slack, url, 2)
                assert locker.poll() is None  # answered while the lock is still held
                assert took < 6, took  # not the length of the lock, nor the store's own 10 s timeouts
                assert "catalog:" in text and "jobs:" in text and "pending plans: 0" in text  # reads go on (WAL)
            finally:
                _release(locker)
            took, text = _status(slack, url, 3)  # the lock gone: everything read, nothing unknown
            assert "pending plans: 0" in text and "unknown" not in text, text
        finally:
            bot.stop()


def test_status_with_the_store_unreadable_says_what_it_could_not_read_within_seconds(tmp_path: Path):
    from bot.frontends.chat import Chat
    from tests.support import fixtures_builds as fx

    db = tmp_path / "state.db"
    made = subprocess.run([sys.executable, "-c", "import sys; from release.state import open_state; "
                           "open_state(sys.argv[1])", f"sqlite:///{db}"], cwd=Path(__file__).parents[3],
                          capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stderr
    locker = _lock(db, "exclusive")  # before torchbot opens it: not even a read gets through
    try:
        chat = Chat(fx.context(tmp_path, state_db=f"sqlite:///{db}", state_timeout_seconds=10))
        start = time.monotonic()
        text = chat.command("torchbot", "status").text()
        took = time.monotonic() - start
        assert locker.poll() is None  # answered while the lock is still held
    finally:
        _release(locker)
    assert took < 6, took
    assert "pending plans: unknown: could not read the state DB" in text and "no answer within 3 s" in text
    assert "schedule: leader unknown" in text and "catalog:" in text and "jobs:" in text

    # once the lock is gone the same chat reads everything again
    text = chat.command("torchbot", "status").text()
    assert "pending plans: 0" in text and "could not read" not in text and "leader unknown" not in text, text
