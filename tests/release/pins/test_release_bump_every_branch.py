"""Issue 25, points 1 and 2: the weekly bump goes through every branch of both repositories
(fresh clones: every branch but main only as origin/*) and every pin group of a multi-pin
branch, each with its own outcome; a branch whose promise the channel head breaks moves to the
newest commit that keeps it; one with none newer is held; bumps arrive as one pull request per
branch, and a second run updates it. Real git repositories, the nixpkgs and GitHub stand-ins on
127.0.0.1, real nix-prefetch-url of the served tarballs."""

from __future__ import annotations

import json

import pytest

from bot.frontends.cli.main import main as cli
from tests.support import fixtures_weekly as W
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import PIN_12_X, PIN_MAIN


@pytest.fixture
def world(tmp_path, monkeypatch):
    pt, tv, ptf, tvf = W.fresh_clones(tmp_path)
    with FakeNixpkgs() as nix:
        W.nixpkgs_history(nix)
        W.serve_env(monkeypatch, tmp_path, pt, tv, nix)
        yield pt, tv, ptf, tvf, nix


def run(capsys, *args) -> tuple[int, dict]:
    rc = cli(["release", "bump-pins", "--all", "--json", *args])
    return rc, json.loads(capsys.readouterr().out)


def outcomes(out: dict) -> dict[tuple[str, str, str], dict]:
    return {(o["repo"], o["branch"], o["group"]): o for o in out["outcomes"]}


def test_every_branch_and_pin_group_of_both_fresh_clones_gets_one_outcome(world, capsys):
    pt, _tv, ptf, tvf, _nix = world
    assert W.local_branches(pt) == {"main"}  # a fresh clone: the rest only as origin/*
    rc, out = run(capsys, "--dry-run")
    assert rc == 0, out
    by = outcomes(out)
    branches = {(repo, b) for repo, b, _ in by}
    assert branches == {("build-pytorch", b) for b in ptf.branch_names} | {("build-torchvision", b)
                                                                           for b in tvf.branch_names}
    # the three-pin branch: three groups, three outcomes, all bumped to the head (source-override torch)
    multi = {g: o for (r, b, g), o in by.items() if (r, b) == ("build-pytorch", "pytorch-2.10-python313")}
    assert len(multi) == 3 and {o["outcome"] for o in multi.values()} == {"bumped"}
    assert {o["new_pin"] for o in multi.values()} == {W.HEAD}
    # main promises 2.8; the head has 2.9.1: moved to the newest commit keeping 2.8, saying so
    main = by[("build-pytorch", "main", "CUDA 12.8, CPU, darwin")]
    assert main["outcome"] == "kept-promise" and main["old_pin"] == PIN_MAIN and main["new_pin"] == W.K28, main
    assert "torch 2.9.1" in main["reason"] and "newest commit keeping 2.8" in main["reason"]
    assert main["torch"] == {"old": "2.8.0", "new": "2.8.0"}
    two_nine = by[("build-pytorch", "pytorch-2.9-python311", "CUDA 12.8, CUDA 12.9, CPU")]
    assert two_nine["outcome"] == "bumped" and two_nine["old_pin"] == PIN_12_X and two_nine["new_pin"] == W.HEAD
    assert {o["outcome"] for (r, b, _), o in by.items() if b == "pytorch-2.9-vllm-0.14.0"} == {"skipped"}
    assert by[("build-torchvision", "main", "CUDA 12.8, CPU, darwin")]["outcome"] == "kept-promise"
    # the text says the same, and that nothing left the machine
    cli(["release", "bump-pins", "--all", "--dry-run"])
    text = capsys.readouterr().out
    assert "main (CUDA 12.8, CPU, darwin): moved, keeping its promise, aa11aa1 -> 1128112" in text
    assert "nothing leaves this machine" in text and "Dry run: nothing was written." in text
    assert W.local_branches(pt) == {"main"}  # a dry run makes no branch


def test_local_delivery_makes_the_local_branches_then_holds_what_cannot_move(world, capsys):
    pt, _tv, ptf, _tvf, _nix = world
    origin_before = git(ptf.origin, "for-each-ref", "--format=%(refname) %(objectname)")
    rc, out = run(capsys)
    assert rc == 0, out
    assert out["delivery"] == "local" and {d["how"] for d in out["delivered"]} == {"committed locally"}
    # the branches that existed only as origin/* now exist locally, tracking origin, at the bump
    assert {"pytorch-2.10-python313", "pytorch-2.9-python311", "main-staging"} <= W.local_branches(pt)
    assert git(pt, "config", "branch.pytorch-2.9-python311.merge").strip() == "refs/heads/pytorch-2.9-python311"
    log = git(pt, "log", "--format=%s", "origin/pytorch-2.10-python313..pytorch-2.10-python313").splitlines()
    assert len(log) == 3, log  # one commit per pin group
    assert W.HEAD in git(pt, "show", "pytorch-2.9-python311:.flox/pkgs/pytorch-python311-cpu-avx2.nix")
    assert "pytorch-2.9-vllm-0.14.0" not in W.local_branches(pt)  # skipped: nothing to make
    assert git(ptf.origin, "for-each-ref", "--format=%(refname) %(objectname)") == origin_before
    # the next run: main is on the newest commit keeping 2.8: nothing to do, so it is current,
    # saying why (issue 34: not held, not a failure); so are the others; exit status 0
    rc, out = run(capsys)
    by = outcomes(out)
    main = by[("build-pytorch", "main", "CUDA 12.8, CPU, darwin")]
    assert rc == 0 and main["outcome"] == "current", main
    assert "the pin is the newest commit of nixos-unstable keeping 2.8" in main["reason"]
    assert by[("build-pytorch", "pytorch-2.9-python311", "CUDA 12.8, CUDA 12.9, CPU")]["outcome"] == "current"
    assert {o["outcome"] for o in by.values()} == {"current", "skipped"}
    cli(["release", "bump-pins", "--all", "--dry-run"])
    text = capsys.readouterr()
    assert "Held:" not in text.out
    assert "main (CUDA 12.8, CPU, darwin): current (1128112) — nixos-unstable head feed029 has torch 2.9.1" in text.out
    assert "[8/8] checked" in text.err  # one count over both repositories (5 + 3 branches)


def test_a_branch_may_track_its_own_channel(world, capsys, monkeypatch):
    _pt, _tv, _ptf, _tvf, nix = world
    nix.channels["nixos-25.05"] = W.K29  # torch 2.9.0
    monkeypatch.setenv("TORCHBOT_BUMP_TRACKS", "pytorch-2.9-*=nixos-25.05")
    _rc, out = run(capsys, "--dry-run")
    by = outcomes(out)
    o = by[("build-pytorch", "pytorch-2.9-python311", "CUDA 12.8, CUDA 12.9, CPU")]
    assert o["tracks"] == "nixos-25.05" and o["new_pin"] == W.K29 and o["outcome"] == "bumped"
    assert by[("build-pytorch", "pytorch-2.10-python313", "CUDA 13.1")]["new_pin"] == W.HEAD
    monkeypatch.setenv("TORCHBOT_BUMP_TRACKS", "oops")
    assert cli(["release", "bump-pins", "--all", "--dry-run"]) == 2
    assert "TORCHBOT_BUMP_TRACKS" in capsys.readouterr().err


def test_pull_request_delivery_one_per_branch_and_a_second_run_updates_it(world, capsys, monkeypatch):
    pt, _tv, ptf, _tvf, nix = world
    with FakeGitHub(upstream=nix.api_url, git_dir=ptf.origin) as gh:
        monkeypatch.setenv("TORCHBOT_REPO_PATH", str(pt))
        monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", gh.url)
        monkeypatch.setenv("TORCHBOT_GITHUB_TOKEN", gh.token)
        monkeypatch.setenv("TORCHBOT_GITHUB_REPO", gh.repo)
        rc, out = run(capsys)  # pr is the default with GitHub configured
        assert rc == 0 and out["delivery"] == "pr", out
        prs = gh.pulls.prs
        bumped = {o["branch"] for o in out["outcomes"] if o["outcome"] in ("bumped", "kept-promise")}
        assert sorted(p["base"]["ref"] for p in prs.values()) == sorted(bumped)  # one PR per branch
        pr = next(p for p in prs.values() if p["base"]["ref"] == "pytorch-2.10-python313")
        assert pr["head"]["ref"] == "bump/pytorch-2.10-python313-feed029"
        assert pr["title"].startswith("nixpkgs: bump 3 pins of pytorch-2.10-python313")
        head = "refs/heads/bump/pytorch-2.10-python313-feed029"
        assert pr["head"]["sha"] == git(ptf.origin, "rev-parse", head).strip()
        main_pr = next(p for p in prs.values() if p["base"]["ref"] == "main")
        assert "Kept the promise" in main_pr["body"] and "2.9.1" in main_pr["body"]
        assert W.local_branches(pt) == {"main"} and "bump/main-1128112" in git(ptf.origin, "branch")
        assert git(pt, "rev-parse", "main").strip() == git(ptf.origin, "rev-parse", "main").strip()  # untouched
        # the channel moves on (torch still 2.9.1): the second run updates each open PR
        nix.add_commit("beef" * 10, "git: 2.50 -> 2.51")
        nix.channels["nixos-unstable"] = "beef" * 10
        numbers = sorted(prs)
        rc, out = run(capsys)
        assert rc == 0, out
        assert sorted(prs) == numbers  # no second PR
        how = {d["branch"]: d["how"] for d in out["delivered"]}
        for kept in ("main", "main-staging"):  # still on the newest commit keeping 2.8: nothing to update
            assert how.pop(kept) == "pull request already up to date"
        assert set(how.values()) == {"pull request updated"}
        assert {n for n, _ in gh.pulls.edits} == {p["number"] for p in prs.values() if p["base"]["ref"] in how}
        pr = prs[pr["number"]]
        assert pr["head"]["ref"] == "bump/pytorch-2.10-python313-feed029"  # its head branch, force-pushed
        tip = git(ptf.origin, "rev-parse", "refs/heads/bump/pytorch-2.10-python313-feed029").strip()
        assert pr["head"]["sha"] == tip and "beef" * 10 in git(ptf.origin, "show", f"{tip}:README.md") + \
            git(ptf.origin, "show", f"{tip}:.flox/pkgs/pytorch-python313-cuda13_1-sm90-avx512.nix")


def test_the_stand_in_refuses_a_second_pull_request_for_one_head_and_pages(world):
    import httpx

    with FakeGitHub() as gh, httpx.Client() as http:
        api = f"{gh.url}repos/{gh.repo}/pulls"
        auth = {"Authorization": f"Bearer {gh.token}", "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28"}
        body = {"title": "t", "head": "acme:bump/main-1", "base": "main"}
        assert http.post(api, json=body, headers=auth).status_code == 201
        dup = http.post(api, json=body, headers=auth)
        assert dup.status_code == 422 and "already exists" in dup.json()["errors"][0]["message"]
        assert http.post(api, json={"head": "x", "base": "main"}, headers=auth).status_code == 422
        for i in range(2, 103):
            http.post(api, json={**body, "head": f"bump/main-{i}"}, headers=auth)
        page = http.get(api, params={"per_page": 500, "base": "main"}, headers=auth)
        assert len(page.json()) == 100 and 'rel="next"' in page.headers["Link"]  # per_page capped at 100
        required = {"url", "id", "node_id", "html_url", "number", "state", "locked", "title", "user", "body",
                    "labels", "head", "base", "created_at", "updated_at", "draft", "author_association"}
        assert required <= set(page.json()[0])
        from config.settings import Settings
        from release.adapters.github import GitHub

        s = Settings(_env_file=None, github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo)
        listed = GitHub(s).open_pulls(base="main")
        assert len(listed) == 102 and {p["head"] for p in listed} >= {"bump/main-1", "bump/main-102"}


def test_a_deliberate_move_on_a_fresh_clone_reads_the_other_branches_from_origin(world, capsys):
    """Issue 25: `--branch main --pytorch 2.9.1` ended in KeyError (apply_move looked the other
    branches' READMEs up among the local branches only)."""
    pt, _tv, _ptf, _tvf, _nix = world
    rc = cli(["release", "bump-pins", "--branch", "main", "--pytorch", "2.9.1", "--rev", W.HEAD, "--dry-run"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "main PyTorch 2.8" in captured.out and "-> 2.9.1" in captured.out
    # a branch that exists only as origin/* can be bumped by name, and gets its local branch
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.9-python311"])
    assert rc == 0, capsys.readouterr().err
    assert "pytorch-2.9-python311" in W.local_branches(pt)
    assert W.HEAD in git(pt, "show", "pytorch-2.9-python311:.flox/pkgs/pytorch-python311-cpu-avx2.nix")


def test_a_pull_request_builds_on_what_the_remote_has(world, tmp_path, capsys, monkeypatch):
    """The clone's main is behind origin (someone pushed since it was cloned): the bump PR is made
    on origin's main after a fetch, not on the stale local tip."""
    pt, _tv, ptf, _tvf, nix = world
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(ptf.origin), str(other))
    (other / "NOTES.md").write_text("pushed after the clone\n")
    git(other, "add", "NOTES.md")
    git(other, "-c", "user.name=m", "-c", "user.email=m@example.com", "commit", "-qm", "notes")
    git(other, "push", "-q", "origin", "main")
    upstream = git(other, "rev-parse", "main").strip()
    assert git(pt, "rev-parse", "main").strip() != upstream
    with FakeGitHub(upstream=nix.api_url, git_dir=ptf.origin) as gh:
        for key, value in {"TORCHBOT_REPO_PATH": str(pt), "TORCHBOT_GITHUB_API_URL": gh.url,
                           "TORCHBOT_GITHUB_TOKEN": gh.token, "TORCHBOT_GITHUB_REPO": gh.repo}.items():
            monkeypatch.setenv(key, value)
        rc, out = run(capsys)
        assert rc == 0, out
        pr = next(p for p in gh.pulls.prs.values() if p["base"]["ref"] == "main")
    assert git(ptf.origin, "rev-parse", f"{pr['head']['sha']}~1").strip() == upstream


def test_the_diff_of_a_bump_of_every_branch(world):
    """`--diff` and chat's diff read SweepBump.diff() (config.diffs, on main since the branch began)."""
    from config.settings import Settings
    from release.context import Context
    from release.pins.commands import plan_bump

    plan = plan_bump(Context(Settings(), use_repo=False), "all", None, dry_run=True)
    diff = plan.diff()
    assert "diff pytorch-2.10-python313: .flox/pkgs/" in diff
    assert f"+    url = \"https://github.com/NixOS/nixpkgs/archive/{W.HEAD}" in diff
    assert "(build-torchvision)" in diff
