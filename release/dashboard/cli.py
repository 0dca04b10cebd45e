"""`torchbot dashboard` (registrar; no heavy imports at module level): where the release stands on
every branch of each managed repository, as its remote has it (``--fetch`` fetches first). A rich
table per repository on a terminal, aligned plain text otherwise, ``--json`` the model; ``--issue``
also brings the GitHub dashboard issues up to date (acting on ticked boxes first); ``--issue
--dry-run`` prints each issue as it would be written and touches nothing on GitHub."""

from __future__ import annotations

import json
import sys

EXAMPLES = """examples:
  torchbot dashboard                       every branch of every repository (TORCHBOT_REPO_PATH)
  torchbot dashboard --repo ./build-pytorch --json
  torchbot dashboard --issue --dry-run     the GitHub issue each repository would get; nothing is written
  torchbot dashboard --issue               create or edit the issues (ticked boxes are acted on first)"""


def register(sub) -> None:
    p = sub.add_parser("dashboard", help="where the release stands: pins, bumps, drift, builds, per branch",
                       epilog=EXAMPLES)
    p.add_argument("--repo", help="one repository to show (default: TORCHBOT_REPO_PATH, every one)")
    p.add_argument("--json", action="store_true", help="print the model as JSON")
    p.add_argument("--issue", action="store_true",
                   help="also create or edit the dashboard issue of each repository on GitHub (ticked boxes "
                        "by people with write access are acted on first, unless a serve process leads the "
                        "schedule: it acts on them)")
    p.add_argument("--dry-run", action="store_true", dest="dry_run",
                   help="with --issue: print each issue as it would be written; act on nothing, write nothing")
    p.add_argument("--fetch", action="store_true",
                   help="fetch each repository's remote first (the dashboard reads the remote's branches)")
    p.set_defaults(func=_dashboard)


def _dashboard(args, ctx) -> int:
    from config.errors import UsageError
    from release.cli import emit
    from release.dashboard.commands import dashboard

    if args.dry_run and not args.issue:
        raise UsageError("--dry-run goes with --issue (the dashboard itself writes nothing).")
    result = dashboard(ctx, args.repo, fetch=args.fetch)
    if args.issue and args.dry_run:
        return _issue_preview(result.model, args.json)
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


def _issue_preview(model, as_json: bool) -> int:
    """Each repository's issue as ``--issue`` would write it (its boxes are not read: GitHub is not asked)."""
    from release.dashboard import issue

    issues = [{"repository": r.name, "github": r.github, "title": issue.title(r.name), "body": issue.render(model, r)}
              for r in model.repositories]
    if as_json:
        print(json.dumps({"ok": True, "dry_run": True, "issues": issues}, indent=2))
        return 0
    for i in issues:
        where = f"in {i['github']}" if i["github"] else "(no GitHub repository: set TORCHBOT_GITHUB_REPO)"
        print(f"--- dashboard issue of {i['repository']} {where}: {i['title']}")
        print(i["body"])
        print()
    print("Dry run: GitHub was not asked; no box was acted on, no issue written.")
    return 0
