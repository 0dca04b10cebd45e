"""`torchbot release docs --check | --write` (registrar; no heavy imports at module level)."""

from __future__ import annotations

from release.cli import emit as _emit
from release.cli import refusal as _refusal


def register(verbs) -> None:
    p = verbs.add_parser("docs", help="keep every branch README's cross-branch tables in line with the repository")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true",
                      help="print each stale row; exit 1 on drift --write fixes, 3 when only what no write can fix "
                           "is left (torchvision pairs that differ)")
    mode.add_argument("--write", action="store_true",
                      help="one commit per branch fixing only those tables (a branch only on origin/* gets its local "
                           "branch), then check again: exit 0 when the tables match, 3 naming what no write can fix")
    p.add_argument("--repo", help="the build-pytorch repository (default: TORCHBOT_REPO_PATH)")
    p.add_argument(
        "--torchvision",
        help="the build-torchvision repository (default: the build-torchvision one in TORCHBOT_REPO_PATH); "
        "--check also compares its branches with their build-pytorch pairs",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_docs)


def _docs(args, ctx) -> int:
    from config.errors import TorchbotError
    from release.docs.commands import docs_check, docs_write

    try:
        result = docs_check(ctx, args.repo, args.torchvision) if args.check else docs_write(
            ctx, args.repo, args.torchvision)
    except TorchbotError as err:
        return _refusal(err, args.json)
    _emit(result, args.json)
    return result.exit_code
