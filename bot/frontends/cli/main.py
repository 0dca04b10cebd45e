"""The ``torchbot`` console script.

Each area registers its own subcommands: ``bot.frontends.cli.ask`` (ask, catalog),
``release.cli`` (release ...), ``release.schedule_cli`` (schedule ...), ``bot.frontends.cli.serve``
(serve, chat). Registration modules import heavy libraries only inside their handlers so
``torchbot ask`` starts fast. A handler takes (args, ctx) and returns an exit code.
"""

from __future__ import annotations

import argparse
import os
import sys

from config.errors import TorchbotError


# Each area registers its own subcommands; imported plainly, inside these functions, so a quick
# command (``ask``) imports only its own registrar.
def _ask(sub) -> None:
    from bot.frontends.cli import ask

    ask.register(sub)


def _release(sub) -> None:
    from release.branches import cli as branches
    from release.builds import cli as builds
    from release.cli import register
    from release.docs import cli as docs
    from release.pins import cli as pins
    from release.publishing import cli as publishing
    from release.recipes import cli as recipes

    verbs = register(sub)
    for area in (recipes, pins, branches, docs, builds, publishing):
        area.register(verbs)


def _schedule(sub) -> None:
    from release.schedule.cli import register

    register(sub)


def _serve(sub) -> None:
    from bot.frontends.cli import serve

    serve.register(sub)


def _paths(sub) -> None:
    from bot.frontends.cli import paths

    paths.register(sub)


def _completion(sub) -> None:
    from bot.frontends.cli import completion

    completion.register(sub)


def _dashboard(sub) -> None:
    from release.dashboard.cli import register

    register(sub)


REGISTRARS = (_ask, _release, _schedule, _serve, _paths, _completion, _dashboard)


EXIT_CODES = """exit status:
  0  ok
  1  done, with problems (a failed build, drift found, a refused change)
  2  usage or settings: a bad option, an unknown branch, a missing or wrong TORCHBOT_ setting"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter (examples and exit codes shown as written), with the terminal's
    width read by os (argparse's own reads it through shutil, whose import of bz2 and lzma costs
    every `ask` ~3 ms); COLUMNS still wins."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", "")) - 2
            except ValueError:
                try:
                    width = os.get_terminal_size(sys.__stdout__.fileno()).columns - 2
                except (AttributeError, ValueError, OSError):
                    width = 78
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """Every torchbot parser: examples and exit codes shown as written, and a mistake shows
    the usage of the command it was made in (``torchbot release build --bogus`` shows build's)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # usage errors: exit 2, one clear line
        self.print_usage(sys.stderr)
        print(f"torchbot: {message}\nRun '{self.prog} --help' for more.", file=sys.stderr)
        raise SystemExit(2)

    def _get_values(self, action, arg_strings):
        """Every value given on the command line: an empty or blank one is refused before anything
        acts (``--channel ''`` must not mean "the default")."""
        for value in () if isinstance(action, argparse._SubParsersAction) else arg_strings:
            if isinstance(value, str) and not value.strip():
                name = "/".join(action.option_strings) or action.metavar or action.dest
                self.error(f"{name}: an empty value; give a value or leave it out")
        return super()._get_values(action, arg_strings)


class _Version(argparse.Action):
    """``--version``: read from the installed package's metadata only when asked (``ask`` stays light)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("torchbot")
        except PackageNotFoundError:
            number = "unknown (not installed)"
        print(f"torchbot {number}")
        parser.exit()


# Commands whose registrar is imported alone when the command line names them (a quick `ask`).
QUICK = {"ask": _ask, "catalog": _ask, "paths": _paths}
ANSWER_ONLY = ("ask", "catalog")  # read-only: their start checks are the repositories and the cache

EXAMPLES = """examples:
  torchbot ask 'H100 with Graviton3'              which variant for this hardware
  torchbot ask --here                             ... for this machine
  torchbot catalog                                branches, pins and variant counts
  torchbot release bump-pins --branch main --dry-run --diff
  torchbot release build --branch main --dry-run  what a build would do
  torchbot chat                                   the chat commands in this terminal
  torchbot completion bash > ~/.local/share/bash-completion/completions/torchbot"""

DESCRIPTION = """\
ChatOps bot and release manager for build-pytorch: which variant fits this hardware,
and the weekly release (bump the nixpkgs pins, build, publish).

torchbot keeps its own files (state DB, audit log, build logs, cache, created branches)
in the platform's data, state and cache directories, never the working directory:
`torchbot paths` prints where."""


def build_parser(registrars: tuple = REGISTRARS) -> argparse.ArgumentParser:
    parser = _Parser(prog="torchbot", description=DESCRIPTION, epilog=EXAMPLES)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debugging detail to stderr")
    parser.add_argument("--version", action=_Version, help="print torchbot's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", parser_class=_Parser)
    for register in registrars:
        register(sub)
    finish(parser)
    return parser


def subcommands(parser: argparse.ArgumentParser):
    """(name, parser) of each command directly under ``parser``, hidden ones left out."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            shown = {a.dest for a in action._choices_actions}
            yield from ((n, p) for n, p in action.choices.items() if n in shown)


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) for ``parser`` and every command under it, depth first."""
    yield path, parser
    for name, child in subcommands(parser):
        yield from walk(child, (*path, name))


def finish(parser: argparse.ArgumentParser) -> None:
    """The conventions every command shares: its exit codes under its help, a group of commands
    (``torchbot release``) lists its commands as COMMAND, and each parser remembers itself so a
    bare group prints its help and a mistake shows the usage of the command it was made in."""
    for _path, p in walk(parser):
        p.epilog = f"{p.epilog}\n\n{EXIT_CODES}" if p.epilog else EXIT_CODES
        p.set_defaults(parser=p)
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                action.metavar, action.required = action.metavar or "COMMAND", False
                for listed in action._choices_actions:  # `torchbot ask --help` starts by saying what ask does
                    child = action.choices[listed.dest]
                    if child.description is None and listed.help:
                        child.description = listed.help[0].upper() + listed.help[1:] + "."
                action.help = action.help or "one of these (each has its own --help):"


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
    if command == "__complete":  # the shell completion scripts' hidden helper
        from bot.frontends.cli.completion import complete

        return complete(words[words.index(command) + 1:], build_parser)
    parser = build_parser((QUICK[command],) if command in QUICK else REGISTRARS)
    args, extra = parser.parse_known_args(words)
    if extra:  # an unknown flag: the usage of the command it was given to
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "func", None) is None:  # a bare `torchbot` or `torchbot release`: its help
        args.parser.print_help()
        return 0
    if args.verbose or command not in QUICK:  # `ask` and `catalog` log nothing: no logging to set up
        import logging

        logging.basicConfig(
            level=logging.DEBUG if args.verbose else logging.WARNING,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        from config.redact import install

        install()  # -v logs httpx/httpcore/slack_sdk requests: never their Authorization header or a token
    from release.context import Context

    try:
        settings = None
        if getattr(args, "answer_settings", False):  # `ask`: only the answer group, without pydantic-settings
            from config.settings_answer import answer_settings

            settings = answer_settings()
        if getattr(args, "no_settings", False):  # `completion`: prints a script, needs no settings
            return int(args.func(args, None) or 0)
        if settings is None:
            from config.settings import load_settings

            settings = load_settings()
            from config.redact import remember

            remember(settings)
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

