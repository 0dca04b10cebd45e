"""build-torchvision in lockstep (issue 33 point 4): a companion repository's bump is built in its
own GitHub repository's workflow and recorded under that repository, though its branch and
package names are build-pytorch's too (``main`` of both holds
``torchvision-python313-cuda12_8-sm61-avx``). Two GitHub stand-ins behind one API base (the
build-pytorch one forwards what is not its own to the build-torchvision one), real git
repositories with bare origins, the torchvision origin under a ``github.com/acme/…`` path as its
remote names its GitHub repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from config.errors import UsageError
from release.builds import run as builds
from release.builds.github import dispatch_build, poll_active
from release.schedule.delivered import build_after_bump
from release.state import GithubRun, state_for
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub
from tests.support.waiting import wait_for

TORCH = "pytorch-python313-cuda12_8-sm90-avx512"
PKGS = [TORCH, fx.COMPANION]  # the same names in both repositories, on the same branch


def _repos(tmp: Path, tv_on_github: bool = True) -> tuple[Path, Path, Path, Path]:
    pt = fx.make_repo(tmp / "pt", packages=PKGS)
    tv = fx.make_repo(tmp / "tv", packages=PKGS)
    tv_origin = tmp / ("github.com/acme" if tv_on_github else "elsewhere") / "build-torchvision.git"
    tv_origin.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(tmp / "tv" / "origin.git"), str(tv_origin)], check=True)
    fx.sh(tv, "git", "remote", "set-url", "origin", str(tv_origin))
    return pt, tmp / "pt" / "origin.git", tv, tv_origin


@pytest.fixture
def world(tmp_path: Path):
    pt, pt_origin, tv, tv_origin = _repos(tmp_path)
    with FakeGitHub(repo="acme/build-torchvision", git_dir=tv_origin) as gh_tv, \
            FakeGitHub(repo="acme/build-pytorch", upstream=gh_tv.url, git_dir=pt_origin) as gh:
        ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", github_api_url=gh.url, github_token=gh.token,
                         github_repo=gh.repo, github_poll_seconds=0.01)
        yield ctx, gh, gh_tv, pt, tv


def _edit(repo: Path, package: str) -> None:
    fx.sh(repo, "git", "checkout", "--quiet", fx.BRANCH)
    recipe = repo / ".flox" / "pkgs" / f"{package}.nix"
    recipe.write_text(recipe.read_text().replace("echo ${torch} > $out", "echo ${torch} changed > $out"))
    fx.sh(repo, "git", "commit", "--quiet", "-am", "edit")
    fx.sh(repo, "git", "push", "--quiet", "origin", fx.BRANCH)
    fx.sh(repo, "git", "checkout", "--quiet", "main")


def _build(ctx, repo: Path):
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github", changed_only=True)
    return plan, builds.build(ctx, plan)


def test_each_repository_builds_in_its_own_workflow_and_keeps_its_own_record(world) -> None:
    ctx, gh, gh_tv, pt, tv = world
    plan, rows = _build(ctx, pt)
    assert plan.github is None and sorted(r["package"] for r in rows if r["state"] == "succeeded") == PKGS
    assert len(gh.dispatches) == 1 and gh_tv.dispatches == []

    plan, rows = _build(ctx, tv)  # the same branch and package names: built all the same, in its repository
    assert plan.github == "acme/build-torchvision"
    assert sorted(r["package"] for r in rows if r["state"] == "succeeded") == PKGS
    assert len(gh_tv.dispatches) == 1 and len(gh.dispatches) == 1
    assert {r["repo"] for r in rows} == {"acme/build-torchvision"}
    with state_for(ctx).session() as s:
        assert sorted((r.repo or "") for r in s.query(GithubRun)) == ["", "acme/build-torchvision"]
    latest = state_for(ctx).builds(fx.BRANCH)
    assert sorted((b.repo or "", b.package) for b in latest) == sorted(
        [("", p) for p in PKGS] + [("acme/build-torchvision", p) for p in PKGS])  # four rows, none hidden

    # one repository's change builds in that repository only; the other's record is its own
    _edit(tv, fx.COMPANION)
    assert builds.prepare(ctx, fx.BRANCH, repo=pt, backend="github", changed_only=True).items == []
    plan, rows = _build(ctx, tv)
    assert [r["package"] for r in rows] == [fx.COMPANION] and rows[0]["state"] == "succeeded"
    assert len(gh_tv.dispatches) == 2 and len(gh.dispatches) == 1


def test_the_poller_follows_each_repositorys_runs_through_that_repository(world) -> None:
    ctx, _gh, gh_tv, pt, tv = world
    for repo in (pt, tv):
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        dispatch_build(ctx, plan, wait=False)
    st = state_for(ctx)

    def done() -> bool:
        poll_active(ctx)
        return all(b.state == "succeeded" for b in st.builds(fx.BRANCH)) and len(st.builds(fx.BRANCH)) == 4

    wait_for(done, "both repositories' builds to succeed")
    with st.session() as s:  # each run found and read in its own repository
        where = {(r.repo or ""): r.html_url for r in s.query(GithubRun)}
    assert where[""].startswith("https://github.com/acme/build-pytorch/actions/runs/")
    assert where["acme/build-torchvision"].startswith("https://github.com/acme/build-torchvision/actions/runs/")
    assert any(p.startswith("/repos/acme/build-torchvision/actions/runs/") and p.endswith("/jobs")
               for _m, p in gh_tv.requests)


def test_the_weekly_build_after_a_bump_builds_the_companions_pull_request_too(world) -> None:
    ctx, gh, gh_tv, _pt, tv = world
    head = f"bump/{fx.BRANCH}-0123456"
    fx.sh(tv, "git", "checkout", "--quiet", "-B", head, fx.BRANCH)
    fx.write_recipes(tv, fx.NEW_PIN, "bumped", PKGS)
    fx.sh(tv, "git", "commit", "--quiet", "-am", "bump")
    fx.sh(tv, "git", "push", "--quiet", "origin", head)
    fx.sh(tv, "git", "checkout", "--quiet", "main")
    lines = build_after_bump(ctx, [{"branch": fx.BRANCH, "head": head, "repo": str(tv)}], "github")
    assert lines == [f"{fx.BRANCH} at {head}: 2 variant(s), 2 succeeded"], lines
    ((_, payload),) = gh_tv.dispatches
    assert payload["ref"] == head and payload["inputs"]["publish"] == "false"
    assert gh.dispatches == []


def test_a_companion_with_no_github_repository_is_one_line_and_nothing_is_dispatched(tmp_path: Path) -> None:
    pt, pt_origin, tv, _ = _repos(tmp_path, tv_on_github=False)
    with FakeGitHub(repo="acme/build-pytorch", git_dir=pt_origin) as gh:
        ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", github_api_url=gh.url, github_token=gh.token,
                         github_repo=gh.repo)
        with pytest.raises(UsageError, match=r"^work has no GitHub repository") as err:
            builds.prepare(ctx, fx.BRANCH, repo=tv, backend="github")
        assert "\n" not in err.value.message and gh.dispatches == []
