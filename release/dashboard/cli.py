"""`torchbot dashboard` (registrar; no heavy imports at module level): where the release stands on
every branch of each managed repository. A rich table per repository on a terminal, aligned plain
text otherwise, ``--json`` the model; ``--issue`` also brings the GitHub dashboard issues up to date
(acting on ticked boxes first)."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("dashboard", help="where the release stands: pins, bumps, drift, builds, per branch")
    p.add_argument("--repo", help="one repository to show (default: TORCHBOT_REPO_PATH, every one)")
    p.add_argument("--json", action="store_true", help="print the model as JSON")
    p.add_argument("--issue", action="store_true",
                   help="also create or edit the dashboard issue of each repository on GitHub (ticked boxes "
                        "by people with write access are acted on first, unless a serve process leads the "
                        "schedule: it acts on them)")
    p.set_defaults(func=_dashboard)


def _dashboard(args, ctx) -> int:
    from release.cli import emit
    from release.dashboard.commands import dashboard

    result = dashboard(ctx, args.repo)
    if args.issue:
        from release.dashboard.commands import sync_issues

        for line in sync_issues(ctx, result.model):
            print(f"torchbot: {line}", file=sys.stderr)
        result = dashboard(ctx, args.repo)
    if args.json or not sys.stdout.isatty():
        return emit(result, args.json)
    from rich.console import Console

    from release.dashboard.text import rich_tables

    rich_tables(result.model, Console())
    return 0
