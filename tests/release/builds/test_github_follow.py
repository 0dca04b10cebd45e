"""Following GitHub runs whatever GitHub shows: runs first seen requested, pending (a
concurrency group), waiting (an environment's approval) or already completed are followed to
their end; a dispatch is sent once, and one whose answer was lost is found by its request id;
a deleted run (404) or a secondary rate limit answered without headers never stops the other
runs being followed; and the front end that reported a run hears its end after a restart."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from config.errors import ExternalError
from release.adapters.github import Actions
from release.builds import github as github_actions
from release.builds import run as builds
from release.builds.recover import mark_notified, pending_notices
from release.state import Build, GithubRun, state_for, utcnow
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub


def _ctx(tmp_path: Path, gh: FakeGitHub, **over):
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01,
                http_backoff_seconds=0.01)
    return fx.context(tmp_path, **{**base, **over})


def _states(ctx) -> dict[str, str]:
    return {r["package"]: r["state"] for r in builds.status(ctx, fx.BRANCH)}


def _runs(ctx) -> dict[str, dict]:
    return {r["request_id"]: r for r in github_actions.runs(ctx)}


@pytest.mark.parametrize(("run_status", "job_status"), [("pending", None), ("waiting", "waiting"),
                                                        ("requested", None), ("queued", "pending")])
def test_a_run_github_holds_before_it_starts_is_followed_until_it_ends(tmp_path: Path, run_status, job_status) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        gh.hold_runs(run_status, job_status)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False)
        (key,) = _runs(ctx)
        gh_api = Actions(ctx.settings)
        for _ in range(3):
            report = github_actions.poll_once(ctx, gh_api, [key], force=True)
            assert report.open == 1  # still followed, however long GitHub holds it
        assert _runs(ctx)[key]["status"] not in github_actions.CLOSED and set(_states(ctx).values()) == {"queued"}
        gh.release_runs()
        github_actions.follow(ctx, [key], gh_api)
    assert set(_states(ctx).values()) == {"succeeded"}
    assert _runs(ctx)[key]["status"] == "completed"


@pytest.mark.parametrize("run_details", [True, False])
def test_the_run_github_names_on_dispatch_is_followed_without_a_lookup(tmp_path: Path, run_details) -> None:
    """GitHub answers the dispatch with its run (``return_run_details``): recorded at once, no
    runs listing; a GitHub that answers 204 instead: the run is found by its title."""
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub(run_details=run_details) as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False)
        (run,) = _runs(ctx).values()
        listings = [r for r in gh.log if r.path.endswith("/runs") and r.method == "GET"]
        github_actions.follow(ctx, [run["request_id"]], Actions(ctx.settings))
        (dispatch, *_) = gh.log
    assert dispatch.status == (200 if run_details else 204)
    assert run["run_id"] == "1000" and run["html_url"] == f"https://github.com/{gh.repo}/actions/runs/1000"
    assert len(listings) == (0 if run_details else 1)
    assert set(_states(ctx).values()) == {"succeeded"}
    assert all(b["log"].startswith(run["html_url"] + "/job/") for b in builds.status(ctx, fx.BRANCH))


def test_a_run_first_seen_completed_records_every_build_as_failed_saying_why(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub(startup_failure=True) as gh:  # a broken workflow file: completed at once, no job
        ctx = _ctx(tmp_path, gh)
        rows = builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
    assert {r["state"] for r in rows} == {"failed"}
    assert {r["message"] for r in rows} == {"the run ended (startup_failure) without a job for this variant"}
    (run,) = github_actions.runs(ctx)
    assert run["status"] == "completed"


def test_a_dispatch_answered_502_after_github_made_the_run_is_followed_by_its_request_id(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        gh.answer_after(1, status=502)  # the dispatch makes its run; the gateway answers 502
        rows = builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
        posts = [r for r in gh.log if r.method == "POST"]
    assert len(posts) == 1 and len(gh.dispatches) == 1  # never sent again
    assert {r["state"] for r in rows} == {"succeeded"}
    (run,) = github_actions.runs(ctx)
    assert run["run_id"] == "1000" and run["status"] == "completed"


def test_a_dispatch_whose_answer_was_lost_and_no_run_appears_is_given_up_saying_so(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        gh.throttle(1, status=502, retry_after=None)  # a 5xx: GitHub may or may not have made the run
        github_actions.dispatch_build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"), wait=False)
        (key,) = _runs(ctx)
        assert len(gh.dispatches) == 0 and len([r for r in gh.log if r.method == "POST"]) == 1
        with state_for(ctx).session() as s:  # the grace for its run to appear has passed
            s.query(GithubRun).update({"dispatched": utcnow() - github_actions.DISPATCH_GRACE - timedelta(seconds=1)})
        github_actions.follow(ctx, [key], Actions(ctx.settings))
    assert set(_states(ctx).values()) == {"interrupted"}
    run = _runs(ctx)[key]
    assert run["status"] == "stale" and "GitHub shows no run for dispatch" in run["last_error"]


def test_a_dispatch_github_refuses_leaves_no_trace(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        gh.throttle(1, status=422, retry_after=None)
        with pytest.raises(ExternalError, match="HTTP 422"):
            builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
        posts = [r for r in gh.log if r.method == "POST"]
    assert len(posts) == 1 and _states(ctx) == {} and github_actions.runs(ctx) == []


def test_a_deleted_run_is_closed_saying_so_and_the_other_runs_are_still_followed(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False)
        github_actions.dispatch_build(ctx, plan, wait=False)
        by_run = {r["run_id"]: k for k, r in _runs(ctx).items()}
        gh.delete_run(1000)
        github_actions.follow(ctx, list(by_run.values()), Actions(ctx.settings))
    gone, kept = _runs(ctx)[by_run["1000"]], _runs(ctx)[by_run["1001"]]
    assert gone["status"] == "gone" and "GitHub no longer has run 1000" in gone["last_error"]
    assert kept["status"] == "completed"
    with state_for(ctx).session() as s:
        states = {(b.run_key, b.state, b.message or "") for b in s.query(Build)}
    assert {(k, st) for k, st, _ in states} == {(by_run["1000"], "interrupted"), (by_run["1001"], "succeeded")}
    assert all("GitHub no longer has run 1000" in m for k, _, m in states if k == by_run["1000"])


def test_a_secondary_limit_without_headers_paces_the_poll_instead_of_failing_it(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, http_retry_seconds=1.0)  # the minute GitHub asks for is past the bound
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False)
        (key,) = _runs(ctx)
        gh.secondary_limit(1)
        gh_api = Actions(ctx.settings)
        report = github_actions.poll_once(ctx, gh_api, [key], force=True)  # does not raise
        assert report.open == 1 and report.wait >= 50  # waits the minute GitHub asks for
        assert "rate limit" in _runs(ctx)[key]["last_error"]
        while github_actions.poll_once(ctx, gh_api, [key], force=True).open:
            pass
    assert set(_states(ctx).values()) == {"succeeded"}


NOTICE = {"channel": "C1", "ts": "1.2", "title": "/build", "job": "7"}


def test_a_run_whose_follower_is_gone_is_handed_to_the_front_end_once_it_ends(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False, notice=NOTICE)  # its follower stopped at once
        assert pending_notices(ctx) == []  # not ended yet: nothing to tell
        while github_actions.poll_active(ctx) or github_actions.runs(ctx)[0]["status"] != "completed":
            pass
        ((key, notice, outcome),) = pending_notices(ctx)
    assert notice == NOTICE
    assert "GitHub run 1000" in outcome and f"of {fx.BRANCH} ended: 2 succeeded." in outcome
    mark_notified(ctx, key)
    assert pending_notices(ctx) == []


def test_a_run_followed_to_its_end_by_its_caller_is_not_told_again(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        heard: list[str] = []

        def progress(row: dict) -> None:
            heard.append(row["state"])
            assert pending_notices(ctx) == []  # while its caller follows it, nobody else tells it

        github_actions.dispatch_build(ctx, plan, progress=progress, notice=NOTICE)
    assert heard.count("succeeded") == 2
    assert pending_notices(ctx) == []


def test_the_job_message_of_a_github_run_that_ended_after_a_restart_is_edited_to_say_so(tmp_path: Path) -> None:
    from slack_sdk import WebClient

    from bot.frontends.slack.jobs import report_restarts
    from tests.support.fakes_slack import FakeSlack

    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub(fail={fx.OK[1]}) as gh, FakeSlack() as slack:
        client = WebClient(token=slack.token, base_url=slack.url)
        ts = client.chat_postMessage(channel="CREL", text="`/build` running")["ts"]
        ctx = _ctx(tmp_path, gh)
        notice = {"channel": "CREL", "ts": ts, "title": f"/build {fx.BRANCH}", "job": "3", "user": "UADMIN"}
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False, notice=notice)  # then the bot restarted
        assert report_restarts(client, ctx) == 0  # still running: nothing to say yet
        while github_actions.runs(ctx)[0]["status"] != "completed":
            github_actions.poll_active(ctx)  # the schedule's poll-builds
        assert report_restarts(client, ctx) == 1
        assert report_restarts(client, ctx) == 0  # told once
        (edited,) = [m for m in slack.messages("CREL") if m["ts"] == ts]
        thread = [m["text"] for m in slack.thread("CREL", ts) if m["ts"] != ts]
    assert "edited" in edited and edited["text"].startswith(f"`/build {fx.BRANCH}` (job 3, confirmed by <@UADMIN>)")
    assert "1 failed, 1 succeeded" in edited["text"] and f"Not built: {fx.OK[1]}" in edited["text"]
    assert len(thread) == 1 and "GitHub run 1000" in thread[0]


def test_serve_edits_the_message_while_it_runs_once_the_run_has_ended(tmp_path: Path) -> None:
    import time
    from types import SimpleNamespace

    from slack_sdk import WebClient

    from bot.frontends.cli.serve import _tell_ended_runs
    from tests.support.fakes_slack import FakeSlack

    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh, FakeSlack() as slack:
        client = WebClient(token=slack.token, base_url=slack.url)
        ts = client.chat_postMessage(channel="CREL", text="`/build` running")["ts"]
        ctx = _ctx(tmp_path, gh, github_poll_seconds=0.05)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False, notice={"channel": "CREL", "ts": ts, "title": "/build"})
        stop = _tell_ended_runs(SimpleNamespace(client=client), ctx)  # serving: nothing to tell yet
        try:
            end = time.monotonic() + 60
            while github_actions.runs(ctx)[0]["status"] != "completed":
                assert time.monotonic() < end, "the run never completed"
                github_actions.poll_active(ctx)  # the schedule's poll-builds
            while not [m for m in slack.messages("CREL") if m["ts"] == ts and "edited" in m]:
                assert time.monotonic() < end, "the job message was never edited"
                time.sleep(0.05)
            while pending_notices(ctx):  # the edit is recorded as told right after it is made
                assert time.monotonic() < end, "the edit was never recorded as told"
                time.sleep(0.05)
        finally:
            stop.set()
    (edited,) = [m for m in slack.messages("CREL") if m["ts"] == ts]
    assert "GitHub run 1000" in edited["text"] and "2 succeeded" in edited["text"]
    assert pending_notices(ctx) == []
