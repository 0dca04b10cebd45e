"""`torchbot release build|status|workflow` (registrar; heavy imports stay inside
the handlers)."""

from __future__ import annotations

import json
import sys

from release.cli import apply_watched
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
    for r in rows:
        print(f"{r['state']:<11} {r['branch']:<28} {r['package']:<48} {r['finished'] or r['started'] or '-'}"
              f"  {r['log'] or ''}")
    return 0


def _workflow(args, ctx) -> int:
    from release.builds.workflow import render_workflow, write_workflow

    if args.commit and not args.write:
        args.write = True
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


def register(verbs) -> None:
    p = verbs.add_parser("build", help="build a branch's variants (local nix/flox builds or GitHub Actions)")
    p.add_argument("--repo", help="the build-pytorch checkout (default TORCHBOT_REPO_PATH)")
    p.add_argument("--branch", required=True)
    p.add_argument("--variant", action="append", metavar="GLOB", help="only variants matching GLOB (repeatable)")
    p.add_argument("--backend", choices=("local", "github"), default="local")
    p.add_argument("--head", metavar="REMOTE_BRANCH",
                   help="github backend: build this remote branch (a bump PR's head, e.g. bump/B-abc1234) "
                        "for --branch; it is not published until merged")
    p.add_argument("--jobs", type=int, default=None, help="builds at once (default TORCHBOT_BUILD_JOBS)")
    p.add_argument("--changed-only", action="store_true", help="only recipes changed since their last success")
    p.add_argument("--resume", action="store_true", help="only builds a stopped torchbot left interrupted")
    p.add_argument("--dry-run", action="store_true", help="show what would be built")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_build)

    p = verbs.add_parser("status", help="build states from the state DB")
    p.add_argument("--branch")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_status)

    p = verbs.add_parser("workflow", help="render the GitHub Actions build workflow")
    p.add_argument("--repo")
    p.add_argument("--write", action="store_true", help="write it into the repository's .github/workflows")
    p.add_argument("--commit", action="store_true",
                   help="commit it to --branch without touching the checkout (implies --write)")
    p.add_argument("--branch", help="with --commit: the branch to commit to (the branch a build dispatches from)")
    p.set_defaults(func=_workflow)
