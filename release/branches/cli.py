"""`torchbot release branch create` (registrar; no heavy imports at module level)."""

from __future__ import annotations

from release.cli import emit_with_diff
from release.cli import refusal as _refusal

EXAMPLES = """examples:
  torchbot release branch create pytorch-2.9-python312 --pytorch 2.9.1 --python 3.12 \\
      --cuda 12.9,12.8 --pin 0123abcd0123abcd0123abcd0123abcd0123abcd --dry-run --diff
  torchbot release branch create pytorch-2.10-python313 --from main --pytorch 2.10.0 --pin REV --push"""


def _csv(value: str) -> list[str]:
    return [p for p in value.replace(" ", ",").split(",") if p]


def register(verbs) -> None:
    b = verbs.add_parser("branch", help="manage branches of the repository", epilog=EXAMPLES)
    bsub = b.add_subparsers(dest="branch_command", title="commands", metavar="COMMAND", parser_class=type(b))
    c = bsub.add_parser(
        "create", help="derive a branch for a new PyTorch / CUDA / Python combination from an existing one",
        description="Derive a branch for a new PyTorch / CUDA / Python combination from an existing one:\n"
                    "one commit, the checkout untouched, checked against nixpkgs first.", epilog=EXAMPLES)
    c.add_argument("name", help="the new branch's name (e.g. pytorch-2.9-python312)")
    c.add_argument("--repo", help="the build-pytorch repository (default: TORCHBOT_REPO_PATH)")
    c.add_argument("--from", dest="from_branch", metavar="BRANCH",
                   help="the branch to derive from (default: one of the name's PyTorch line, else the recommended one)")
    c.add_argument(
        "--pytorch", required=True, metavar="X.Y[.Z]",
        help="PyTorch version X.Y[.Z] the branch builds (checked against nixpkgs)"
    )
    c.add_argument("--python", metavar="3.NN", help="Python version 3.NN (default: the source's)")
    c.add_argument("--cuda", type=_csv, metavar="A.B[,C.D]", help="CUDA versions A.B[,C.D] (default: the source's)")
    c.add_argument("--pin", required=True, metavar="REV",
                   help="nixpkgs commit (40 hex characters; must exist in nixpkgs)")
    c.add_argument("--torch-src", dest="torch_src", metavar="REV,HASH",
                   help="build PyTorch from this source (git tag or commit, SRI hash) in the source override")
    c.add_argument(
        "--gpu", type=_csv, metavar="smNN,...",
        help="GPU architectures smNN,... among those the source builds (default: all of them)"
    )
    c.add_argument("--cpu", type=_csv, metavar="ISA,...",
                   help="CPU ISAs isa,... among the source's (default: all of them)")
    c.add_argument("--purpose", help="the branch's purpose for the catalog (default: python-variant on the source's "
                                     "PyTorch line, else bleeding-edge)")
    c.add_argument("--summary", help="one line for the README's branch list and tables (default: the source's)")
    c.add_argument("--push", action="store_true", help="push the new branch to the configured remote")
    c.add_argument("--dry-run", action="store_true", help="check and print what would be created; write nothing")
    c.add_argument("--diff", action="store_true",
                   help="also print the unified diff from the source branch (implies --dry-run)")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=_create)


def _create(args, ctx) -> int:
    from config.errors import TorchbotError
    from release.branches.commands import create_branch

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
            torch_src=args.torch_src,
            purpose=args.purpose,
            summary=args.summary,
            dry_run=args.dry_run or args.diff,
        )
    except TorchbotError as err:
        return _refusal(err, args.json)
    if args.diff:
        from config.diffs import unified

        return emit_with_diff(result, unified(result.changes), args.json)
    return emit_with_diff(result, None, args.json)
