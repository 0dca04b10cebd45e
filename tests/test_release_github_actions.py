"""The github backend against a fake GitHub Actions API on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.errors import ExternalError, UsageError
from release.builds import run as builds
from release.builds import github as github_actions
from release.builds.workflow import render_workflow, write_workflow
from tests import fixtures_builds as fx
from tests.fakes_github import FakeGitHub


def _ctx(tmp_path: Path, gh: FakeGitHub, **over):
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01)
    return fx.context(tmp_path, **{**base, **over})


def test_dispatch_poll_and_states(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path)
    with FakeGitHub(fail={fx.FAILING}) as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        rows = {r["package"]: r for r in builds.build(ctx, plan)}
        (workflow, payload), = gh.dispatches
    assert workflow == "torchbot-build.yml" and payload["ref"] == "main"
    inputs = payload["inputs"]
    assert inputs["branch"] == fx.BRANCH and len(inputs["request_id"]) == 16
    assert json.loads(inputs["companions"]) == [fx.COMPANION]
    assert sorted(json.loads(inputs["pytorch"])) == sorted(set(fx.ALL) - {fx.COMPANION})
    assert rows[fx.FAILING]["state"] == "failed" and "failure" in rows[fx.FAILING]["message"]
    for pkg in set(fx.ALL) - {fx.FAILING}:
        assert rows[pkg]["state"] == "succeeded" and rows[pkg]["backend"] == "github"
        assert rows[pkg]["log"].startswith("https://github.com/acme/build-pytorch/actions/runs/1000/job/")
        assert rows[pkg]["started"] and rows[pkg]["finished"] and rows[pkg]["external_id"] == "1000"
    # it polled: the run went queued -> in_progress -> completed
    assert sum(1 for m, p in gh.requests if p.endswith("/jobs")) >= 3


def test_poll_active_one_pass_at_a_time(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        rows = github_actions.dispatch_build(ctx, plan, wait=False)
        assert {r["state"] for r in rows} == {"queued"}
        assert github_actions.poll_active(ctx) == 0  # still queued
        assert github_actions.poll_active(ctx) == 2  # running
        assert github_actions.poll_active(ctx) == 2  # succeeded
        assert github_actions.poll_active(ctx) == 0  # nothing left to follow
    assert {r["state"] for r in builds.status(ctx, fx.BRANCH)} == {"succeeded"}


def test_errors_are_clear_and_record_nothing(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, github_token="wrong", http_retries=1)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        with pytest.raises(ExternalError, match="HTTP 401"):
            builds.build(ctx, plan)
        assert builds.status(ctx, fx.BRANCH) == []
        with pytest.raises(UsageError, match="GITHUB_TOKEN"):
            builds.build(fx.context(tmp_path, github_api_url=gh.url), plan)


def test_rendered_workflow(tmp_path: Path) -> None:
    ctx = fx.context(tmp_path, build_jobs=3)
    text = render_workflow(ctx.settings)
    assert "workflow_dispatch:" in text and "fromJSON(inputs.pytorch)" in text
    assert 'flox publish -o acme "${{ matrix.package }}"' in text and "max-parallel: 3" in text
    assert "needs: pytorch" in text and "$" + "org" not in text
    repo = fx.make_repo(tmp_path)
    path = write_workflow(ctx, repo, commit=True)
    assert path.read_text() == text
    assert "torchbot: GitHub Actions build workflow" in builds.git(repo, "log", "-1", "--format=%s")


def test_github_builds_are_recorded_as_published_by_the_workflow(tmp_path: Path) -> None:
    from release.publishing import publish

    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, publish_command="false")  # torchbot must not publish these itself
        builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
    rows = publish.publish_pending(ctx, fx.BRANCH)
    assert sorted((r["package"], r["state"]) for r in rows) == [(p, "published") for p in sorted(fx.OK)]
    assert publish.publish_pending(ctx, fx.BRANCH) == []
