"""`torchbot schedule list|run JOB|run-pending` (registrar; APScheduler is imported inside
the handlers)."""

from __future__ import annotations

import json


def _list(args, ctx) -> int:
    from release.schedule.jobs import list_jobs

    jobs = list_jobs(ctx)
    if args.json:
        print(json.dumps(jobs, indent=2))
        return 0
    for j in jobs:
        print(f"{j['id']:<40} next {j['next_run'] or 'paused':<27} {j['trigger']}  ({j['description']})")
    return 0


def _run(args, ctx) -> int:
    from release.schedule.jobs import preview, run_now

    if args.dry_run:
        out = preview(ctx, args.job)
        print(json.dumps(out, indent=2) if args.json else
              f"{out['job']}: would {out['description']}; nothing was run.\npreview: {out['preview']}")
        return 0

    out = run_now(ctx, args.job)
    print(json.dumps(out, indent=2) if args.json else f"{out['job']}: {out['result']}")
    return 1 if out["result"].startswith("error") else 0


def _run_pending(args, ctx) -> int:
    from release.schedule.jobs import run_pending

    ran = run_pending(ctx)
    if args.json:
        print(json.dumps(ran, indent=2))
    elif not ran:
        print("Nothing is due.")
    else:
        for r in ran:
            extra = f" (coalesced {r['missed_runs']} missed run(s))" if r["missed_runs"] else ""
            print(f"{r['job']}: {r['result']}{extra}")
    return 1 if any(r["result"].startswith("error") for r in ran) else 0


RUN_EXAMPLES = """examples:
  torchbot schedule run bump --dry-run          what the weekly bump would do
  torchbot schedule run publish                 publish what has been built, now"""


SCHEDULE_EXAMPLES = """examples:
  torchbot schedule list                        the jobs and when each runs next
  torchbot schedule run bump --dry-run          what the weekly bump would do; nothing runs
  torchbot schedule run dashboard-issue --dry-run   the dashboard issues it would write
  torchbot schedule run-pending                 every due job once (from cron, without serve)"""
LIST_EXAMPLES = """examples:
  torchbot schedule list
  torchbot schedule list --json"""
PENDING_EXAMPLES = """examples:
  torchbot schedule run-pending                 run what is due, then exit (a cron line's command)
  torchbot schedule run-pending --json"""


def register(sub) -> None:
    parser = sub.add_parser("schedule", help="the release schedule: pin bumps, build polling, publish, announcements",
                            epilog=SCHEDULE_EXAMPLES)
    verbs = parser.add_subparsers(dest="schedule_command", title="commands", metavar="COMMAND",
                                  parser_class=type(parser))
    p = verbs.add_parser("list", help="jobs and their next run times", epilog=LIST_EXAMPLES)
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")
    p.set_defaults(func=_list)
    p = verbs.add_parser("run", help="run one job now", epilog=RUN_EXAMPLES)
    p.add_argument("job", help="a job id from `schedule list` (bump, docs-check, dashboard-issue, poll-builds, "
                                    "publish, flush-announcements)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what the job would do and how to preview it; run nothing")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(func=_run)
    p = verbs.add_parser("run-pending", help="run every due job once and exit", epilog=PENDING_EXAMPLES)
    p.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    p.set_defaults(func=_run_pending)
