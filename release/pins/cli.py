"""`torchbot release bump-pins` (registrar; no heavy imports at module level)."""

from __future__ import annotations

from release.cli import emit_with_diff, watch
from release.cli import refusal as _refusal

EXAMPLES = """examples:
  torchbot release bump-pins --branch main --dry-run --diff   the diff a bump of main would make
  torchbot release bump-pins --all --channel nixos-unstable   every branch to the channel's head
  torchbot release bump-pins --branch main --rev 0123...cdef --push
  torchbot release bump-pins --branch main --open-pr          a pull request instead of a push
  torchbot release bump-pins --branch pytorch-2.9-python313 --rev REV --pytorch 2.9.1
  torchbot release bump-pins --all --allow-older "nixpkgs reverted the CUDA update"   follow a channel back"""


def register(verbs) -> None:
    p = verbs.add_parser("bump-pins", help="move branches to a newer nixpkgs revision",
                         description="Move branches to a newer nixpkgs revision: one commit per branch, the\n"
                                     "checkout untouched; guards refuse a bump that would change PyTorch unasked.",
                         epilog=EXAMPLES)
    p.add_argument("--repo", help="the build-pytorch repository (default: TORCHBOT_REPO_PATH)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--branch", action="append", dest="branches", metavar="B", help="branch to bump (repeatable)")
    which.add_argument("--all", action="store_true",
                       help="every branch (local and origin/*) of every configured repository, every pin group: "
                            "each bumped, moved keeping its promise, current or held (exit 1 when some are held)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--rev", metavar="REV", help="the nixpkgs commit (40 hex characters)")
    src.add_argument("--channel", help="take the head of this nixpkgs channel (default: TORCHBOT_DEFAULT_CHANNEL)")
    p.add_argument("--cuda", metavar="A.B", help="on a branch with several pins, bump the group of this CUDA version")
    p.add_argument("--from-pin", dest="from_pin", metavar="OLD",
                   help="on a branch with several pins, bump the group on this pin (its nixpkgs commit)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and a diff summary; write nothing")
    p.add_argument("--diff", action="store_true",
                   help="also print the unified diff of every file the bump would write (implies --dry-run)")
    p.add_argument("--push", action="store_true", help="push the bumped branches to the configured remote")
    p.add_argument("--open-pr", action="store_true", help="push to bump/<branch>-<rev> and open a pull request")
    p.add_argument("--delivery", choices=("pr", "push", "local"),
                   help="with --all: how the bumps leave this machine (default: TORCHBOT_BUMP_DELIVERY, else pr "
                        "with GitHub configured, else local)")
    p.add_argument("--force", action="store_true", help="also bump vLLM-certified branches")
    p.add_argument("--allow-older", dest="allow_older", metavar="REASON",
                   help="let a pin move to an older nixpkgs commit (the channel went back); REASON goes into the "
                        "commit message. Without it a pin never moves back")
    p.add_argument("--with-companions", action="store_true", dest="with_companions",
                   help="also move the paired build-torchvision branch to the same pin (its own commit there)")
    p.add_argument("--pytorch", metavar="X.Y.Z",
                   help="a deliberate PyTorch move: the version the new pin's nixpkgs holds (or --torch-src builds); "
                        "updates the branch's declared versions")
    p.add_argument("--torch-src", dest="torch_src", metavar="REV,HASH",
                   help="build PyTorch from this source (git tag or commit, SRI hash) by a source override; "
                        "without --rev the pin stays")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_bump)
    q = verbs.add_parser("bump-pause", help="pause (or resume) the weekly bump pull requests of a branch",
                         description="Pause the bumps of a branch: the weekly bump opens no pull request for it\n"
                                     "until it is resumed (a torchbot:pause label on one of its bump PRs\n"
                                     "does the same).",
                         epilog="examples:\n  torchbot release bump-pause main --reason 'waiting for CUDA 13'\n"
                                "  torchbot release bump-pause main --resume\n"
                                "  torchbot release bump-pause main --recreate bump/main-1128112   propose a closed "
                                "PR's target again")
    q.add_argument("branch", help="the branch whose bump pull requests to pause, resume or recreate")
    q.add_argument("--repo", help="the repository (default: TORCHBOT_REPO_PATH's first)")
    q.add_argument("--resume", action="store_true", help="resume the branch's bumps")
    q.add_argument("--reason", default="", help="why (shown on the dashboard)")
    q.add_argument("--recreate", metavar="HEAD", help="a closed-unmerged bump PR's head branch whose target may be "
                                                      "proposed again")
    q.add_argument("--json", action="store_true", help="print the result as JSON")
    q.set_defaults(func=_pause)


def _pause(args, ctx) -> int:
    from config.errors import TorchbotError
    from release.cli import emit
    from release.pins.commands import pause_bumps

    try:
        result = pause_bumps(ctx, args.branch, resume=args.resume, reason=args.reason, repo=args.repo,
                             recreate=args.recreate)
    except TorchbotError as err:
        return _refusal(err, args.json)
    return emit(result, args.json)


def _bump(args, ctx) -> int:
    from config.errors import TorchbotError
    from release.pins.commands import plan_bump

    args.dry_run = args.dry_run or args.diff
    target = "all" if args.all else args.branches
    checks = watch("checked") if args.all else None  # live progress for a bump of every branch
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
            with_companions=args.with_companions,
            pytorch=args.pytorch,
            torch_src=args.torch_src,
            repo=args.repo,
            allow_older=args.allow_older,
            progress=checks,
            **({"delivery": args.delivery} if args.delivery else {}),
        )
        if checks is not None:
            checks.listener.close()
        diff = plan.diff() if args.diff else None
        bumps = watch("bumped") if args.all and not args.dry_run else None
        try:
            result = plan.apply(bumps)
        finally:
            if bumps is not None:
                bumps.listener.close()
    except TorchbotError as err:
        if checks is not None:
            checks.listener.close()
        return _refusal(err, args.json)
    return emit_with_diff(result, diff, args.json)
