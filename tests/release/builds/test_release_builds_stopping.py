"""Local builds as they stop: a run stays live for a restart check until its results are
recorded; a timed-out build's whole process group is gone before it is reported; a Ctrl-C
stops the builds that had just started too; and no build sees torchbot's secrets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.progress import Progress
from release.adapters.flox import build_env, group_alive, kill_group, start_build
from release.builds import run as builds
from release.builds.local import ACTIVE_RUNS
from release.builds.recover import reconcile
from release.state import BuildRun, open_state
from tests.support import fixtures_builds as fx
from tests.support.waiting import wait_for


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return fx.make_repo(tmp_path)


def test_a_run_stays_live_for_a_restart_check_until_its_results_are_recorded(tmp_path: Path, repo: Path) -> None:
    ctx = fx.context(tmp_path, build_command="true", build_result_link="README.md")
    seen: dict[str, object] = {}

    class Watching(Progress):
        def end(self, message: str = "") -> None:  # told once every result is recorded
            with open_state(ctx.settings.state_db).session() as s:
                (run,) = s.query(BuildRun).all()
                seen["key"], seen["state"] = run.run_key, run.state
            seen["live"] = seen["key"] in ACTIVE_RUNS
            seen["resolved"] = reconcile(ctx)  # a restart check at that moment
            super().end(message)

    rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo), progress=Watching())
    assert seen["live"] is True and seen["state"] == "finished" and seen["resolved"] == []
    assert rows[0]["state"] == "succeeded" and seen["key"] not in ACTIVE_RUNS


def test_stopping_a_build_waits_until_its_whole_process_group_is_gone(tmp_path: Path) -> None:
    # the shell leader dies at SIGTERM; its child ignores SIGTERM and lives on in the group
    command = f"sh -c 'trap \"\" TERM; touch {tmp_path}/child; sleep 60' & wait"
    with (tmp_path / "log").open("w") as log:
        proc = start_build(command, tmp_path, log, None)
        wait_for((tmp_path / "child").exists, "the child to start")
        assert kill_group(proc, grace=0.5) is True
        assert not group_alive(proc.pid)


def test_a_timed_out_build_leaves_no_process_of_its_group(tmp_path: Path, repo: Path) -> None:
    starts: list[int] = []
    ctx = fx.context(tmp_path, build_command=f"sh -c 'trap \"\" TERM; sleep 60' & echo $$ > {tmp_path}/pgid; wait",
                     build_timeout=0.5)
    rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo))
    starts.append(int((tmp_path / "pgid").read_text()))
    assert rows[0]["state"] == "failed" and "timed out" in rows[0]["message"]
    assert not group_alive(starts[0])


def test_ctrl_c_stops_the_builds_that_had_just_started(tmp_path: Path, repo: Path) -> None:
    first, second = fx.OK[0], fx.OK[1]
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx = fx.context(tmp_path, build_command=f"echo $$ > {marks}/started-{{package}}; sleep 20; "
                                             f"touch {marks}/finished-{{package}}",
                     build_result_link="README.md")

    class CtrlC(Progress):
        def started(self, item: str) -> None:
            super().started(item)
            if item == second:  # the first build is running; the loop has not heard of it yet
                wait_for((marks / f"started-{first}").exists, "the first build to start")
                raise KeyboardInterrupt

    plan = builds.prepare(ctx, fx.BRANCH, [first, second], repo=repo)
    with pytest.raises(KeyboardInterrupt):
        builds.run_local(ctx, plan, jobs=2, progress=CtrlC())
    pgid = int((marks / f"started-{first}").read_text())
    wait_for(lambda: not group_alive(pgid), "the first build's group to be stopped")
    assert not (marks / f"finished-{first}").exists()
    assert not (marks / f"started-{second}").exists()  # never started


SECRETS = {"TORCHBOT_SLACK_BOT_TOKEN": "xoxb-secret", "TORCHBOT_GITHUB_TOKEN": "ghp-secret",
           "TORCHBOT_STATE_DB": "postgresql://bot:pw-secret@db/torchbot", "SLACK_SIGNING_SECRET": "sig-secret",
           "GITHUB_TOKEN": "ghp-secret2", "GH_TOKEN": "ghp-secret3", "AWS_SECRET_ACCESS_KEY": "aws-secret",
           "PGPASSWORD": "pg-secret", "DATABASE_URL": "postgresql://u:db-secret@h/d"}


def test_a_build_sees_none_of_torchbots_secrets(tmp_path: Path, repo: Path, monkeypatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NIX_PATH", "nixpkgs=/somewhere")
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", "flox-own")  # flox's own: it needs it
    out = tmp_path / "env.txt"
    ctx = fx.context(tmp_path, build_command=f"env > {out}", build_result_link="README.md")
    rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo))
    assert rows[0]["state"] == "succeeded"
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert not set(SECRETS) & set(env)
    assert not [v for v in SECRETS.values() if v in out.read_text()]
    assert env["PATH"] == os.environ["PATH"] and env["NIX_PATH"] == "nixpkgs=/somewhere"
    assert env["FLOX_FLOXHUB_TOKEN"] == "flox-own" and len(env["TORCHBOT_BUILD_RUN"]) == 32  # the run's mark


def test_build_env_keeps_what_nix_needs_and_drops_secrets() -> None:
    env = build_env({"HOME": "/h", "NIX_SSL_CERT_FILE": "/c", "TORCHBOT_X": "1", "slack_app_token": "t",
                     "MY_API_KEY": "k", "LANG": "C"}, mark="run1")
    assert env == {"HOME": "/h", "NIX_SSL_CERT_FILE": "/c", "LANG": "C", "TORCHBOT_BUILD_RUN": "run1"}
