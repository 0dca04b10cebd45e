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


def test_with_a_github_token_the_scheduled_bump_is_a_pull_request_and_nothing_builds_the_old_branch(
        tmp_path: Path) -> None:
    work, origin = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, git_dir=origin) as gh:
        _nixpkgs(nix)
        ctx = fx.context(tmp_path, repo_path=work, channels_url=nix.channels_url, github_api_url=gh.url,
                         github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01,
                         nixpkgs_tarball_url=nix.tarball_url, build_command="false", http_retries=1)
        result = schedule.run_now(ctx, "bump")["result"]
        assert not gh.dispatches, result  # the branch on GitHub still has the old pin: not built
        bases = sorted(p["base"]["ref"] for p in gh.pulls.prs.values())
    assert BRANCH in bases and "pull request(s): https://github.test/" in result, result
    assert "pull requests are built at their heads" in result


def test_with_push_delivery_the_scheduled_build_goes_to_github(tmp_path: Path) -> None:
    work, _ = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url) as gh:
        _nixpkgs(nix)
        ctx = fx.context(tmp_path, repo_path=work, channels_url=nix.channels_url, github_api_url=gh.url,
                         github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01, bump_delivery="push",
                         nixpkgs_tarball_url=nix.tarball_url, build_command="false", http_retries=1)
        result = schedule.run_now(ctx, "bump")["result"]
        dispatched = list(gh.dispatches)
    rows = builds.status(ctx, BRANCH)
    assert "variant(s)" in result and dispatched, result
    assert payload_refs(dispatched) >= {BRANCH}, result
    workflow, _payload = next((w, p) for w, p in dispatched if p["ref"] == BRANCH)
    assert workflow == "torchbot-build.yml"
    dispatched = [(w, p) for w, p in dispatched if p["ref"] == BRANCH]
    sent = {e["package"] for _, p in dispatched for key in ("pytorch", "companions")
            for e in json.loads(p["inputs"][key])}
    assert rows and {r["backend"] for r in rows} == {"github"} and {r["package"] for r in rows} == sent
    assert {r["state"] for r in rows} == {"succeeded"} and {r["pin"] for r in rows} == {pins.NEW}


def payload_refs(dispatched) -> set[str]:
    return {p["ref"] for _, p in dispatched}
