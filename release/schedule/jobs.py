"""The release schedule (APScheduler 3, jobs persisted in the state DB).

Jobs:
- ``bump`` on ``Settings.bump_cron``: every branch (local and ``origin/*``) and pin group of every
  repository, each with its own outcome (vLLM branches only with ``bump_vllm_branches``):
  ``release.pins.commands.plan_bump(ctx, "all", None).apply()``, delivered as
  ``TORCHBOT_BUMP_DELIVERY`` says; then a ``--changed-only`` build of each bump as it was
  delivered (``release.schedule.delivered``: a pull request's head, the pushed branch, or a
  local build) with ``Settings.schedule_backend()``
  (``TORCHBOT_SCHEDULE_BUILD_BACKEND``: github | local | none; unset, github when a GitHub
  token and repository are configured, otherwise none: the bump is made and reported and
  nothing is built on the bot's own host) (skipped gracefully when the pins module or the
  repository is absent);
- ``docs-check`` on ``Settings.docs_cron`` (weekly): ``release docs --check``; drift goes to the
  announce channel;
- ``poll-builds`` (GitHub runs of the github backend; interrupted local builds),
  ``publish`` and ``flush-announcements`` on their intervals.

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
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from config.errors import TorchbotError, UsageError

log = logging.getLogger("torchbot.schedule")
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
BUMP_GRACE = 6 * 3600
JOBS_TABLE = "apscheduler_jobs"
DASHBOARD_SECONDS = 3600  # the dashboard issues are edited hourly, and after each bump and publish

class _Jobs:
    """The Context jobs run with. APScheduler stores a job as a reference to ``run_job``, so the
    context cannot travel with it; ``start_scheduler``, ``run_pending`` and ``run_now`` set it."""

    ctx = None
stats: dict[str, Counter] = {"ran": Counter(), "skipped": Counter()}
_stats_lock = threading.Lock()


@dataclass(frozen=True)
class JobSpec:
    id: str
    kind: str
    arg: str | None
    trigger: Any
    grace: int
    description: str


_DOW = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")


def crontab_dow(field: str) -> str:
    """A crontab day-of-week field with day names: crontab counts 0/7 = Sunday, but
    APScheduler 3's ``from_crontab`` passes numbers through Monday-based (``1`` would mean
    Tuesday). Names mean the same to both."""
    if field == "*" or field.startswith("*/"):
        return field
    return re.sub(r"(?<![*/])\b([0-7])\b", lambda m: _DOW[int(m.group(1))], field)


def crontab_trigger(expr: str):
    """A CronTrigger (UTC) from a standard 5-field crontab expression."""
    from apscheduler.triggers.cron import CronTrigger

    values = expr.split()
    if len(values) != 5:
        raise ValueError(f"expected 5 fields, got {len(values)}")
    minute, hour, day, month, dow = values
    return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=crontab_dow(dow),
                       timezone=UTC)


def _cron(variable: str, expr: str):
    try:
        return crontab_trigger(expr)
    except ValueError as err:
        raise UsageError(f"{variable} '{expr}' is not a crontab expression: {err}.") from None


def job_specs(ctx) -> list[JobSpec]:
    from apscheduler.triggers.interval import IntervalTrigger

    s = ctx.settings
    specs: list[JobSpec] = []
    cron = _cron("TORCHBOT_BUMP_CRON", s.bump_cron)
    specs.append(JobSpec("bump", "bump", None, cron, BUMP_GRACE,
                         "bump every branch and pin group of every repository (TORCHBOT_BUMP_DELIVERY)"))
    docs_cron = _cron("TORCHBOT_DOCS_CRON", s.docs_cron)
    specs.append(JobSpec("docs-check", "docs-check", None, docs_cron, BUMP_GRACE,
                         "check the README cross-branch tables; drift goes to the announce channel"))
    for kind, seconds, what in (
        ("dashboard-issue", DASHBOARD_SECONDS, "edit the dashboard issues on GitHub (act on ticked boxes)"),
        ("poll-builds", s.poll_interval_seconds, "follow running builds"),
        ("publish", s.publish_interval_seconds, "publish succeeded variants"),
        ("flush-announcements", s.flush_interval_seconds, "send pending release announcements"),
    ):
        every = max(1, int(seconds))
        trig = IntervalTrigger(seconds=every, start_date=EPOCH, timezone=UTC)
        specs.append(JobSpec(kind, kind, None, trig, every, what))
    return specs


def _spec(ctx, job_id: str) -> JobSpec:
    specs = job_specs(ctx)
    for spec in specs:
        if spec.id == job_id:
            return spec
    known = ", ".join(s.id for s in specs)
    raise UsageError(f"No job '{job_id}'. Jobs: {known}.")


# ---------------------------------------------------------------------------------------
# Job bodies (each returns a one-line result)


def _job_bump(ctx, _arg) -> str:
    """Every branch of every repository, every pin group (release.pins.commands.plan_every_branch),
    delivered as TORCHBOT_BUMP_DELIVERY says; then the builds of what moved. One line: the counts,
    the held branches and why, where the bumps went."""
    try:
        from release.pins.commands import plan_bump
    except ImportError:
        return "skipped: pin bumps are not available (release.pins.commands missing)"
    if ctx.settings.repo_path is None:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    result = plan_bump(ctx, "all", None, force=ctx.settings.bump_vllm_branches).apply()
    from release.pins.weekly import counts

    try:
        _record_outcomes(ctx, result)
    except Exception as err:  # noqa: BLE001  the bump is done; the dashboard's copy waits for the next run
        log.warning("bump outcomes not recorded: %s", getattr(err, "message", err))
    parts = [counts(result.outcomes)]
    held = [o for o in result.outcomes if o.kind == "held"]
    if held:  # grouped by reason: a delivery that failed for a whole repository is said once
        why: dict[str, list[str]] = {}
        for o in held:
            why.setdefault(o.reason.rsplit("not delivered: ", 1)[-1], []).append(f"{o.repo} {o.branch} ({o.group})")
        parts.append("held: " + "; ".join(f"{', '.join(names)}: {reason}" for reason, names in why.items()))
    prs = [d for d in result.delivered if d.head]
    if prs:
        parts.append(f"{len(prs)} pull request(s): " + ", ".join(d.url or d.head for d in prs))
    elif result.plan.mode == "local" and result.delivered:
        parts.append(f"committed locally ({result.plan.why_local}): nothing left this machine")
    elif result.delivered:
        parts.append(f"pushed: {', '.join(d.branch for d in result.delivered)}")
    parts.append(_build_after_bump(ctx, result.delivered))
    return "; ".join(parts)


def _record_outcomes(ctx, result) -> None:
    """The run's outcomes in the state DB (``bump_outcomes``), with the pull request each went out as."""
    from release.state import state_for

    prs = {(d.repo, d.branch): d for d in result.delivered if d.head}
    rows = []
    for p in result.plan.plans:
        for o in p.outcomes:
            d = prs.get((str(p.repo_path), o.branch))
            rows.append({**o.to_dict(), "repo": str(p.repo_path), "pr_url": d.url if d else None,
                         "pr_number": d.number if d else None, "head": d.head if d else None})
    state_for(ctx).record_bump_outcomes([str(p.repo_path) for p in result.plan.plans], rows)


def _build_after_bump(ctx, delivered) -> str:
    """The changed-only builds of the bumps as they were delivered (Settings.schedule_backend();
    release.schedule.delivered): a pull request at its head, a pushed branch at its remote head."""
    backend = ctx.settings.schedule_backend()
    if backend == "none":
        explicit = ctx.settings.schedule_build_backend or ctx.settings.build_backend
        why = ("TORCHBOT_SCHEDULE_BUILD_BACKEND=none" if explicit
               else "no GitHub token configured and TORCHBOT_SCHEDULE_BUILD_BACKEND unset")
        return f"build: none ({why}: the schedule builds nothing by itself)"
    if not delivered:
        return "build: none"
    from release.schedule.delivered import build_after_bump

    return "build: " + "; ".join(build_after_bump(ctx, delivered, backend))


def _job_poll(ctx, _arg) -> str:
    from release.builds.recover import reconcile
    from release.state import state_for

    # Runs whose torchbot died (a `release build` killed elsewhere): processes stopped, spooled
    # results written, worktrees removed; then builds recorded without a run.
    n = len(reconcile(ctx)) + state_for(ctx).mark_interrupted()
    try:
        from release.builds.github import poll_active
    except ImportError:
        return f"{n} interrupted"
    if ctx.settings.github_token is None:
        return f"{n} interrupted; github polling off (no TORCHBOT_GITHUB_TOKEN)"
    changed = poll_active(ctx)
    return f"{n} interrupted; {changed} github build(s) changed state"


def _job_publish(ctx, _arg) -> str:
    if ctx.settings.repo_path is None:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    from release.publishing.publish import held, publish_pending

    rows = publish_pending(ctx, None)
    ok = sum(r["state"] == "published" for r in rows)
    skipped = sum(r["state"] == "skipped" for r in rows)
    waiting = len(held(ctx, None))
    return f"{ok} published, {len(rows) - ok - skipped} failed" + (
        f", {skipped} taken by another torchbot" if skipped else "") + (
        f", {waiting} not on their branch yet (an open pull request's builds, or recipes changed since)"
        if waiting else "")


def _job_flush(ctx, _arg) -> str:
    s = ctx.settings
    if s.slack_bot_token is None or not s.announce_channel:
        return "skipped: no Slack token or announce channel"
    from release.publishing.announce import flush

    out = flush(ctx)
    return f"{out['sent']} sent, {out['updated']} edited, {out['recovered']} recovered, {out['pending']} pending" + (
        f" ({out['error']})" if out["error"] else "")


def _job_docs(ctx, _arg) -> str:
    """``release docs --check`` (with the torchvision pairing when configured); drift is posted
    to the announce channel as one message listing the stale rows."""
    if ctx.settings.repo_path is None:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    from release.docs.commands import docs_check

    result = docs_check(ctx)
    if not result.drift:
        return f"clean: {len(result.checked)} READMEs match the repository"
    line = f"{len(result.stale)} stale rows, {len(result.pairing)} torchvision mismatches"
    s = ctx.settings
    if s.slack_bot_token is None or not s.announce_channel:
        return f"{line}; not posted (no Slack token or announce channel)"
    from release.adapters.slack import make_client
    from release.docs.commands import drift_message

    make_client(s).chat_postMessage(channel=s.announce_channel, text=drift_message(result))
    return f"{line}; posted to {s.announce_channel}"


def _dashboard():
    """The dashboard's command layer, registered by name (it reads the schedule's triggers)."""
    import importlib

    return importlib.import_module("release.dashboard.commands")


def _job_dashboard(ctx, _arg) -> str:
    if ctx.settings.github_token is None:
        return "skipped: no TORCHBOT_GITHUB_TOKEN"
    if not ctx.repositories:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    return "; ".join(_dashboard().sync_issues(ctx, acting=True)) or "nothing to do"  # the leader's job


JOB_KINDS = {
    "dashboard-issue": _job_dashboard,
    "docs-check": _job_docs,
    "bump": _job_bump,
    "poll-builds": _job_poll,
    "publish": _job_publish,
    "flush-announcements": _job_flush,
}


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
        _dashboard().after_operation(ctx, job_id)
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


# What each kind of job would do, as the command that previews it (`schedule run JOB --dry-run`).
PREVIEWS = {
    "bump": "torchbot release bump-pins --all --dry-run --diff  (then a build of what moved)",
    "publish": "torchbot release publish --dry-run",
    "docs-check": "torchbot release docs --check  (drift is posted to the announce channel)",
    "poll-builds": "torchbot release status",
    "dashboard-issue": "torchbot dashboard --issue --dry-run",
    "flush-announcements": "(sends the pending release announcements; nothing to preview)",
}


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
