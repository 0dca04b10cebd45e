"""`torchbot release branch create` (registrar; no heavy imports at module level)."""

from __future__ import annotations

from release.cli import emit as _emit
from release.cli import refusal as _refusal


def _csv(value: str) -> list[str]:
    return [p for p in value.replace(" ", ",").split(",") if p]


def register(verbs) -> None:
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
        )
    except TorchbotError as err:
        return _refusal(err, args.json)
    _emit(result, args.json)
    return 0
