"""/pins with both repositories: build-torchvision has branches of the same names as
build-pytorch's (main, main-staging), so its rows are said apart by a repository column, and the one-line answer to
"what pin is main on?" is build-pytorch's main."""

from __future__ import annotations

from bot.frontends.chat import PinsResult
from config.settings import Settings
from release.context import Context
from tests.support.fixtures_realshapes import make_repos


def test_pins_says_which_main_is_torchvision(tmp_path):
    pt, tv = make_repos(tmp_path)
    ctx = Context(Settings(repo_path=f"{pt.path},{tv.path}"))
    text = PinsResult(ctx, ["main"]).text()
    lines = text.splitlines()
    assert lines[0].startswith("main is pinned to nixpkgs ")  # build-pytorch's main: one sentence
    assert lines[1].split()[:2] == ["repository", "branch"]  # the repository column says them apart
    rows = [line.split()[:2] for line in lines[2:]]
    assert rows == [["pytorch", "main"], ["torchvision", "main"]], text
