"""The dashboard over the weekly bump (issue 25's outcome objects): after `bump-pins --all` on fresh
clones of both fixture repositories, `torchbot dashboard --json` gives each branch and pin group
the outcome that bump had (moved keeping its promise, bumped, skipped vLLM pins), with the reason,
read back from the state DB."""

from __future__ import annotations

import json

import pytest

from bot.frontends.cli.main import main as cli
from tests.support import fixtures_weekly as W
from tests.support.fakes_nixpkgs import FakeNixpkgs


@pytest.fixture
def world(tmp_path, monkeypatch):
    pt, tv, ptf, tvf = W.fresh_clones(tmp_path)
    with FakeNixpkgs() as nix:
        W.nixpkgs_history(nix)
        W.serve_env(monkeypatch, tmp_path, pt, tv, nix, TORCHBOT_CACHE_DIR=str(tmp_path / "cache"),
                    TORCHBOT_AUDIT_LOG=str(tmp_path / "audit.log"))
        yield ptf, tvf


def _branch(d: dict, repo: str, name: str) -> dict:
    r = next(r for r in d["repositories"] if r["name"] == repo)
    return next(b for b in r["branches"] if b["branch"] == name)


def test_each_branch_and_group_shows_what_the_weekly_bump_did(world, capsys):
    ptf, tvf = world
    cli(["release", "bump-pins", "--all", "--json"])
    bumped = json.loads(capsys.readouterr().out)
    assert cli(["dashboard", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    main = _branch(d, "build-pytorch", "main")["bump"]
    (group,) = main["groups"]
    assert group["group"] == "CUDA 12.8, CPU, darwin" and group["kind"] == "kept-promise"
    assert group["state"] == "bumped" and "newest commit keeping 2.8" in group["reason"]
    multi = _branch(d, "build-pytorch", "pytorch-2.10-python313")["bump"]["groups"]
    assert len(multi) == 3 and {g["state"] for g in multi} == {"bumped"}
    vllm = _branch(d, "build-pytorch", "pytorch-2.9-vllm-0.14.0")["bump"]
    assert vllm["state"] == "skipped"
    assert _branch(d, "build-torchvision", "main")["bump"]["groups"][0]["kind"] == "kept-promise"
    expected = {(o["repo"], o["branch"]) for o in bumped["outcomes"]}
    shown = {(r["name"], b["branch"]) for r in d["repositories"] for b in r["branches"] if b["bump"]["groups"]}
    assert expected <= shown and len(expected) == len(ptf.branch_names) + len(tvf.branch_names)
