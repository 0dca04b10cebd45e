"""No result lost to the state store: a real PostgreSQL server stopped while builds run and
started again. The result waits in memory and in the spool file beside the logs, and is
written when the server answers; a torchbot killed during the outage leaves the spool, and the
next start records it. The builds wait on gate files the test creates, so every step follows
an event, never a sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from config.progress import Progress
from release.builds import run as builds
from release.builds.commands import plan_build
from release.state import Build, BuildLock, open_state
from tests.support import fixtures_builds as fx
from tests.support.fixtures_postgres import PostgresServer
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]


def gated(gate: Path) -> str:
    """A build command that says it started, then waits for the test's go."""
    return (f"touch {gate}/{{package}}.started; while [ ! -e {gate}/go ]; do sleep 0.05; done; "
            "echo ok > result-{package}")


@pytest.fixture
def server():
    pg = PostgresServer().start()
    try:
        yield pg
    finally:
        pg.stop()


def spooled(log_dir: Path) -> list[str]:
    return [line for f in log_dir.glob("*/spool-*.jsonl") for line in f.read_text().splitlines()]


def test_a_result_finished_while_postgres_is_down_is_recorded_when_it_is_back(tmp_path: Path, server) -> None:
    repo = fx.make_repo(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    url = server.new_database()
    ctx = fx.context(tmp_path, state_db=url, build_command=gated(gate), state_wait_seconds=120)
    plan = plan_build(ctx, fx.BRANCH, fx.OK, repo=repo, jobs=2)  # what a confirmed /build runs
    results: list = []
    heard: list = []
    run = threading.Thread(target=lambda: results.append(plan.apply(Progress(heard.append, verb="built"))))
    run.start()
    wait_for(lambda: all((gate / f"{p}.started").exists() for p in fx.OK), "both builds to start")
    wait_for(lambda: {b.state for b in open_state(url).builds(fx.BRANCH)} == {"running"}, "the running rows")
    server.halt()
    (gate / "go").touch()
    lines = wait_for(lambda: [x for x in spooled(tmp_path / "logs") if '"succeeded"' in x] or None,
                     "the results to reach the spool")
    assert len(lines) >= 1 and run.is_alive()  # the run holds them until the store answers
    server.resume()
    run.join(timeout=120)
    assert not run.is_alive()
    (result,) = results  # what the job's thread shows
    assert {r["package"]: r["state"] for r in result.rows} == dict.fromkeys(fx.OK, "succeeded")
    assert result.ok and result.text().endswith("2 succeeded")
    assert heard[-1].kind == "end" and heard[-1].snapshot.line() == "2/2 built"
    st = open_state(url)
    assert {b.package: b.state for b in st.builds(fx.BRANCH)} == dict.fromkeys(fx.OK, "succeeded")
    with st.session() as s:
        assert s.query(BuildLock).count() == 0
    assert spooled(tmp_path / "logs") == []  # written, so gone


def test_a_torchbot_killed_during_the_outage_leaves_its_results_to_the_next_start(tmp_path: Path, server) -> None:
    repo = fx.make_repo(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    url = server.new_database()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(PYTHONPATH=str(ROOT), TORCHBOT_STATE_DB=url, TORCHBOT_LOG_DIR=str(tmp_path / "logs"),
               TORCHBOT_BUILD_COMMAND=gated(gate), TORCHBOT_STATE_WAIT_SECONDS="600")
    proc = subprocess.Popen([sys.executable, "-m", "bot", "release", "build", "--repo", str(repo), "--branch",
                             fx.BRANCH, "--variant", fx.OK[0]], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for((gate / f"{fx.OK[0]}.started").exists, "the build to start")
        wait_for(lambda: [b.state for b in open_state(url).builds(fx.BRANCH)] == ["running"], "the running row")
        server.halt()
        (gate / "go").touch()
        wait_for(lambda: [x for x in spooled(tmp_path / "logs") if '"succeeded"' in x] or None,
                 "the result to reach the spool")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    server.resume()
    ctx = fx.context(tmp_path, state_db=url)
    rows = builds.status(ctx, fx.BRANCH)  # a start: dead runs are resolved, the spool written
    assert [(r["package"], r["state"]) for r in rows] == [(fx.OK[0], "succeeded")]
    assert spooled(tmp_path / "logs") == []
    with open_state(url).session() as s:
        assert s.query(BuildLock).count() == 0
        assert s.query(Build).one().out_path.endswith(f"/result-{fx.OK[0]}")  # what the build made


def test_two_runs_of_one_variant_on_postgres_build_it_once(tmp_path: Path, server) -> None:
    repo = fx.make_repo(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    url = server.new_database()
    ctx = fx.context(tmp_path, state_db=url, build_command=gated(gate))
    first_plan = builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo)
    second_plan = builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo)  # both planned before either runs
    first: list = []
    run = threading.Thread(target=lambda: first.extend(builds.run_local(ctx, first_plan)))
    run.start()
    wait_for((gate / f"{fx.OK[0]}.started").exists, "the first build to start")
    second = builds.run_local(ctx, second_plan)
    assert [(r["package"], r["state"]) for r in second] == [(fx.OK[0], "skipped")]
    assert second[0]["message"].startswith("already building since")
    assert builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo).items == []  # and the plan says so too
    (gate / "go").touch()
    run.join(timeout=120)
    assert [r["state"] for r in first] == ["succeeded"]
    assert [b.state for b in open_state(url).builds(fx.BRANCH, latest_only=False)] == ["succeeded"]
