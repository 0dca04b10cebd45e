"""Issue 34 point 3: a bump pushed, then SIGKILL between moving the checked-out ``main`` and
bringing its index and files along (the moment that once left 52 staged files reverting the
bump). The re-run of the weekly bump (``--delivery push``) leaves ``main`` at ``origin/main``
with a clean index and work tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from bot.frontends.cli.main import main as cli
from tests.support import fixtures_weekly as W
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git

ROOT = Path(__file__).resolve().parents[3]

# what a push delivery does, killed after the ref moved and before the work tree followed
_CHILD = """
import os, signal, sys
from release.adapters import git as gitops
repo = gitops.open_repo(sys.argv[1])
old = repo.git.rev_parse("main")
sha = gitops.make_commit(repo, old, {"NOTE.md": "the bump\\n"}, "a bump", "torchbot", "bot@example.com")
gitops.push(repo, "origin", [f"{sha}:refs/heads/main"])
gitops.track_pushed(repo, "origin", {"main": sha})
gitops.move_refs(repo, {"main": (sha, old)})
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_rerun_finishes_a_checkout_a_kill_left_half_moved(tmp_path, monkeypatch, capsys) -> None:
    pt, tv, _ptf, _tvf = W.fresh_clones(tmp_path)
    child = subprocess.run([sys.executable, "-c", _CHILD, str(pt)], cwd=ROOT, check=False, capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert git(pt, "status", "--porcelain").strip()  # what the kill left: the bump's revert, staged
    with FakeNixpkgs() as nix:
        W.nixpkgs_history(nix)
        W.serve_env(monkeypatch, tmp_path, pt, tv, nix)
        cli(["release", "bump-pins", "--all", "--delivery", "push", "--json"])
    capsys.readouterr()
    assert git(pt, "rev-parse", "main").strip() == git(pt, "rev-parse", "origin/main").strip()
    assert git(pt, "status", "--porcelain").strip() == ""
    assert (pt / "NOTE.md").read_text() == "the bump\n"
