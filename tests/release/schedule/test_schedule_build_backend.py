"""What a scheduled bump builds with (TORCHBOT_SCHEDULE_BUILD_BACKEND): by default GitHub
when a token and repository are configured, otherwise nothing: the bump is made and reported
and the bot's own host builds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.errors import ConfigError
from config.settings import load_settings
from release.builds import run as builds
from release.builds.commands import plan_build
from release.pins.commands import plan_bump
from release.publishing import publish
from release.schedule import delivered
from release.schedule import jobs as schedule
from tests.support import fixtures_builds as fx
from tests.support import fixtures_pins as pins
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs

BRANCH = "pytorch-2.8-python312"


def _nixpkgs(nix: FakeNixpkgs) -> None:
    nix.add_rev(pins.PIN_A, "2.8.0", {"cudaPackages_12_8"})
    nix.add_rev(pins.NEW, "2.8.4", {"cudaPackages_12_8"})
    nix.channels["nixos-unstable"] = pins.NEW


def test_the_default_follows_the_configuration() -> None:
    assert load_settings(_env_file=None).schedule_backend() == "none"
    assert load_settings(_env_file=None, github_token="ghp-x").schedule_backend() == "github"
    assert load_settings(_env_file=None, github_token="ghp-x", github_repo="").schedule_backend() == "none"
    assert load_settings(_env_file=None, github_token="ghp-x", schedule_build_backend="local").schedule_backend() \
        == "local"
    assert load_settings(_env_file=None, schedule_build_backend=" None ").schedule_backend() == "none"
    # the former name still works when the new one is unset
    assert load_settings(_env_file=None, build_backend="local").schedule_backend() == "local"
    with pytest.raises(ConfigError, match=r"^TORCHBOT_SCHEDULE_BUILD_BACKEND: .*'github', 'local' or 'none'"):
        load_settings(_env_file=None, schedule_build_backend="cloud")


def test_without_a_github_token_the_schedule_bumps_reports_and_builds_nothing(tmp_path: Path) -> None:
    work, _ = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix:
        _nixpkgs(nix)
        ctx = fx.context(tmp_path, repo_path=work, channels_url=nix.channels_url, github_api_url=nix.api_url,
                         nixpkgs_tarball_url=nix.tarball_url, build_command="false", http_retries=1)
        result = schedule.run_now(ctx, f"bump:{BRANCH}")["result"]
    assert "build: none" in result and "no GitHub token" in result, result
    assert f"bump pin {pins.PIN_A[:7]} -> {pins.NEW[:7]}" in result, result
    assert builds.status(ctx, BRANCH) == []  # nothing built, nothing queued


def _github_ctx(tmp_path: Path, work: Path, nix: FakeNixpkgs, gh: FakeGitHub, **over):
    return fx.context(tmp_path, repo_path=work, channels_url=nix.channels_url, github_api_url=gh.url,
                      github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01,
                      nixpkgs_tarball_url=nix.tarball_url, build_command="false", http_retries=1,
                      flox_org="acme", publish_command="true", **over)


def test_a_bump_left_on_this_machine_is_not_built_on_github(tmp_path: Path) -> None:
    work, _ = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url) as gh:
        _nixpkgs(nix)
        result = schedule.run_now(_github_ctx(tmp_path, work, nix, gh), f"bump:{BRANCH}")["result"]
        dispatched = list(gh.dispatches)
    assert f"bump pin {pins.PIN_A[:7]} -> {pins.NEW[:7]}" in result, result
    assert "build: none (the bump is only on this machine; GitHub would build the old pin" in result, result
    assert dispatched == []  # never dispatched against the old code


def test_a_pushed_bump_is_built_at_the_branch_and_published_by_the_workflow(tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, origin=origin) as gh:
        _nixpkgs(nix)
        ctx = _github_ctx(tmp_path, work, nix, gh)
        result = plan_bump(ctx, BRANCH, None, push=True).apply().to_dict()
        lines = delivered.build_after_bump(ctx, result, [BRANCH], "github")
        dispatched = list(gh.dispatches)
        statuses = list(gh.pulls_api.statuses)
    (workflow, payload), *_ = dispatched
    assert workflow == "torchbot-build.yml" and payload["ref"] == BRANCH and payload["inputs"]["publish"] is True
    rows = builds.status(ctx, BRANCH)
    assert {r["commit"] for r in rows} == {pins.git(origin, "rev-parse", BRANCH).strip()}
    assert {r["state"] for r in rows} == {"succeeded"} and {r["pin"] for r in rows} == {pins.NEW}, lines
    assert statuses == []  # a branch's own build is published, not reviewed
    published = publish.publish_pending(ctx, BRANCH)
    assert {r["message"] for r in published} == {"published by the GitHub workflow"}


def test_a_bump_pull_request_is_built_at_its_head_reported_and_published_once_merged(tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, origin=origin) as gh:
        _nixpkgs(nix)
        ctx = _github_ctx(tmp_path, work, nix, gh, bump_automerge=True)
        before = pins.git(origin, "rev-parse", BRANCH).strip()
        result = plan_bump(ctx, BRANCH, None, open_pr=True).apply().to_dict()
        (pr,) = result["pull_requests"]
        head = pins.git(origin, "rev-parse", pr["head"]).strip()
        lines = delivered.build_after_bump(ctx, result, [BRANCH], "github")
        dispatched = list(gh.dispatches)
        posted = gh.pulls_api.of(head)
        merges = list(gh.pulls_api.merges)
    assert pr["head"] == f"bump/{BRANCH}-{pins.NEW[:7]}" and lines[0].startswith(f"{BRANCH}: build of {pr['head']}")
    (_, payload), *_ = dispatched
    assert payload["ref"] == pr["head"] and payload["inputs"]["publish"] is False
    rows = builds.status(ctx, BRANCH)
    n = len(rows)
    assert {r["commit"] for r in rows} == {head} and {r["state"] for r in rows} == {"succeeded"}
    assert posted[0]["state"] == "pending" and posted[0]["description"].startswith(f"0/{n} built")
    assert (posted[-1]["state"], posted[-1]["description"]) == ("success", f"{n}/{n} built")
    assert posted[-1]["context"] == "torchbot/builds"
    # automerge: every build passed, so the PR merged; the branch now holds the bump
    (merge,) = merges
    assert pins.git(origin, "rev-parse", BRANCH).strip() == merge["sha"] != before
    # what merged is published from the branch, without building it again
    again = plan_build(ctx, BRANCH, None, backend="github", changed_only=True)
    assert again.to_dict()["build"] == [] and len(again.to_dict()["unchanged"]) == n
    published = publish.publish_pending(ctx, BRANCH)
    assert len(published) == n and {r["state"] for r in published} == {"published"}
    assert {r["commit"] for r in published} == {merge["sha"]}
    assert all(r["message"].startswith(f"built at {head[:12]}, published from {BRANCH}") for r in published)
    assert publish.publish_pending(ctx, BRANCH) == []  # once


def test_a_failed_build_fails_the_status_and_nothing_merges(tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix:
        _nixpkgs(nix)
        with FakeGitHub(upstream=nix.api_url, origin=origin) as probe:
            ctx = _github_ctx(tmp_path, work, nix, probe)
            result = plan_bump(ctx, BRANCH, None, open_pr=True).apply().to_dict()
        (pr,) = result["pull_requests"]
        head = pins.git(origin, "rev-parse", pr["head"]).strip()
        one = sorted(p.removesuffix(".nix") for p in pins.git(origin, "ls-tree", "--name-only", head,
                                                               ".flox/pkgs/").split())[0].rsplit("/", 1)[-1]
        with FakeGitHub(upstream=nix.api_url, origin=origin, fail={one}) as gh:
            ctx = _github_ctx(tmp_path, work, nix, gh, bump_automerge=True)
            gh.pulls_api.pulls = {1: {"number": 1, "head": pr["head"], "base": BRANCH, "title": "t", "body": "",
                                      "draft": False, "state": "open", "created_at": "", "updated_at": "",
                                      "closed_at": None, "merged_at": None, "merge_commit_sha": None}}
            delivered.build_after_bump(ctx, result, [BRANCH], "github")
            posted = gh.pulls_api.of(head)
            merges = list(gh.pulls_api.merges)
    assert posted[-1]["state"] == "failure" and posted[-1]["description"].endswith(", 1 failed")
    assert merges == []
    assert publish.pending(ctx, BRANCH) == []  # nothing of an unmerged PR is published
