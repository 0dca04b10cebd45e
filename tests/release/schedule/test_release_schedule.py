"""The APScheduler schedule with its job store in the state DB."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from release.schedule import jobs as schedule
from release.state import open_state
from tests.support import fixtures_builds as fx


def _ctx(tmp_path: Path, **over):
    return fx.context(tmp_path, **over)


def _set_next_run(ctx, job_id: str, when: datetime) -> None:
    """What a long downtime leaves in the job store: a next run time in the past."""
    store = schedule._make(ctx, store_only=True)
    store.start(paused=True)
    store.modify_job(job_id, next_run_time=when)
    store.shutdown(wait=False)


def test_jobs_persist_across_restart(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    sched = schedule.start_scheduler(ctx)
    before = {j.id: j.next_run_time for j in sched.get_jobs()}
    sched.shutdown()
    ids = set(before)
    assert {"poll-builds", "publish", "flush-announcements"} <= ids
    assert "bump" in ids  # one weekly job: every branch and pin group of every repository
    listed = schedule.list_jobs(ctx)  # a new process-like open of the same store
    assert {j["id"]: j["next_run"] for j in listed} == {k: v.isoformat() for k, v in before.items()}


def wait_for(condition, what: str, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` holds (generously: the machine may be loaded)."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def test_missed_runs_are_coalesced_into_one(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, publish_interval_seconds=60)
    schedule.start_scheduler(ctx).shutdown()
    _set_next_run(ctx, "publish", datetime.now(UTC) - timedelta(seconds=10 * 60 + 30))
    ran = [r for r in schedule.run_pending(ctx) if r["job"] == "publish"]
    assert len(ran) == 1 and ran[0]["missed_runs"] == 10
    assert "no repository" in ran[0]["result"]
    assert len(open_state(ctx.settings.state_db).job_runs("publish")) == 1
    assert [r for r in schedule.run_pending(ctx) if r["job"] == "publish"] == []  # next run is in the future

    # the same with the background scheduler: one run on start, not eleven
    _set_next_run(ctx, "publish", datetime.now(UTC) - timedelta(seconds=5 * 60 + 10))
    sched = schedule.start_scheduler(ctx)
    wait_for(lambda: len(open_state(ctx.settings.state_db).job_runs("publish")) >= 2, "the run on start")
    # the catch-up is over once the scheduler has moved the next run into the future: nothing is due
    # then; shutting down waits for whatever it had already handed to its workers
    wait_for(lambda: sched.get_job("publish").next_run_time > datetime.now(UTC), "the next run in the future")
    sched.shutdown(wait=True)
    assert len(open_state(ctx.settings.state_db).job_runs("publish")) == 2


def test_two_schedulers_on_one_db_run_each_run_once(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, poll_interval_seconds=1, publish_interval_seconds=1, flush_interval_seconds=1)
    schedule.stats["ran"].clear()
    schedule.stats["skipped"].clear()
    jobs = ("poll-builds", "publish", "flush-announcements")
    start = time.monotonic()
    a = schedule.start_scheduler(ctx)
    b = schedule.start_scheduler(ctx)

    def enough() -> bool:
        runs = open_state(ctx.settings.state_db).job_runs()
        return schedule.stats["skipped"]["publish"] >= 1 and all(sum(r.job_id == j for r in runs) >= 2 for j in jobs)

    try:
        wait_for(enough, "two runs of each job, and the other scheduler standing down")
    finally:
        a.shutdown()
        b.shutdown()
    elapsed = time.monotonic() - start
    runs = open_state(ctx.settings.state_db).job_runs()
    for job in jobs:
        slots = [r.slot for r in runs if r.job_id == job]
        assert len(slots) >= 2, slots  # it did run, about once a second
        assert len(slots) == len(set(slots))  # never the same run twice
        assert len(slots) <= elapsed + 2, (slots, elapsed)  # at most once a second, not once per scheduler
    assert schedule.stats["ran"]["publish"] == len([r for r in runs if r.job_id == "publish"])
    assert schedule.stats["skipped"]["publish"] >= 1  # the other scheduler tried and stood down


def test_cli_schedule(tmp_path: Path, monkeypatch, capsys) -> None:
    from bot.frontends.cli import main as cli
    monkeypatch.setenv("TORCHBOT_STATE_DB", f"sqlite:///{tmp_path / 'cli.sqlite'}")
    assert cli.main(["schedule", "list", "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out)
    assert all(j["next_run"] for j in jobs) and "publish" in {j["id"] for j in jobs}
    assert cli.main(["schedule", "run", "flush-announcements"]) == 0
    assert "skipped: no Slack token" in capsys.readouterr().out
    assert cli.main(["schedule", "run", "nope"]) == 2
    assert "No job 'nope'" in capsys.readouterr().err


def test_scheduled_bump_builds_changed_variants_then_nothing(tmp_path: Path) -> None:
    """The bump job end to end with the real pin bumper (release.commands_pins): the bump
    commits new pins, the changed-only build builds every variant; the next run finds the
    pin current and builds nothing."""

    from tests.support import fixtures_pins as pins
    from tests.support.fakes_nixpkgs import FakeNixpkgs

    branch = "pytorch-2.8-python312"
    work, _ = pins.build_repo(tmp_path / "repo", pins.small_catalog_branches())
    with FakeNixpkgs() as nix:
        nix.add_rev(pins.PIN_A, "2.8.0", {"cudaPackages_12_8"})
        nix.add_rev(pins.NEW, "2.8.4", {"cudaPackages_12_8"})
        nix.channels["nixos-unstable"] = pins.NEW
        ctx = _ctx(
            tmp_path,
            repo_path=work,
            channels_url=nix.channels_url,
            github_api_url=nix.api_url,
            nixpkgs_tarball_url=nix.tarball_url,
            build_command="true",
            build_result_link="README.md",
            http_retries=1,
            schedule_build_backend="local",
        )
        first = schedule.run_now(ctx, "bump")["result"]
        rows = list(__import__("release.builds.run").builds.run.status(ctx, branch))
        second = schedule.run_now(ctx, "bump")["result"]
    # aarch64-linux and darwin recipes are not built on this host: listed as skipped
    assert f"{branch}: {len(rows)} variant(s), " in first and "skipped (other platforms)" in first, first
    assert len(rows) >= 4
    assert {r["state"] for r in rows} == {"succeeded"} and {r["pin"] for r in rows} == {pins.NEW}
    assert "build: none" in second and "current" in second, second


def test_crontab_weekdays_mean_what_cron_means() -> None:
    monday_6 = schedule.crontab_trigger("0 6 * * 1")
    nxt = monday_6.get_next_fire_time(None, datetime(2026, 11, 22, tzinfo=UTC))  # a Sunday
    assert nxt.strftime("%A %H:%M") == "Monday 06:00"
    assert schedule.crontab_dow("0,7") == "sun,sun" and schedule.crontab_dow("1-5") == "mon-fri"
    assert schedule.crontab_dow("*/2") == "*/2"
    nxt = schedule.crontab_trigger("30 2 * * 0").get_next_fire_time(None, datetime(2026, 11, 23, tzinfo=UTC))
    assert nxt.strftime("%A %H:%M") == "Sunday 02:30"


def test_bad_cron_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from config.errors import UsageError

    with pytest.raises(UsageError, match="TORCHBOT_BUMP_CRON"):
        schedule.job_specs(_ctx(tmp_path, bump_cron="every monday"))


def test_the_poll_job_resolves_a_run_whose_torchbot_died_elsewhere(tmp_path: Path) -> None:
    """A `release build` killed outside the bot leaves a run marked running; a long-running
    serve's scheduled poll resolves it (interrupted, lock released), not only a restart."""
    import socket
    import subprocess

    from release.state import Build, BuildRun, state_for

    ctx = _ctx(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    st = state_for(ctx)
    with st.session() as s:
        s.add(BuildRun(run_key="run-dead", branch="main", state="running", owner=f"{socket.gethostname()}:{dead.pid}"))
        s.add(Build(package="pytorch-python313-cpu-avx2", branch="main", state="running", run_key="run-dead",
                    owner=f"{socket.gethostname()}:{dead.pid}"))
        s.commit()
    result = schedule.run_now(ctx, "poll-builds")["result"]
    assert result.startswith("1 interrupted"), result
    with st.session() as s:
        assert s.get(BuildRun, "run-dead").state == "interrupted"
        assert [b.state for b in s.query(Build).filter_by(run_key="run-dead")] == ["interrupted"]
