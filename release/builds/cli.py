"""`torchbot release build|status|workflow` (registrar; heavy imports stay inside
the handlers)."""

from __future__ import annotations

import json
import sys

from release.cli import apply_watched, emit_with_diff
from release.cli import emit as _emit


def _build(args, ctx) -> int:
    from release.builds.commands import plan_build

    plan = plan_build(ctx, args.branch, args.variant, repo=args.repo, backend=args.backend, jobs=args.jobs,
                      changed_only=args.changed_only, resume=args.resume, head=args.head)
    if args.dry_run:
        print(json.dumps(plan.to_dict(), indent=2) if args.json else plan.text())
        return 0
    if plan.summary.get("tool"):
        print(f"torchbot: {plan.summary['tool']}", file=sys.stderr)
    return _emit(apply_watched(plan, "built"), args.json)


def _status(args, ctx) -> int:
    from release.builds.run import status

    rows = status(ctx, args.branch)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("No builds recorded" + (f" for {args.branch}." if args.branch else "."))
        return 0
    print(status_table(rows))
    return 0


def status_table(rows: list[dict]) -> str:
    """The builds as a table under a header, then the totals by state and branch."""
    head = ("state", "branch", "package", "when (UTC)", "log")
    cells = [(r["state"], r["branch"], r["package"], (r["finished"] or r["started"] or "-").replace("T", " "),
              r["log"] or "") for r in rows]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(x[:-1], widths, strict=True)) + "  " + x[-1] for x in [head, *cells]]
    lines = [line.rstrip() for line in lines]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ---")
    states: dict[str, int] = {}
    for r in rows:
        states[r["state"]] = states.get(r["state"], 0) + 1
    branches = len({r["branch"] for r in rows})
    lines.append(f"{len(rows)} build(s) on {branches} branch(es): "
                 + ", ".join(f"{n} {state}" for state, n in sorted(states.items(), key=lambda x: (-x[1], x[0]))))
    return "\n".join(lines)


STATUS_EXAMPLES = """examples:
  torchbot release status                          every branch's builds, a header and the totals
  torchbot release status --branch main --json"""


def _workflow(args, ctx) -> int:
    from release.builds.workflow import render_workflow, write_workflow

    if args.commit and not args.write:
        args.write = True
    if args.diff or args.dry_run:
        if not args.write:
            from config.errors import UsageError

            raise UsageError("--dry-run and --diff go with --write or --commit (without them nothing is written).")
        return _workflow_dry_run(args, ctx)
    if args.write:
        path, sha = write_workflow(ctx, args.repo, commit=args.commit, branch=args.branch)
        if not args.commit:
            print(f"Wrote {path}.")
        elif sha:
            print(f"Committed {path} to {args.branch} ({sha[:12]}); the checkout was not touched.")
        else:
            print(f"{args.branch} already holds this {path}; nothing was committed.")
    else:
        print(render_workflow(ctx.settings), end="")
    return 0


def _workflow_dry_run(args, ctx) -> int:
    from config.diffs import unified
    from config.results import MessageResult
    from release.builds.workflow import workflow_changes

    changes = workflow_changes(ctx, args.repo, commit=args.commit, branch=args.branch)
    change = changes[0]
    where = f"commit it to {args.branch}" if args.commit else f"write it in {args.repo or ctx.settings.repo_path}"
    verb = ("already up to date" if change.old == change.new
            else "would create" if change.old is None else "would change")
    result = MessageResult(f"{change.path}: {verb} ({where}).\nDry run: nothing was written.",
                           data={"path": change.path, "changed": change.old != change.new, "dry_run": True})
    return emit_with_diff(result, unified(changes) if args.diff else None, args.json)


BUILD_EXAMPLES = """examples:
  torchbot release build --branch main --dry-run          what would be built, and why
  torchbot release build --branch main --variant '*sm90*' --jobs 2
  torchbot release build --branch main --backend github   dispatch the GitHub Actions workflow
  torchbot release build --branch main --resume           only what a stopped torchbot left"""

WORKFLOW_EXAMPLES = """examples:
  torchbot release workflow                                  print it
  torchbot release workflow --commit --branch main --dry-run --diff
  torchbot release workflow --commit --branch main           commit it to main, checkout untouched"""


def register(verbs) -> None:
    p = verbs.add_parser("build", help="build a branch's variants (local nix/flox builds or GitHub Actions)",
                         epilog=BUILD_EXAMPLES)
    p.add_argument("--repo", help="the build-pytorch checkout (default TORCHBOT_REPO_PATH)")
    p.add_argument("--branch", required=True, help="the branch to build (local, else origin/BRANCH)")
    p.add_argument("--variant", action="append", metavar="GLOB", help="only variants matching GLOB (repeatable)")
    p.add_argument("--backend", choices=("local", "github"), default="local",
                   help="local: nix/flox builds on this machine (default); github: dispatch the Actions workflow")
    p.add_argument("--head", metavar="REMOTE_BRANCH",
                   help="github backend: build this remote branch (a bump PR's head, e.g. bump/B-abc1234) "
                        "for --branch; it is not published until merged")
    p.add_argument("--jobs", type=int, default=None, help="builds at once (default TORCHBOT_BUILD_JOBS)")
    p.add_argument("--changed-only", action="store_true", help="only recipes changed since their last success")
    p.add_argument("--resume", action="store_true", help="only builds a stopped torchbot left interrupted")
    p.add_argument("--dry-run", action="store_true", help="show what would be built; build and record nothing")
    p.add_argument("--json", action="store_true", help="print the plan or the result as JSON")
    p.set_defaults(func=_build)

    p = verbs.add_parser("status", help="build states from the state DB", epilog=STATUS_EXAMPLES)
    p.add_argument("--branch", help="only this branch's builds (default: every branch)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=_status)

    p = verbs.add_parser("workflow", help="render the GitHub Actions build workflow", epilog=WORKFLOW_EXAMPLES)
    p.add_argument("--repo", help="the build-pytorch repository (default TORCHBOT_REPO_PATH)")
    p.add_argument("--write", action="store_true", help="write it into the repository's .github/workflows")
    p.add_argument("--commit", action="store_true",
                   help="commit it to --branch without touching the checkout (implies --write)")
    p.add_argument("--branch", help="with --commit: the branch to commit to (the branch a build dispatches from)")
    p.add_argument("--dry-run", action="store_true", help="with --write/--commit: say what would change; write nothing")
    p.add_argument("--diff", action="store_true",
                   help="with --write/--commit: also print the unified diff (implies --dry-run)")
    p.add_argument("--json", action="store_true", help="with --dry-run: print the result as JSON")
    p.set_defaults(func=_workflow)
