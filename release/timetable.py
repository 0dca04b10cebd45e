"""The release schedule's timetable: which jobs there are, their triggers (from the settings'
crontab expressions and intervals) and what each does, as data. The schedule (``release.schedule``)
runs them; the dashboard reads their next run times. Imports config only (APScheduler's triggers
inside functions).

- ``bump`` on ``Settings.bump_cron``; ``docs-check`` on ``Settings.docs_cron``;
- ``dashboard-issue`` hourly, ``poll-builds``, ``publish`` and ``flush-announcements`` on their
  intervals, which start at a fixed epoch so every process computes the same run times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from config.errors import UsageError

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
BUMP_GRACE = 6 * 3600
DASHBOARD_SECONDS = 3600  # the dashboard issues are edited hourly, and after each bump and publish
LEADER_KEY = "leader:scheduler"  # the claim of the process that runs the schedule (release.schedule.leader)


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


def spec_of(ctx, job_id: str) -> JobSpec:
    specs = job_specs(ctx)
    for spec in specs:
        if spec.id == job_id:
            return spec
    known = ", ".join(s.id for s in specs)
    raise UsageError(f"No job '{job_id}'. Jobs: {known}.")


# What each kind of job would do, as the command that previews it (`schedule run JOB --dry-run`).
PREVIEWS = {
    "bump": "torchbot release bump-pins --all --dry-run --diff  (then a build of what moved)",
    "publish": "torchbot release publish --dry-run",
    "docs-check": "torchbot release docs --check  (drift is posted to the announce channel)",
    "poll-builds": "torchbot release status",
    "flush-announcements": "(sends the pending release announcements; nothing to preview)",
    "dashboard-issue": "torchbot dashboard --issue --dry-run",
}


