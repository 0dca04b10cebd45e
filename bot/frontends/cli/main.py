"""The ``torchbot`` console script.

Each area registers its own subcommands: ``bot.frontends.cli.ask`` (ask, catalog),
``release.cli`` (release ...), ``release.schedule_cli`` (schedule ...), ``bot.frontends.cli.serve``
(serve, chat). Registration modules import heavy libraries only inside their handlers so
``torchbot ask`` starts fast. A handler takes (args, ctx) and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from config.errors import TorchbotError

REGISTRARS = ("bot.frontends.cli.ask", "release.cli", "release.schedule.cli", "bot.frontends.cli.serve",
              "bot.frontends.cli.paths", "release.dashboard.cli")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors: exit 2, one clear line
        self.print_usage(sys.stderr)
        print(f"torchbot: {message}", file=sys.stderr)
        raise SystemExit(2)


# Commands whose registrar is imported alone when the command line names them (a quick `ask`).
QUICK = {"ask": "bot.frontends.cli.ask", "catalog": "bot.frontends.cli.ask", "paths": "bot.frontends.cli.paths"}
ANSWER_ONLY = ("ask", "catalog")  # read-only: their start checks are the repositories and the cache

DESCRIPTION = ("ChatOps bot and release manager for build-pytorch. torchbot keeps its own files (state DB, "
               "audit log, build logs, cache, created branches) in the platform's data, state and cache "
               "directories, never the working directory: `torchbot paths` prints where.")


def build_parser(registrars: tuple[str, ...] = REGISTRARS) -> argparse.ArgumentParser:
    parser = _Parser(prog="torchbot", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debugging detail to stderr")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in registrars:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:  # area not present yet
                continue
            raise
        module.register(sub)
    return parser


def start(settings, args) -> None:
    """Before any command runs: what the settings name on disk is checked (one line per problem,
    exit 2), and the modules without settings at hand use the loaded settings' cache and records."""
    from config.checks import check_files
    from config.paths import use

    use(settings)
    if getattr(args, "check_files", True):
        check_files(settings, scope="answer" if args.command in ANSWER_ONLY else "full")


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    command = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser((QUICK[command],) if command in QUICK else REGISTRARS)
    args = parser.parse_args(argv)
    if args.verbose or command not in QUICK:  # `ask` and `catalog` log nothing: no logging to set up
        import logging

        logging.basicConfig(
            level=logging.DEBUG if args.verbose else logging.WARNING,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    from release.context import Context

    try:
        settings = None
        if getattr(args, "light_settings", False):  # `ask`: skip pydantic-settings when nothing but the env sets it
            from config.light_settings import light_settings

            settings = light_settings()
        if settings is None:
            from config.settings import load_settings

            settings = load_settings()
        start(settings, args)
        ctx = Context(settings)
        return int(args.func(args, ctx) or 0)
    except TorchbotError as err:
        for line in err.message.splitlines() or [""]:
            print(f"torchbot: {line}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `torchbot ask ... | head -1`: the reader left; not an error to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except Exception as err:  # last resort: a sentence for the user, the traceback in the log
        import logging

        logging.getLogger("torchbot").debug("unexpected error", exc_info=True)
        print(f"torchbot: internal error ({type(err).__name__}); rerun with -v for details.", file=sys.stderr)
        return 1

