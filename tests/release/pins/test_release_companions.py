"""build-pytorch and build-torchvision together (tests/fixtures_realshapes.make_repos): companion
bumps (`bump-pins --with-companions`, one plan, one chat confirmation, one commit per
repository) and the docs check of torchvision branches against their build-pytorch pair."""

from __future__ import annotations

import json

import pytest

from bot.frontends.chat import Chat, PlanReply
from bot.frontends.cli.main import main as cli
from config.errors import ExternalError
from config.settings import Settings
from release.context import Context
from release.pins.commands import plan_bump
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git, refs, tree_files
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, make_repos

NEW = "7777000077770000777700007777000077770000"
NEW_28 = "2828000028280000282800002828000028280000"  # torch 2.8.4
ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}
PT, TV = "pytorch-2.10-python313", "pytorch-2.10"


@pytest.fixture
def repos(tmp_path, monkeypatch):
    pt, tv = make_repos(tmp_path)
    with FakeNixpkgs() as fake:
        fake.add_rev(PIN_MAIN, "2.8.0", ALL)
        for pin in (PIN_12_X, PIN_13_0, PIN_13_1, NEW):
            fake.add_rev(pin, "2.9.1", ALL)
        fake.add_rev(NEW_28, "2.8.4", ALL)
        for k, v in {
            "TORCHBOT_REPO_PATH": f"{pt.path},{tv.path}",
            "TORCHBOT_CHANNELS_URL": fake.channels_url,
            "TORCHBOT_GITHUB_API_URL": fake.api_url,
            "TORCHBOT_NIXPKGS_TARBALL_URL": fake.tarball_url,
            "TORCHBOT_HTTP_RETRIES": "1",
        }.items():
            monkeypatch.setenv(k, v)
        yield pt, tv


def ctx(**over) -> Context:
    return Context(Settings(**over), use_repo=False)


def test_with_companions_moves_the_paired_torchvision_branch_in_the_same_plan(repos, capsys):
    pt, tv = repos
    pt_before, tv_before = refs(pt.path), refs(tv.path)
    tv_files = tree_files(tv.path, TV)
    rc = cli(["release", "bump-pins", "--branch", PT, "--cuda", "13.1", "--rev", NEW, "--with-companions", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert list(out["commits"]) == [PT]
    comp = out["companions"][0]
    assert comp["repo"] == str(tv.path) and list(comp["commits"]) == [TV]
    # its own commit in the torchvision repository, only the CUDA 13.1 group moved
    assert (
        git(tv.path, "log", "-1", "--format=%s", TV).strip()
        == f"nixpkgs: bump pin {PIN_13_1[:7]} -> {NEW[:7]} (torch 2.9.1, cudaPackages_13_1)"
    )
    for path, text in tree_files(tv.path, TV).items():
        assert (NEW in text) == ("cuda13_1" in path)
        if "cuda13_1" not in path:
            assert text == tv_files[path]
    def changed(before, now):
        return {r for r in now if now[r] != before.get(r)}
    assert changed(pt_before, refs(pt.path)) == {f"refs/heads/{PT}"}
    assert changed(tv_before, refs(tv.path)) == {f"refs/heads/{TV}"}
    # and the pair agrees again
    rc = cli(["release", "docs", "--check", "--json"])
    assert json.loads(capsys.readouterr().out)["torchvision"] == []


def test_docs_check_reports_a_torchvision_branch_off_its_pair(repos, capsys):
    _pt, _tv = repos
    plan_bump(ctx(), PT, NEW, cuda="13.1").apply()  # build-pytorch moves alone
    rc = cli(["release", "docs", "--check", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert out["torchvision"] == [{"branch": TV, "pair": PT, "what": "pin (CUDA 13.1)", "says": PIN_13_1[:7],
                                   "true": NEW[:7]}]


def test_one_confirmation_in_chat_applies_both(repos, tmp_path):
    pt, tv = repos
    chat = Chat(
        ctx(admins=["UADMIN"], audit_log=tmp_path / "audit.log", state_db=f"sqlite:///{tmp_path / 'state.sqlite'}")
    )
    plan = chat.command("bump", f"main {NEW_28} --with-companions", user="UADMIN")
    assert isinstance(plan, PlanReply), plan.text()
    assert "Companion in" in plan.text() and str(tv.path) in plan.text()
    before_pt, before_tv = refs(pt.path), refs(tv.path)
    assert before_tv == refs(tv.path)  # nothing until the confirmation
    result = chat.confirm(plan.pending.id, "UADMIN").wait(120)
    assert "build-torchvision" in result.text(), result.text()
    assert refs(pt.path)["refs/heads/main"] != before_pt["refs/heads/main"]
    assert refs(tv.path)["refs/heads/main"] != before_tv["refs/heads/main"]
    assert all(NEW_28 in t for t in tree_files(tv.path, "main").values())


def test_a_failed_companion_puts_the_pytorch_branch_back(repos):
    pt, tv = repos
    pt_before = refs(pt.path)
    plan = plan_bump(ctx(), PT, NEW, cuda="13.1", with_companions=True)
    git(tv.path, "commit", "--allow-empty", "-qm", "someone else", "--no-verify")  # main moves; fine
    git(tv.path, "checkout", "-q", TV)
    git(tv.path, "commit", "--allow-empty", "-qm", "someone else moved the companion")
    git(tv.path, "checkout", "-q", "main")
    with pytest.raises(ExternalError) as info:
        plan.apply()
    assert "companion" in info.value.message and "put back" in info.value.message
    assert refs(pt.path) == pt_before


def test_without_a_torchvision_repository_it_says_what_to_set(repos, monkeypatch, capsys):
    pt, _ = repos
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(pt.path))
    before = refs(pt.path)
    rc = cli(["release", "bump-pins", "--branch", PT, "--cuda", "13.1", "--rev", NEW, "--with-companions"])
    assert rc != 0 and "TORCHBOT_REPO_PATH" in capsys.readouterr().err
    assert refs(pt.path) == before


def test_companion_recipes_get_the_same_tarball_sha256(repos, tmp_path):
    import os
    import subprocess

    pt, tv = repos
    plan_bump(ctx(), PT, NEW, cuda="13.1", with_companions=True).apply()
    url = f"{os.environ['TORCHBOT_NIXPKGS_TARBALL_URL']}{NEW}.tar.gz"
    own = subprocess.run(["nix-prefetch-url", "--unpack", "--store", f"local?root={tmp_path / 'store'}", url],
                         check=False, capture_output=True, text=True)
    subprocess.run(["chmod", "-R", "u+w", str(tmp_path / "store")], check=False)
    assert own.returncode == 0, own.stderr
    moved = [t for repo, branch in ((pt, PT), (tv, TV)) for t in tree_files(repo.path, branch).values() if NEW in t]
    assert len(moved) >= 2 and all(t.count(f'sha256 = "{own.stdout.strip()}";') == 1 for t in moved)


def test_with_companions_on_fresh_clones_bumps_branches_that_are_only_on_the_remotes(repos, tmp_path, monkeypatch,
                                                                                     capsys):
    """The README's quick start on plain `git clone`s: both the build-pytorch branch and its
    build-torchvision pair exist only as origin/..., and both get their commit on a new local branch."""
    import subprocess

    pt, tv = repos
    clones = []
    for src, name in ((pt.path, "pt"), (tv.path, "tv")):
        dst = tmp_path / f"clone-{name}"
        subprocess.run(["git", "clone", "-q", str(src), str(dst)], check=True)
        clones.append(dst)
    monkeypatch.setenv("TORCHBOT_REPO_PATH", ",".join(map(str, clones)))
    assert f"refs/heads/{TV}" not in refs(clones[1]) and f"refs/heads/{PT}" not in refs(clones[0])
    rc = cli(["release", "bump-pins", "--branch", PT, "--cuda", "13.1", "--rev", NEW, "--with-companions", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert list(out["commits"]) == [PT] and list(out["companions"][0]["commits"]) == [TV]
    assert git(clones[1], "rev-parse", f"{TV}~1").strip() == git(clones[1], "rev-parse", f"origin/{TV}").strip()
    assert git(clones[0], "rev-parse", f"{PT}~1").strip() == git(clones[0], "rev-parse", f"origin/{PT}").strip()
