"""A GitHub build runs at a commit GitHub has: a bump pull request's head branch, or the
branch's head on the remote. A plan whose local commit the remote lacks is refused in one line,
never dispatched against other code; the plan and the recorded builds name the commit built.
The workflow publishes only a branch's own head."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML  # a test dependency

from bot.frontends.cli.main import main as cli
from config.errors import RefusedError, UsageError
from release.builds import run as builds
from release.builds.commands import plan_build
from release.builds.workflow import render_workflow
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub


def _ctx(tmp_path: Path, gh: FakeGitHub, **over):
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01)
    return fx.context(tmp_path, **{**base, **over})


def _rev(repo: Path, ref: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", ref], check=True, capture_output=True,
                          text=True).stdout.strip()


def _local_commit(repo: Path, branch: str = fx.BRANCH) -> str:
    fx.sh(repo, "git", "checkout", "--quiet", branch)
    fx.write_recipes(repo, fx.NEW_PIN, "local only")
    fx.sh(repo, "git", "commit", "--quiet", "-am", "bump, not pushed")
    fx.sh(repo, "git", "checkout", "--quiet", "main")
    return _rev(repo, branch)


def test_a_plan_whose_commit_the_remote_lacks_is_refused_and_nothing_is_dispatched(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path)
    there = _rev(tmp_path / "origin.git", fx.BRANCH)
    here = _local_commit(repo)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        with pytest.raises(RefusedError) as err:
            plan_build(ctx, fx.BRANCH, None, repo=repo, backend="github")
        assert gh.dispatches == [] and gh.requests == []
    line = err.value.message
    assert "\n" not in line and line.endswith("push first, or build locally (--backend local).")
    assert f"{fx.BRANCH} is at {here[:12]} here" in line and f"it has {there[:12]}" in line
    assert builds.status(ctx, fx.BRANCH) == []  # nothing recorded either
    # a local build of the same branch is still fine: it builds what is here
    assert builds.prepare(ctx, fx.BRANCH, repo=repo).commit == here


def test_the_cli_says_it_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    repo = fx.make_repo(tmp_path)
    _local_commit(repo)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        for key, value in {"TORCHBOT_STATE_DB": ctx.settings.state_db, "TORCHBOT_GITHUB_API_URL": gh.url,
                           "TORCHBOT_GITHUB_TOKEN": gh.token, "TORCHBOT_GITHUB_REPO": gh.repo}.items():
            monkeypatch.setenv(key, value)
        code = cli(["release", "build", "--repo", str(repo), "--branch", fx.BRANCH, "--backend", "github"])
        assert gh.dispatches == []
    err = capsys.readouterr().err.strip()
    assert code != 0 and "Traceback" not in err and len(err.splitlines()) == 1
    assert "push first, or build locally" in err


def test_a_branch_the_remote_does_not_have_is_refused(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path)
    fx.sh(repo, "git", "branch", "pytorch-local-only", fx.BRANCH)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        with pytest.raises(RefusedError, match=r"^'origin' has no branch 'pytorch-local-only', so GitHub cannot "
                                               r"build it: push first, or build locally"):
            builds.prepare(ctx, "pytorch-local-only", repo=repo, backend="github")
        with pytest.raises(RefusedError, match=r"has no branch 'bump/nope'"):
            builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github", head="bump/nope")
        with pytest.raises(UsageError, match=r"is not a branch name"):
            builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github", head="bump/../x")
        with pytest.raises(UsageError, match=r"--head .* is for the github backend"):
            builds.prepare(ctx, fx.BRANCH, repo=repo, head="bump/x")


def test_a_clone_behind_the_remote_builds_the_remote_head(tmp_path: Path) -> None:
    """GitHub builds what it has; the plan and the records name that commit, not the local one."""
    repo = fx.make_repo(tmp_path)
    old = _rev(repo, fx.BRANCH)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "--quiet", "-b", fx.BRANCH, str(tmp_path / "origin.git"), str(other)], check=True)
    fx.sh(other, "git", "-c", "user.name=o", "-c", "user.email=o@x", "commit", "--quiet", "--allow-empty", "-m", "on")
    fx.sh(other, "git", "push", "--quiet", "origin", fx.BRANCH)
    new = _rev(other, "HEAD")
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        assert plan.commit == new != old and f"at {new[:12]} (github, ref {fx.BRANCH})" in plan.text()
        rows = builds.build(ctx, plan)
        (_, payload), = gh.dispatches
    assert {r["commit"] for r in rows if r["state"] != "skipped"} == {new}
    assert payload["ref"] == fx.BRANCH and payload["inputs"]["publish"] == "true"


def test_a_pull_request_head_is_built_there_and_not_published(tmp_path: Path, capsys, monkeypatch) -> None:
    repo = fx.make_repo(tmp_path)
    here = _local_commit(repo)
    fx.sh(repo, "git", "push", "--quiet", "origin", f"{fx.BRANCH}:refs/heads/bump/{fx.BRANCH}-0123456")
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github", head=f"bump/{fx.BRANCH}-0123456")
        assert plan.commit == here and plan.ref == f"bump/{fx.BRANCH}-0123456" and not plan.publishes
        assert f"(github, ref bump/{fx.BRANCH}-0123456, not published: a pull request's head)" in plan.text()
        assert plan.to_dict()["publish"] is False and plan.to_dict()["commit"] == here
        rows = builds.build(ctx, plan)
        (_, payload), = gh.dispatches
    assert payload["ref"] == f"bump/{fx.BRANCH}-0123456" and payload["inputs"]["publish"] == "false"
    built = [r for r in rows if r["state"] != "skipped"]
    assert built and {(r["branch"], r["commit"]) for r in built} == {(fx.BRANCH, here)}
    for key, value in {"TORCHBOT_STATE_DB": ctx.settings.state_db, "TORCHBOT_GITHUB_TOKEN": gh.token}.items():
        monkeypatch.setenv(key, value)
    assert cli(["release", "build", "--repo", str(repo), "--branch", fx.BRANCH, "--backend", "github", "--head",
                f"bump/{fx.BRANCH}-0123456", "--dry-run", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["ref"] == f"bump/{fx.BRANCH}-0123456" and shown["commit"] == here and shown["publish"] is False


def test_the_workflow_publishes_only_when_asked(tmp_path: Path) -> None:
    text = render_workflow(fx.context(tmp_path).settings)
    wf = YAML(typ="safe").load(text)
    publish = wf["on"]["workflow_dispatch"]["inputs"]["publish"]
    assert publish["type"] == "boolean" and publish["default"] is False and publish["required"] is False
    for job in ("pytorch", "companions"):
        steps = {s.get("name"): s for s in wf["jobs"][job]["steps"]}
        assert steps["flox publish"]["if"] == "${{ inputs.publish }}"
        assert steps["flox build"]["if"] == "${{ !inputs.substitute }}"  # a publish after the merge substitutes


def test_a_pull_request_head_this_clone_lacks_is_fetched_out_of_the_branches_way(tmp_path: Path) -> None:
    """A bump PR pushed from elsewhere: its commit is fetched to build it, into refs/torchbot/, so
    no ``origin/bump/…`` branch appears among the branches release commands see."""
    repo = fx.make_repo(tmp_path)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "--quiet", "-b", fx.BRANCH, str(tmp_path / "origin.git"), str(other)], check=True)
    fx.sh(other, "git", "-c", "user.name=o", "-c", "user.email=o@x", "commit", "--quiet", "--allow-empty", "-m", "pr")
    fx.sh(other, "git", "push", "--quiet", "origin", f"HEAD:refs/heads/bump/{fx.BRANCH}-abcdef0")
    there = _rev(other, "HEAD")
    with FakeGitHub() as gh:
        plan = builds.prepare(_ctx(tmp_path, gh), fx.BRANCH, repo=repo, backend="github",
                              head=f"bump/{fx.BRANCH}-abcdef0")
    assert plan.commit == there
    refs = subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(refname)"], check=True,
                          capture_output=True, text=True).stdout.split()
    assert f"refs/torchbot/origin/bump/{fx.BRANCH}-abcdef0" in refs
    assert not [r for r in refs if r.startswith(("refs/remotes/origin/bump/", "refs/heads/bump/"))]
