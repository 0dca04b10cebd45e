"""`torchbot ask` and `torchbot catalog`."""

from __future__ import annotations

import sys

ASK_EXAMPLES = """examples:
  torchbot ask 'H100 with Graviton3'           a GPU and a CPU in words
  torchbot ask p5.48xlarge --json              a cloud instance, as one JSON object
  torchbot ask --here                          this machine (NVML or nvidia-smi, /proc/cpuinfo)
  nvidia-smi | torchbot ask -                  pasted output, read from stdin"""
CATALOG_EXAMPLES = """examples:
  torchbot catalog                             the embedded data's branches
  torchbot catalog --repo ./build-pytorch --repo ./build-torchvision --json"""


def register(sub) -> None:
    p = sub.add_parser(
        "ask", help="which variant for this hardware? (free text, or '-' to read pasted output from stdin)",
        epilog=ASK_EXAMPLES)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--here", action="store_true",
                   help="answer for this machine: GPUs from NVML (or nvidia-smi), CPU from /proc/cpuinfo")
    p.add_argument(
        "--nvidia-smi",
        default="nvidia-smi",
        metavar="CMD",
        help="with --here: the nvidia-smi to run when NVML is not usable",
    )
    p.add_argument("--no-nvml", action="store_true", help="with --here: skip NVML and run nvidia-smi")
    p.add_argument("--cpuinfo", default="/proc/cpuinfo", metavar="PATH", help="with --here: where to read the CPU from")
    p.add_argument("question", nargs="*", help="e.g. 'H100 with Graviton3', 'p5.48xlarge', or - for stdin")
    p.set_defaults(func=_ask, parser=p, answer_settings=True)

    c = sub.add_parser("catalog", help="branches, pins and variant counts", epilog=CATALOG_EXAMPLES)
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--repo", action="append", metavar="PATH",
                   help="read the branches from this repository instead of the embedded data "
                        "(repeat for a build-pytorch and a build-torchvision repository)")
    c.set_defaults(func=_catalog)


def _emit(result, as_json: bool) -> None:
    if as_json:
        import json

        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.text())


def _ask(args, ctx) -> int:
    from bot.frontends.commands import ask

    words = args.question
    if not words and not args.here:
        args.parser.error("ask needs a question, '-' to read it from stdin, or --here")
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace") if words == ["-"] else " ".join(words)
    flags_from = None
    if args.here:
        from pathlib import Path

        from bot.engine.host import gather

        facts = gather(nvidia_smi=args.nvidia_smi, cpuinfo=Path(args.cpuinfo), use_nvml=not args.no_nvml)
        if not args.json:
            print("This machine:")
            print("\n".join(f"  {line}" for line in facts.summary))
            print()
        text = facts.text + text
        flags_from = facts.cpu_from
    _emit(ask(ctx, text, flags_from=flags_from), args.json)
    return 0


def _catalog(args, ctx) -> int:
    from pathlib import Path

    from bot.frontends.commands import catalog

    if args.repo:
        paths = [Path(p) for r in args.repo for p in r.split(",") if p.strip()]
        ctx.settings.repo_path = paths[0]
        ctx.settings.repo_paths = paths
    _emit(catalog(ctx, with_problems=True), args.json)
    return 0
