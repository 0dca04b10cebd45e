"""Credentials and repositories that go away (issue 26, point 3): a token revoked while a run
is followed ends the follow at once with one line naming TORCHBOT_GITHUB_TOKEN and what GitHub
said; the builds wait on credentials (not failed), a scheduled poll spends one request on them
while the token is still refused, and they are followed to their end once a working token is
configured. A repository the token cannot see is named (TORCHBOT_GITHUB_REPO) at dispatch."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from config.errors import ExternalError
from release.adapters.github import Actions
from release.builds import github as github_actions
from release.builds import run as builds
from release.state import Build, state_for
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub
from tests.support.waiting import wait_for


def _ctx(tmp_path: Path, gh: FakeGitHub, **over):
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.05,
                http_backoff_seconds=0.01)
    return fx.context(tmp_path, **{**base, **over})


def _builds(ctx) -> list[tuple[str, str | None]]:
    with state_for(ctx).session() as s:
        return [(b.state, b.message) for b in s.query(Build).order_by(Build.id)]


def test_a_token_revoked_mid_follow_ends_it_with_one_line_and_the_runs_resume_with_a_working_token(tmp_path):
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        gh.hold_runs("in_progress", "in_progress")  # the run goes on while it is followed
        github_actions.dispatch_build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"), wait=False)
        (key,) = [r["request_id"] for r in github_actions.runs(ctx)]
        ended: list[BaseException | None] = []

        def follow() -> None:
            try:
                github_actions.follow(ctx, [key], Actions(ctx.settings))
                ended.append(None)
            except ExternalError as err:
                ended.append(err)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        wait_for(lambda: len(gh.job_requests()) >= 2, "the follow to poll the run")
        working, gh.token = gh.token, "ghp-someone-else"  # the token is revoked
        revoked_at = len(gh.log)
        follower.join(timeout=30)
        assert not follower.is_alive(), "the follow went on polling with a refused token"
        (err,) = ended
        assert isinstance(err, ExternalError)
        line = err.message
        assert "\n" not in line and "TORCHBOT_GITHUB_TOKEN" in line and "HTTP 401 Bad credentials" in line
        assert working not in line  # no secret in the line
        assert len(gh.log) - revoked_at <= 3  # stopped at once: no polling without bound
        assert [s for s, _ in _builds(ctx)] == ["running"] * len(fx.OK)  # not failed
        assert all("waiting on GitHub credentials" in (m or "") for _, m in _builds(ctx))
        (run,) = github_actions.runs(ctx)
        assert run["status"] == github_actions.WAITING

        # a scheduled poll while the token is still refused: one request, nothing moves
        before = len(gh.log)
        assert github_actions.poll_active(ctx) == 0
        assert len(gh.log) - before == 1 and github_actions.runs(ctx)[0]["status"] == github_actions.WAITING

        gh.token = working  # a working token is configured again
        gh.release_runs()
        github_actions.poll_active(ctx)
        assert github_actions.runs(ctx)[0]["status"] != github_actions.WAITING
        github_actions.follow(ctx, [key], Actions(ctx.settings))
    assert [s for s, _ in _builds(ctx)] == ["succeeded"] * len(fx.OK)


@pytest.mark.parametrize(("over", "setting", "said"), [
    ({"github_repo": "acme/no-such-repo"}, "TORCHBOT_GITHUB_REPO", "HTTP 404 Not Found"),
    ({"github_token": "ghp-wrong"}, "TORCHBOT_GITHUB_TOKEN", "HTTP 401 Bad credentials"),
])
def test_a_dispatch_to_a_repository_the_token_cannot_reach_names_the_setting(tmp_path, over, setting, said):
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, **over)
        with pytest.raises(ExternalError) as info:
            builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
        assert len(gh.log) == 1  # refused once, not retried
    assert setting in info.value.message and said in info.value.message and "\n" not in info.value.message
    assert _builds(ctx) == [] and github_actions.runs(ctx) == []  # no trace left
