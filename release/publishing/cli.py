"""`torchbot release publish` (registrar; heavy imports stay inside the handler)."""

from __future__ import annotations

import json

from release.cli import apply_watched
from release.cli import emit as _emit


def _publish(args, ctx) -> int:
    from release.publishing.commands import plan_publish

    plan = plan_publish(ctx, args.branch, repo=args.repo)
    if args.dry_run:
        print(json.dumps(plan.to_dict(), indent=2) if args.json else plan.text())
        return 0
    return _emit(apply_watched(plan, "published"), args.json)



EXAMPLES = """examples:
  torchbot release publish --branch main --dry-run     what would be published
  torchbot release publish --branch main               flox publish each succeeded, unpublished variant"""


def register(verbs) -> None:
    p = verbs.add_parser("publish", help="publish succeeded, unpublished variants to the Flox catalog",
                         epilog=EXAMPLES)
    p.add_argument("--repo", help="the build-pytorch checkout (default TORCHBOT_REPO_PATH)")
    p.add_argument("--branch", help="only this branch's variants (default: every branch)")
    p.add_argument("--dry-run", action="store_true", help="show what would be published; publish nothing")
    p.add_argument("--json", action="store_true", help="print the plan or the result as JSON")
    p.set_defaults(func=_publish)
