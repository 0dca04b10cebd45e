"""What a scheduled bump builds with (TORCHBOT_SCHEDULE_BUILD_BACKEND): by default GitHub
when a token and repository are configured, otherwise nothing: the bump is made and reported
and the bot's own host builds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.errors import ConfigError
from config.settings import load_settings
from release.builds import run as builds
from release.builds.commands import plan_build
from release.publishing import publish
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
        result = schedule.run_now(ctx, "bump")["result"]
    assert "build: none" in result and "no GitHub token" in result, result
    assert "bumped" in result and "nothing left this machine" in result, result
    assert all(pins.NEW in t for t in pins.tree_files(work, BRANCH).values())
    assert builds.status(ctx, BRANCH) == []  # nothing built, nothing queued


def _github_ctx(tmp_path: Path, work: Path, nix: FakeNixpkgs, gh: FakeGitHub, **over):
    return fx.context(tmp_path, repo_path=work, channels_url=nix.channels_url, github_api_url=gh.url,
                      github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01,
                      nixpkgs_tarball_url=nix.tarball_url, build_command="false", http_retries=1,
                      flox_org="acme", publish_command="true", **over)


def _rev(origin: Path, ref: str) -> str:
    return pins.git(origin, "rev-parse", ref).strip()


def test_a_bump_left_on_this_machine_is_not_built_on_github(tmp_path: Path) -> None:
    work, _ = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url) as gh:
        _nixpkgs(nix)
        result = schedule.run_now(_github_ctx(tmp_path, work, nix, gh, bump_delivery="local"), "bump")["result"]
        dispatched = list(gh.dispatches)
    assert f"{BRANCH}: none (the bump is only on this machine; GitHub would build the old pin" in result, \
        result
    assert dispatched == []  # never dispatched against the old code


def test_with_push_delivery_the_scheduled_build_goes_to_github(tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, git_dir=origin) as gh:
        _nixpkgs(nix)
        ctx = _github_ctx(tmp_path, work, nix, gh, bump_delivery="push")
        result = schedule.run_now(ctx, "bump")["result"]
        dispatched = [(w, p) for w, p in gh.dispatches if p["ref"] == BRANCH]
        statuses = list(gh.statuses.posted)
    (workflow, payload), = dispatched
    assert workflow == "torchbot-build.yml" and payload["inputs"]["publish"] == "true", result
    sent = {e["package"] for _, p in dispatched for key in ("pytorch", "companions")
            for e in json.loads(p["inputs"][key])}
    rows = builds.status(ctx, BRANCH)
    assert rows and {r["backend"] for r in rows} == {"github"} and {r["package"] for r in rows} == sent
    assert {r["state"] for r in rows} == {"succeeded"} and {r["pin"] for r in rows} == {pins.NEW}
    assert {r["commit"] for r in rows} == {_rev(origin, BRANCH)}  # what GitHub has: the pushed bump
    assert statuses == []  # a branch's own build is published, not reviewed
    published = publish.publish_pending(ctx, BRANCH)
    assert published and {r["message"] for r in published} == {"published by the GitHub workflow"}


def test_a_bump_pull_request_is_built_at_its_head_reported_and_published_once_merged(tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    before = _rev(origin, BRANCH)
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, git_dir=origin) as gh:
        _nixpkgs(nix)
        ctx = _github_ctx(tmp_path, work, nix, gh, bump_automerge=True)
        result = schedule.run_now(ctx, "bump")["result"]
        (pr,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == BRANCH]
        head_ref, head = pr["head"]["ref"], pr["head"]["sha"]
        dispatched = [p for _, p in gh.dispatches if p["inputs"]["branch"] == BRANCH]
        posted = gh.statuses.of(head)
        merges = [m for m in gh.pulls.merges if m["number"] == pr["number"]]
        # what merged is published on GitHub from the branch (the torchbot host runs no publish)
        published = publish.publish_pending(ctx, BRANCH)
        publish_runs = [p for _, p in gh.dispatches if p["inputs"]["publish"] == "true"]
        assert publish.publish_pending(ctx, BRANCH) == []  # once
    assert head_ref == f"bump/{BRANCH}-{pins.NEW[:7]}" and f"{BRANCH} at {head_ref}: " in result, result
    (payload,) = dispatched
    assert payload["ref"] == head_ref and payload["inputs"]["publish"] == "false"
    rows = builds.status(ctx, BRANCH)
    n = len(rows)
    assert {r["commit"] for r in rows} == {head} and {r["state"] for r in rows} == {"succeeded"}
    assert posted[0]["state"] == "pending" and posted[0]["description"].startswith(f"0/{n} built")
    assert (posted[-1]["state"], posted[-1]["description"]) == ("success", f"{n}/{n} built")
    assert posted[-1]["context"] == "torchbot/builds"
    # automerge: every build passed, so the PR merged; the branch now holds the bump
    (merge,) = merges
    assert _rev(origin, BRANCH) == merge["sha"] != before and pr["state"] == "closed" and pr["merged_at"]
    # what merged is published from the branch, without building it again
    again = plan_build(ctx, BRANCH, None, backend="github", changed_only=True)
    assert again.to_dict()["build"] == [] and len(again.to_dict()["unchanged"]) == n
    assert len(published) == n and {r["state"] for r in published} == {"published"}
    assert {r["commit"] for r in published} == {merge["sha"]}
    assert all(r["message"] == f"published on GitHub (built again on its runner (no build cache)) from {BRANCH} "
               f"at {merge['sha'][:12]}" for r in published)
    (run,) = publish_runs
    assert run["ref"] == BRANCH and "substitute" not in run["inputs"]  # no cache: said, and it builds again


def test_a_failed_build_fails_the_status_and_nothing_merges(tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    one = pins.git(origin, "ls-tree", "--name-only", BRANCH, ".flox/pkgs/").split()[0].rsplit("/", 1)[1][:-4]
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, git_dir=origin, fail={one}) as gh:
        _nixpkgs(nix)
        ctx = _github_ctx(tmp_path, work, nix, gh, bump_automerge=True)
        schedule.run_now(ctx, "bump")
        (pr,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == BRANCH]
        posted = gh.statuses.of(pr["head"]["sha"])
        merged = [m for m in gh.pulls.merges if m["number"] == pr["number"]]
    assert posted[-1]["state"] == "failure" and posted[-1]["description"].endswith(", 1 failed")
    assert merged == [] and pr["state"] == "open"
    assert publish.pending(ctx, BRANCH) == []  # nothing of an unmerged PR is published
