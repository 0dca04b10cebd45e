"""Issue 25, point 5: `docs --write` converges. On a fresh clone (every branch but main only as
origin/*) it writes, makes the local branches it commits to, and `--check` then passes; drift no
write can fix (a torchvision branch whose pins differ from its pair) is named, and both `--write`
and `--check` exit 3 instead of asking for `--write` again."""

from __future__ import annotations

import json

import pytest

from bot.frontends.cli.main import main as cli
from tests.support import fixtures_weekly as W
from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import PIN_MAIN, make_pytorch_repo, make_torchvision_repo


@pytest.fixture
def clones(tmp_path, monkeypatch):
    pt = make_pytorch_repo(tmp_path / "made", stale_readme=True)
    tv = make_torchvision_repo(tmp_path / "made")
    (tmp_path / "clones").mkdir()
    a = W.fresh_clone(pt, tmp_path / "clones" / "build-pytorch")
    b = W.fresh_clone(tv, tmp_path / "clones" / "build-torchvision")
    monkeypatch.setenv("TORCHBOT_REPO_PATH", f"{a},{b}")
    monkeypatch.setenv("TORCHBOT_STATE_DB", f"sqlite:///{tmp_path}/s.db")
    return a, b


def test_write_on_a_fresh_clone_then_check_passes(clones, capsys):
    pt, _tv = clones
    assert W.local_branches(pt) == {"main"}
    assert cli(["release", "docs", "--check"]) == 1
    assert "Run `torchbot release docs --write`" in capsys.readouterr().out
    rc = cli(["release", "docs", "--write", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ok"] is True, out
    assert len(out["commits"]) == 4 and any("Made local branches from origin/*" in n for n in out["notes"])
    assert {"pytorch-2.10-python313", "pytorch-2.9-python311"} <= W.local_branches(pt)
    assert git(pt, "config", "branch.pytorch-2.10-python313.remote").strip() == "origin"
    assert cli(["release", "docs", "--check"]) == 0
    assert "match the repository" in capsys.readouterr().out
    assert cli(["release", "docs", "--write"]) == 0  # nothing left: nothing written
    assert "nothing written" in capsys.readouterr().out


def test_what_no_write_can_fix_is_named_with_exit_3(clones, capsys):
    _pt, tv = clones
    # a torchvision recipe on another pin than its build-pytorch pair: its own recipes say so
    for recipe in (p for p in git(tv, "ls-files", ".flox/pkgs").split() if PIN_MAIN in (tv / p).read_text()):
        (tv / recipe).write_text((tv / recipe).read_text().replace(PIN_MAIN, W.K28))
    git(tv, "commit", "-qam", "torchvision: another pin")
    rc = cli(["release", "docs", "--write"])
    text = capsys.readouterr().out
    assert rc == 3, text
    assert "torchvision branches differ from their build-pytorch branch" in text and "No `docs --write` fixes" in text
    rc = cli(["release", "docs", "--check"])
    text = capsys.readouterr().out
    assert rc == 3 and "Run `torchbot release docs --write`" not in text, text
    assert "No `docs --write` fixes these" in text
