"""The github build backend at a real release's scale (237 variants, one run) against a fake
GitHub that pages and rate-limits as GitHub documents; following survives a restart of the
process mid-poll, and gives up only on a run that stays unchanged past the staleness limit."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from release.adapters.github import Actions
from release.builds import github as github_actions
from release.builds import run as builds
from release.state import GithubRun, state_for
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub
from tests.support.fixtures_postgres import postgres  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[3]
VARIANTS = [f"pytorch-python313-cuda12_8-sm{n}-avx2" for n in range(100, 337)]  # 237, like a real branch
FAILING = {VARIANTS[7], VARIANTS[150], VARIANTS[236]}  # on every page of the jobs listing


def _ctx(tmp_path: Path, gh: FakeGitHub, **over):
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.05,
                http_backoff_seconds=0.05)
    return fx.context(tmp_path, **{**base, **over})


def _duration(pkg: str) -> float:
    """Varied job lengths, 0.1 to 0.6 s."""
    return 0.1 + (int(pkg.split("-sm")[1].split("-")[0]) % 6) / 10


def test_the_fake_pages_and_counts_as_github_documents(tmp_path: Path) -> None:
    with FakeGitHub() as gh:
        auth = {"Authorization": f"Bearer {gh.token}", "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28"}
        base = f"{gh.url}repos/{gh.repo}/actions/"
        entries = json.dumps([{"package": p} for p in VARIANTS])
        httpx.post(base + "workflows/torchbot-build.yml/dispatches", headers=auth,
                   json={"ref": "b", "inputs": {"pytorch": entries, "request_id": "r1", "branch": "b"}})
        default = httpx.get(base + "runs/1000/jobs", headers=auth)
        capped = httpx.get(base + "runs/1000/jobs", headers=auth, params={"per_page": 500})
        last = httpx.get(capped.links["next"]["url"].replace("page=2", "page=3"), headers=auth)
    assert len(default.json()["jobs"]) == 30 and default.json()["total_count"] == 237  # default page: 30
    assert default.links["last"]["url"].endswith("page=8")  # ceil(237 / 30)
    assert len(capped.json()["jobs"]) == 100 and "per_page=500" in capped.links["next"]["url"]  # capped at 100
    assert len(last.json()["jobs"]) == 37 and "next" not in last.links and last.links["first"]["url"]
    used = [int(r.headers["x-ratelimit-used"]) for r in (default, capped, last)]
    assert used == [2, 3, 4] and int(last.headers["x-ratelimit-remaining"]) == 5000 - 4
    assert int(last.headers["x-ratelimit-reset"]) > 0 and last.headers["x-ratelimit-limit"] == "5000"


def test_237_jobs_run_through_the_release_flow_and_every_result_is_recorded(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=VARIANTS)
    seen: list[dict] = []
    with FakeGitHub(fail=FAILING, durations=_duration) as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        rows = github_actions.dispatch_build(ctx, plan, progress=seen.append)
        job_pages = gh.job_requests()
    assert len(gh.dispatches) == 1 and len(rows) == 237
    by_pkg = {r["package"]: r for r in rows}
    assert set(by_pkg) == set(VARIANTS)
    for pkg, row in by_pkg.items():
        if pkg in FAILING:
            assert row["state"] == "failed" and row["message"].startswith("GitHub job failure (retry: "), row
        else:
            assert row["state"] == "succeeded" and row["message"] is None, row
        assert "without a job" not in (row["message"] or "")
        assert row["log"].startswith("https://github.com/acme/build-pytorch/actions/runs/1000/job/")
    # each result reported once, each poll read every page, 100 jobs per page
    finals = [e["package"] for e in seen if e["state"] in ("succeeded", "failed")]
    assert sorted(finals) == sorted(VARIANTS)
    assert all(r.query.get("per_page") == "100" for r in job_pages)
    assert [r.query.get("page", "1") for r in job_pages[:3]] == ["1", "2", "3"]
    (run,) = github_actions.runs(ctx, fx.BRANCH)
    assert run["status"] == "completed" and run["conclusion"] == "failure" and run["run_id"] == "1000"
    assert run["requests"] == run["polls"] * math.ceil(237 / 100) == len(job_pages)


def test_a_variant_the_run_made_no_job_for_is_failed_once_the_run_has_ended(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    lost, kept = fx.OK
    with FakeGitHub(no_job={lost}, run_details=False) as gh:  # found by its title: the listing reads it first
        ctx = _ctx(tmp_path, gh)
        rows = {r["package"]: r for r in builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo,
                                                                           backend="github"))}
        run_gets = [r for r in gh.log if r.path.endswith("/runs/1000")]
    assert rows[kept]["state"] == "succeeded"
    assert rows[lost]["state"] == "failed"
    assert rows[lost]["message"] == "the run ended (success) without a job for this variant"
    assert len(run_gets) == 1  # asked only once every listed job had ended


_CHILD = """
import json, sys
from pathlib import Path
from release.builds import github as gha, run as builds
from tests.support import fixtures_builds as fx
tmp, url, token, events = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
ctx = fx.context(tmp, github_api_url=url, github_token=token, github_repo="acme/build-pytorch",
                 github_poll_seconds=0.05)
plan = builds.prepare(ctx, fx.BRANCH, repo=tmp / "work", backend="github")
def record(row):
    with events.open("a") as f:
        f.write(json.dumps(row) + "\\n")
gha.dispatch_build(ctx, plan, progress=record)
"""


def test_a_restart_mid_poll_resumes_from_the_db_and_records_each_result_once(tmp_path: Path) -> None:
    fx.make_repo(tmp_path, packages=VARIANTS)  # tmp_path/work, which the first process builds
    quick = set(VARIANTS[::2])
    durations = {p: (0.0 if p in quick else 1.5) for p in VARIANTS}
    events_a = tmp_path / "events-a.jsonl"
    pages = []

    def second_poll_page_2(method: str, path: str, query: dict) -> bool:
        if path.endswith("/jobs"):
            pages.append(query)
        return path.endswith("/jobs") and query.get("page") == "2" and len(pages) > 3

    with FakeGitHub(fail=FAILING, durations=durations) as gh:
        reached, release = gh.pause(second_poll_page_2)
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), gh.url, gh.token, str(events_a)],
                                 cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert reached.wait(120), "the first process never reached its second poll"
            os.kill(child.pid, signal.SIGKILL)  # mid-poll: page 1 read, page 2 in flight
            assert child.wait(30) == -signal.SIGKILL
        finally:
            release.set()
            if child.poll() is None:
                child.kill()
        ctx = _ctx(tmp_path, gh)
        with state_for(ctx).session() as s:
            (saved,) = s.query(GithubRun).all()
            assert saved.run_id == "1000" and saved.status in ("in_progress", "queued") and saved.polls >= 1
        before = {r["package"]: r["state"] for r in builds.status(ctx, fx.BRANCH)}
        events_b: list[dict] = []
        github_actions.follow(ctx, [saved.request_id], Actions(ctx.settings), progress=events_b.append)
    first = [json.loads(line) for line in events_a.read_text().splitlines()]
    final = ("succeeded", "failed")
    done_a = [e["package"] for e in first if e["state"] in final]
    done_b = [e["package"] for e in events_b if e["state"] in final]
    assert set(done_a) == {p for p, s in before.items() if s in final} and set(done_a) >= quick - FAILING
    assert sorted(done_a + done_b) == sorted(VARIANTS)  # every result recorded exactly once
    rows = {r["package"]: r for r in builds.status(ctx, fx.BRANCH)}
    assert {p for p, r in rows.items() if r["state"] == "failed"} == FAILING
    assert {p for p, r in rows.items() if r["state"] == "succeeded"} == set(VARIANTS) - FAILING


def test_two_followers_on_postgresql_record_each_result_once(tmp_path: Path, postgres) -> None:  # noqa: F811
    """Two pollers of the same run at once (two torchbot processes on one PostgreSQL database):
    every result is recorded once, by one of them, and each follower hears every result once,
    whichever of them polled it."""
    import threading

    repo = fx.make_repo(tmp_path, packages=VARIANTS)
    with FakeGitHub(fail=FAILING, durations=_duration) as gh:
        ctx = _ctx(tmp_path, gh, state_db=postgres.new_database(), github_poll_seconds=0.01)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False)
        (run,) = github_actions.runs(ctx)
        seen: list[list[dict]] = [[], []]
        followers = [threading.Thread(target=github_actions.follow,
                                      args=(ctx, [run["request_id"]], Actions(ctx.settings), seen[i].append))
                     for i in range(2)]
        for t in followers:
            t.start()
        for t in followers:
            t.join(120)
    for events in seen:
        finals = [e["package"] for e in events if e["state"] in ("succeeded", "failed")]
        assert sorted(finals) == sorted(VARIANTS)  # none twice, none lost
    rows = {r["package"]: r["state"] for r in builds.status(ctx, fx.BRANCH)}
    assert {p for p, s in rows.items() if s == "failed"} == FAILING and len(rows) == 237
    assert github_actions.runs(ctx)[0]["status"] == "completed"


def test_a_run_that_never_changes_is_given_up_after_the_staleness_limit_saying_so(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub(durations=lambda p: 3600.0) as gh:
        ctx = _ctx(tmp_path, gh, github_stale_hours=0.5 / 3600)  # half a second, scaled down
        rows = builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
    assert {r["state"] for r in rows} == {"interrupted"}
    message = rows[0]["message"]
    assert "saw no change in GitHub run 1000" in message and "TORCHBOT_GITHUB_STALE_HOURS" in message
    (run,) = github_actions.runs(ctx)
    assert run["status"] == "stale" and "stopped following" in run["last_error"]


def test_polling_waits_for_the_rate_limit_reset_and_still_records_everything(tmp_path: Path) -> None:
    """A budget of 10 requests per 2 s window: polls of 3 pages hit the limit; torchbot waits
    for x-ratelimit-reset instead of hammering, and every result is recorded."""
    repo = fx.make_repo(tmp_path, packages=VARIANTS)
    with FakeGitHub(fail=FAILING, durations=_duration, rate_limit=10, window=2.0) as gh:
        ctx = _ctx(tmp_path, gh, github_poll_seconds=0.01)
        rows = builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
        limited = [r for r in gh.log if r.status == 403]
        windows = (gh.log[-1].t - gh.log[0].t) / 2.0
    assert {r["package"] for r in rows if r["state"] == "failed"} == FAILING
    assert {r["package"] for r in rows if r["state"] == "succeeded"} == set(VARIANTS) - FAILING
    assert len(limited) <= math.ceil(windows) + 1  # at most one refused request per window


def test_rate_limit_past_the_retry_bound_is_noted_and_paces_the_next_poll(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub(rate_limit=3, window=60.0, run_details=False) as gh:  # the run found by a listing
        ctx = _ctx(tmp_path, gh, http_retry_seconds=1)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        github_actions.dispatch_build(ctx, plan, wait=False)  # dispatch + runs listing: 2 requests
        actions = Actions(ctx.settings)
        first = github_actions.poll_once(ctx, actions)  # the third request: the last of the window
        second = github_actions.poll_once(ctx, actions)  # not due: nothing is left until the reset
        assert (first.requests, first.runs, second.requests, second.runs) == (1, 1, 0, 0)
        assert first.wait > 30 and second.wait > 30
        # a process that has not seen the headers yet (forced) is refused and notes why
        third = github_actions.poll_once(ctx, Actions(ctx.settings), force=True)
        assert third.requests == 1 and third.wait > 30 and third.changed == 0
        (run,) = github_actions.runs(ctx)
        assert "rate limit holds until" in run["last_error"]
        sent = len(gh.log)
        assert github_actions.poll_active(ctx) == 0  # not due: it waits for the reset, spending nothing
        assert len(gh.log) == sent and [r.status for r in gh.log].count(403) == 1
