"""The release schedule's lifecycle (APScheduler 3, jobs persisted in the state DB): the jobs of
the timetable (``release.timetable``) run their bodies (``release.schedule.bodies``) here.

Choices, deliberately:
- ``coalesce=True``: after downtime a job runs once, not once per missed time;
- ``max_instances=1``: a slow bump or publish never overlaps itself in one process;
- ``misfire_grace_time``: one period for interval jobs (a later run supersedes an older one),
  6 h for bumps (a weekly bump missed by a short outage still happens the same day; one
  missed by more waits for next week rather than firing at a random hour);
- interval triggers start at a fixed epoch, so every process computes the same run times;
  each run first inserts a (job, scheduled time) row into ``job_runs`` (unique): two torchbot
  processes on one DB never run the same run twice, the loser skips.

``start_scheduler(ctx)`` (for ``torchbot serve``) returns a started BackgroundScheduler;
``run_pending(ctx)`` runs what is due once and returns; ``run_now(ctx, job_id)`` runs a job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from config.errors import TorchbotError
from release.schedule.bodies import JOB_KINDS
from release.timetable import (  # noqa: F401  (re-exported: the schedule's names for its timetable)
    BUMP_GRACE,
    DASHBOARD_SECONDS,
    EPOCH,
    PREVIEWS,
    JobSpec,
    crontab_dow,
    crontab_trigger,
    job_specs,
)
from release.timetable import spec_of as _spec

log = logging.getLogger("torchbot.schedule")
JOBS_TABLE = "apscheduler_jobs"


class _Jobs:
    """The Context jobs run with. APScheduler stores a job as a reference to ``run_job``, so the
    context cannot travel with it; ``start_scheduler``, ``run_pending`` and ``run_now`` set it."""

    ctx = None
stats: dict[str, Counter] = {"ran": Counter(), "skipped": Counter()}
_stats_lock = threading.Lock()


# ---------------------------------------------------------------------------------------
# Running one run under the DB lock


def latest_fire_time(trigger, now: datetime, lookback: timedelta) -> datetime | None:
    """The trigger's last fire time in (now - lookback, now]."""
    t = trigger.get_next_fire_time(None, now - lookback)
    last = None
    while t is not None and t <= now:
        last = t
        t = trigger.get_next_fire_time(t, t + timedelta(microseconds=1))
    return last


def run_job(job_id: str, slot: str | None = None, ctx=None) -> str:
    """What APScheduler calls (by reference ``release.schedule.jobs:run_job``). Claims the run's
    (job, scheduled time) row first; returns the result line (or why it was skipped)."""
    from release.state import state_for

    ctx = ctx or _Jobs.ctx or _default_ctx()
    spec = _spec(ctx, job_id)
    if slot is None:
        now = datetime.now(UTC)
        fire = latest_fire_time(spec.trigger, now, timedelta(seconds=spec.grace + 300))
        slot = fire.isoformat() if fire else "manual:" + now.isoformat()
    st = state_for(ctx)
    run_id = st.claim_run(job_id, slot)
    if run_id is None:
        with _stats_lock:
            stats["skipped"][job_id] += 1
        return f"skipped: run {slot} of {job_id} already claimed by another process"
    with _stats_lock:
        stats["ran"][job_id] += 1
    try:
        result = JOB_KINDS[spec.kind](ctx, spec.arg)
    except TorchbotError as err:
        result = f"error: {err.message}"
    except Exception as err:  # a job must never kill the scheduler
        log.exception("job %s failed", job_id)
        result = f"error: {type(err).__name__}: {err}"
    st.finish_run(run_id, result)
    if spec.kind in ("bump", "publish"):
        from release.dashboard.commands import after_operation

        after_operation(ctx, job_id)
    return result


def _default_ctx():
    from release.context import Context

    return Context()


# ---------------------------------------------------------------------------------------
# The scheduler


def _make(ctx, store_only: bool = False):
    """A scheduler over the state DB's job store. ``store_only``: one that never runs jobs
    (for listing and editing the store; APScheduler 3 may process due jobs while a paused
    scheduler shuts down)."""
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    from release.state import state_for

    class _StoreOnly(BackgroundScheduler):
        def _process_jobs(self):
            return None

    state_for(ctx)  # our tables exist
    store = SQLAlchemyJobStore(url=ctx.settings.state_db, tablename=JOBS_TABLE)
    _create_store_table(store)
    cls = _StoreOnly if store_only else BackgroundScheduler
    return cls(
        jobstores={"default": store},
        executors={"default": {"type": "threadpool", "max_workers": 4}},
        job_defaults={"coalesce": True, "max_instances": 1},
        timezone=UTC,
    )


def _create_store_table(store) -> None:
    """The job table, created once even when two processes start together on one
    PostgreSQL database (the loser of that race sees the winner's table)."""
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(3):
        try:
            store.jobs_t.create(store.engine, checkfirst=True)
            return
        except SQLAlchemyError:
            if attempt == 2:
                raise
            time.sleep(0.2)


def sync_jobs(sched, ctx) -> None:
    """Make the stored jobs match the settings and catalog. A stored job whose trigger is
    unchanged is kept as is, so a run missed while torchbot was down is still due."""
    specs = {s.id: s for s in job_specs(ctx)}
    stored = {j.id: j for j in sched.get_jobs()}
    for job_id in stored:
        if job_id not in specs:
            sched.remove_job(job_id)
    for spec in specs.values():
        job = stored.get(spec.id)
        if job is not None and str(job.trigger) == str(spec.trigger) and job.misfire_grace_time == spec.grace:
            continue
        from apscheduler.jobstores.base import ConflictingIdError

        for attempt in (1, 2):  # another process starting at the same time may insert it first
            try:
                sched.add_job(
                    "release.schedule.jobs:run_job", spec.trigger, args=[spec.id], id=spec.id, name=spec.description,
                    replace_existing=True, coalesce=True, max_instances=1, misfire_grace_time=spec.grace,
                )
                break
            except ConflictingIdError:
                if attempt == 2:
                    raise


def start_scheduler(ctx):
    """A running BackgroundScheduler for ``torchbot serve``; call ``.shutdown()`` to stop."""
    _Jobs.ctx = ctx
    from release.state import state_for

    state_for(ctx).mark_interrupted()  # builds a killed torchbot left behind
    sched = _make(ctx)
    sched.start(paused=True)
    sync_jobs(sched, ctx)
    sched.resume()
    return sched


def list_jobs(ctx) -> list[dict]:
    sched = _make(ctx, store_only=True)
    sched.start(paused=True)
    try:
        sync_jobs(sched, ctx)
        return [
            {"id": j.id, "description": j.name, "trigger": str(j.trigger),
             "next_run": j.next_run_time.isoformat() if j.next_run_time else None,
             "misfire_grace_time": j.misfire_grace_time}
            for j in sorted(sched.get_jobs(), key=lambda j: (j.next_run_time is None, j.next_run_time, j.id))
        ]
    finally:
        sched.shutdown(wait=False)


def preview(ctx, job_id: str) -> dict:
    """What ``run_now`` would run, run nothing: the job and the command that previews it."""
    spec = _spec(ctx, job_id)
    return {"job": spec.id, "description": spec.description, "dry_run": True,
            "preview": PREVIEWS.get(spec.kind, "(nothing to preview)")}


def run_now(ctx, job_id: str) -> dict:
    _Jobs.ctx = _Jobs.ctx or ctx
    spec = _spec(ctx, job_id)
    now = datetime.now(UTC)
    return {"job": spec.id, "result": run_job(spec.id, "manual:" + now.isoformat(), ctx=ctx)}


def run_pending(ctx, now: datetime | None = None) -> list[dict]:
    """Run every due job once (coalesced, within its grace time), advance its next run
    time in the store, and return what ran."""
    _Jobs.ctx = _Jobs.ctx or ctx
    now = now or datetime.now(UTC)
    sched = _make(ctx, store_only=True)
    sched.start(paused=True)
    out: list[dict] = []
    try:
        sync_jobs(sched, ctx)
        for job in sched.get_jobs():
            if job.next_run_time is None or job.next_run_time > now:
                continue
            run_times = job._get_run_times(now) or [job.next_run_time]
            latest = run_times[-1]
            late = (now - latest).total_seconds()
            if job.misfire_grace_time is not None and late > job.misfire_grace_time:
                result = f"missed: {latest.isoformat()} is older than its grace time"
            else:
                result = run_job(job.id, latest.isoformat(), ctx=ctx)
            nxt = job.trigger.get_next_fire_time(latest, now)
            if nxt is None:
                sched.remove_job(job.id)
            else:
                sched.modify_job(job.id, next_run_time=nxt)
            out.append({"job": job.id, "scheduled": latest.isoformat(), "missed_runs": len(run_times) - 1,
                        "result": result})
    finally:
        sched.shutdown(wait=False)
    return out
