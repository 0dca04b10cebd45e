"""The state store on a real PostgreSQL server (the `torchbot[postgres]` option): the same
tables and locks as on SQLite, and two torchbot processes with schedulers on one database
run each scheduled run exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from release.state import open_state
from tests.fixtures_postgres import postgres  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]

SCHEDULER = """
import json, sys, time
from release.schedule import jobs as schedule
from release.context import Context
from config.settings import load_settings

ctx = Context(load_settings(), use_repo=False)
sched = schedule.start_scheduler(ctx)
time.sleep(float(sys.argv[1]))
sched.shutdown()
print(json.dumps({"ran": dict(schedule.stats["ran"]), "skipped": dict(schedule.stats["skipped"])}))
"""


def test_plain_postgresql_url_uses_psycopg_and_locks_runs(postgres):  # noqa: F811
    url = postgres.new_database().replace("postgresql+psycopg://", "postgresql://")
    from config.settings import Settings

    st = open_state(Settings(state_db=url, _env_file=None).state_db)
    assert st.engine.dialect.driver == "psycopg"
    assert st.claim_run("publish", "2030-01-01T00:00:00") is not None
    assert st.claim_run("publish", "2030-01-01T00:00:00") is None  # the unique row is the lock
    assert [r.slot for r in st.job_runs("publish")] == ["2030-01-01T00:00:00"]


def test_two_torchbot_processes_on_one_postgres_run_each_run_once(postgres, tmp_path):  # noqa: F811
    url = postgres.new_database()
    env = dict(os.environ, TORCHBOT_STATE_DB=url, TORCHBOT_POLL_INTERVAL_SECONDS="1",
               TORCHBOT_PUBLISH_INTERVAL_SECONDS="1", TORCHBOT_FLUSH_INTERVAL_SECONDS="1",
               TORCHBOT_REPO_PATH="", TORCHBOT_LOG_DIR=str(tmp_path / "logs"))
    env.pop("TORCHBOT_SLACK_BOT_TOKEN", None)
    procs = [subprocess.Popen([sys.executable, "-c", SCHEDULER, "4.5"], cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    runs = open_state(url).job_runs()
    for job in ("poll-builds", "publish", "flush-announcements"):
        slots = [r.slot for r in runs if r.job_id == job]
        assert len(slots) >= 3, slots  # it ran, about once a second
        assert len(slots) == len(set(slots))  # never the same run twice
        assert sum(o["ran"].get(job, 0) for o in outs) == len(slots)
    assert sum(sum(o["skipped"].values()) for o in outs) >= 3  # the other process stood down
    assert len({r.owner for r in runs}) == 2  # both processes took part
