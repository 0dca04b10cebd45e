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



def register(verbs) -> None:
    p = verbs.add_parser("publish", help="publish succeeded, unpublished variants to the Flox catalog")
    p.add_argument("--repo")
    p.add_argument("--branch")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_publish)
