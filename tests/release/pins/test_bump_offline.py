"""Issue 34 point 4: offline, the weekly bump fails fast and plainly. With nothing answering at
TORCHBOT_CHANNELS_URL, ``bump-pins --all --dry-run`` ends within 5 s with one line naming the
setting, asks the channel head once (not once per pin group), and prints no retry warnings
(those are for -v)."""

from __future__ import annotations

import socket
import time

from bot.frontends.cli.main import main as cli
from tests.support import fixtures_weekly as W
from tests.support.fakes_nixpkgs import FakeNixpkgs


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on return: nothing answers there


def test_no_channel_server_fails_fast_naming_the_setting(tmp_path, monkeypatch, capsys) -> None:
    pt, tv, _ptf, _tvf = W.fresh_clones(tmp_path)
    with FakeNixpkgs() as nix:
        W.nixpkgs_history(nix)
        W.serve_env(monkeypatch, tmp_path, pt, tv, nix, TORCHBOT_HTTP_RETRIES="3")
        monkeypatch.setenv("TORCHBOT_CHANNELS_URL", f"http://127.0.0.1:{_closed_port()}/")
        t0 = time.monotonic()
        rc = cli(["release", "bump-pins", "--all", "--dry-run"])
        took = time.monotonic() - t0
    out = capsys.readouterr()
    lines = [ln for ln in out.err.splitlines() if ln.strip() and not ln.startswith("[")]
    assert rc != 0 and took < 5, (rc, took)
    (line,) = [ln for ln in lines if ln.startswith("torchbot:")]
    assert "TORCHBOT_CHANNELS_URL" in line and "nixos-unstable" in line, line
    assert "WARNING" not in out.err and "retry" not in out.err, out.err
