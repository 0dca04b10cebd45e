"""`torchbot release bump-pins` and `torchbot release branch create` (registrar; no heavy
imports at module level)."""

from __future__ import annotations

import json
import sys


def _csv(value: str) -> list[str]:
    return [p for p in value.replace(" ", ",").split(",") if p]


def register(verbs) -> None:
    p = verbs.add_parser("bump-pins", help="move branches to a newer nixpkgs revision")
    p.add_argument("--repo", help="the build-pytorch repository (default: TORCHBOT_REPO_PATH)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--branch", action="append", dest="branches", metavar="B", help="branch to bump (repeatable)")
    which.add_argument("--all", action="store_true", help="every branch of the repository")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--rev", help="the nixpkgs commit (40 hex characters)")
    src.add_argument("--channel", help="take the head of this nixpkgs channel (default: TORCHBOT_DEFAULT_CHANNEL)")
    p.add_argument("--cuda", help="on a branch with several pins, bump the group of this CUDA version (A.B)")
    p.add_argument("--from-pin", dest="from_pin", help="on a branch with several pins, bump the group on this pin")
    p.add_argument("--dry-run", action="store_true", help="print the plan and a diff summary; write nothing")
    p.add_argument("--push", action="store_true", help="push the bumped branches to the configured remote")
    p.add_argument("--open-pr", action="store_true", help="push to bump/<branch>-<rev> and open a pull request")
    p.add_argument("--force", action="store_true", help="also bump vLLM-certified branches")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_bump)

    b = verbs.add_parser("branch", help="manage branches of the repository")
    bsub = b.add_subparsers(dest="branch_command", required=True, parser_class=type(b))
    c = bsub.add_parser("create", help="create a branch for a new PyTorch / CUDA / Python combination")
    c.add_argument("name")
    c.add_argument("--repo", help="the build-pytorch repository (default: TORCHBOT_REPO_PATH)")
    c.add_argument("--pytorch", required=True, help="PyTorch version X.Y[.Z]")
    c.add_argument("--python", required=True, help="Python version 3.NN")
    c.add_argument("--cuda", required=True, type=_csv, help="CUDA versions A.B[,C.D]")
    c.add_argument("--pin", required=True, help="nixpkgs commit (40 hex characters)")
    c.add_argument("--from", dest="from_branch", help="start from this branch (history and defaults)")
    c.add_argument("--gpu", type=_csv, help="GPU architectures smNN,... (default: every one the CUDA versions support)")
    c.add_argument("--cpu", type=_csv, help="CPU ISAs isa,... (default: those of --from, else all)")
    c.add_argument("--push", action="store_true", help="push the new branch to the configured remote")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=_create)


def _emit(result, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=False))
    else:
        print(result.text())


def _refusal(err, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"ok": False, "error": err.message}, indent=2))
    print(f"torchbot: {err.message}", file=sys.stderr)
    return err.exit_code


def _bump(args, ctx) -> int:
    from config.errors import TorchbotError
    from release.commands_pins import plan_bump

    target = "all" if args.all else args.branches
    try:
        plan = plan_bump(
            ctx,
            target,
            args.rev,
            channel=args.channel,
            cuda=args.cuda,
            from_pin=args.from_pin,
            force=args.force,
            push=args.push,
            open_pr=args.open_pr,
            dry_run=args.dry_run,
            repo=args.repo,
        )
        result = plan.apply()
    except TorchbotError as err:
        return _refusal(err, args.json)
    _emit(result, args.json)
    return 0


def _create(args, ctx) -> int:
    from config.errors import TorchbotError
    from release.commands_pins import create_branch

    try:
        result = create_branch(
            ctx,
            args.name,
            repo=args.repo,
            pytorch=args.pytorch,
            python=args.python,
            cuda=args.cuda,
            pin=args.pin,
            from_branch=args.from_branch,
            gpu=args.gpu,
            cpu=args.cpu,
            push=args.push,
        )
    except TorchbotError as err:
        return _refusal(err, args.json)
    _emit(result, args.json)
    return 0
