"""The state store on a real PostgreSQL server (the `torchbot[postgres]` option): the same
tables and locks as on SQLite, and two torchbot processes with schedulers on one database
run each scheduled run exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from release.state import open_state
from tests.support.fixtures_postgres import postgres  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[3]

# A torchbot schedule in its own process: it writes its counts to argv[1] as they change and
# stops when argv[2] exists (the test says when it has seen enough), or after 300 s.
SCHEDULER = """
import json, os, sys, time
from pathlib import Path
from release.schedule import jobs as schedule
from release.context import Context
from config.settings import load_settings

stats_file, stop_file = Path(sys.argv[1]), Path(sys.argv[2])
ctx = Context(load_settings(), use_repo=False)
sched = schedule.start_scheduler(ctx)

def counts():
    with schedule._stats_lock:
        return {"ran": dict(schedule.stats["ran"]), "skipped": dict(schedule.stats["skipped"])}

end = time.monotonic() + 300
while not stop_file.exists() and time.monotonic() < end:
    tmp = stats_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(counts()))
    os.replace(tmp, stats_file)
    time.sleep(0.1)
sched.shutdown()
print(json.dumps(counts()))
"""


JOBS = ("poll-builds", "publish", "flush-announcements")


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
    stop = tmp_path / "stop"
    stats = [tmp_path / f"stats-{i}.json" for i in range(2)]
    logs = [(open(f.with_suffix(".out"), "w"), open(f.with_suffix(".err"), "w")) for f in stats]  # noqa: SIM115
    procs = [subprocess.Popen([sys.executable, "-c", SCHEDULER, str(f), str(stop)], cwd=tmp_path,
                              env={**env, "PYTHONPATH": str(ROOT)}, stdout=out, stderr=err, text=True)
             for f, (out, err) in zip(stats, logs, strict=True)]

    def enough() -> bool:
        """Both processes have claimed runs, each job ran 3 times, and the loser stood down 3 times
        (however long two process starts take on a loaded machine)."""
        assert all(p.poll() is None for p in procs), [f.with_suffix(".err").read_text()[-2000:] for f in stats]
        runs = open_state(url).job_runs()
        skipped = sum(sum(json.loads(f.read_text())["skipped"].values()) for f in stats if f.exists())
        return (len({r.owner for r in runs}) == 2 and skipped >= 3
                and all(sum(r.job_id == job for r in runs) >= 3 for job in JOBS))

    try:
        deadline = time.monotonic() + 240
        while not enough():
            assert time.monotonic() < deadline, "the two schedulers did not both take part within 240 s"
            time.sleep(0.2)
    finally:
        stop.touch()
    outs = []
    for p, f, files in zip(procs, stats, logs, strict=True):
        p.wait(timeout=90)
        for fh in files:
            fh.close()
        assert p.returncode == 0, f.with_suffix(".err").read_text()[-2000:]
        outs.append(json.loads(f.with_suffix(".out").read_text().strip().splitlines()[-1]))
    runs = open_state(url).job_runs()
    for job in JOBS:
        slots = [r.slot for r in runs if r.job_id == job]
        assert len(slots) >= 3, slots  # it ran, about once a second
        assert len(slots) == len(set(slots))  # never the same run twice
        assert sum(o["ran"].get(job, 0) for o in outs) == len(slots)
    assert sum(sum(o["skipped"].values()) for o in outs) >= 3  # the other process stood down
    assert len({r.owner for r in runs}) == 2  # both processes took part
