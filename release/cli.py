"""`torchbot release ...`: each part of the release manager registers its own verbs
(release.recipes.cli: init/render; release.pins.cli: bump-pins; release.branches.cli: branch;
release.docs.cli: docs; release.builds.cli: build, status, workflow; release.publishing.cli:
publish), and the output helpers they share:
``emit`` (a result as text or JSON) and ``watch`` (live progress on stderr: rich on a terminal,
one line per finished item otherwise). The console script (``bot.frontends.cli.main``) registers
each part's verbs under ``release``: this module is below them all."""

from __future__ import annotations

import json
import sys

EXAMPLES = """examples (a week's release):
  torchbot release bump-pins --all --dry-run --diff     what a bump would change
  torchbot release bump-pins --branch main --open-pr    bump main through a pull request
  torchbot release build --branch main                  build main's variants here
  torchbot release publish --branch main --dry-run      what would be published"""


def register(sub):
    """``torchbot release``; returns its subcommand parsers, which each area's ``cli`` registers into
    (the console script does: this module is below them all)."""
    parser = sub.add_parser(
        "release", help="manage the build-pytorch repository: recipes, pins, builds, publishing",
        description="Manage the build-pytorch repository: recipes, nixpkgs pins, branches, README tables,\n"
                    "builds and publishing. Every command that writes has --dry-run.",
        epilog=EXAMPLES)
    verbs = parser.add_subparsers(dest="release_command", title="commands", metavar="COMMAND",
                                  parser_class=type(parser))
    return verbs


def emit(result, as_json: bool) -> int:
    """Print a result object (JSON or text); its exit code (0 unless the result says otherwise)."""
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=False))
    else:
        print(result.text())
    return getattr(result, "exit_code", 0)


def emit_with_diff(result, diff: str | None, as_json: bool) -> int:
    """A dry run's result, and with ``--diff`` the unified diff of what it would change
    (after the summary; in JSON as ``"diff"``). An empty diff says so."""
    if diff is None:
        return emit(result, as_json)
    if as_json:
        print(json.dumps({**result.to_dict(), "diff": diff}, indent=2, sort_keys=False))
    else:
        print(result.text())
        print(diff.rstrip("\n") if diff else "(no file would change)")
    return getattr(result, "exit_code", 0)


def refusal(err, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"ok": False, "error": err.message}, indent=2))
    print(f"torchbot: {err.message}", file=sys.stderr)
    return err.exit_code


class TerminalProgress:
    """Renders :mod:`config.progress` events on ``stream`` (stderr): a live rich bar with done,
    failed, running, elapsed and ETA on a terminal; one line per finished item otherwise (logs
    and CI stay readable). ``close()`` stops the live display."""

    def __init__(self, stream=None, live: bool | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._bar = None
        self._task = None

    def __call__(self, event) -> None:
        if self.live:
            self._live(event)
        elif event.kind == "finished":
            print(self._line(event), file=self.stream, flush=True)
        elif event.kind == "note":
            print(f"torchbot: {event.message}", file=self.stream, flush=True)

    @staticmethod
    def _line(event) -> str:
        from config.progress import duration

        s = event.snapshot
        took = f" ({duration(event.seconds)})" if event.seconds is not None else ""
        tail = f": {event.message}" if event.message else ""
        where = f"  log: {event.url or event.log}" if event.state in ("failed", "interrupted") and (
            event.url or event.log) else ""
        return f"[{s.finished}/{s.total}] {event.state} {event.item}{took}{tail}{where}  ({s.line()})"

    def _live(self, event) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from config.progress import duration

        s = event.snapshot
        if self._bar is None and event.kind != "end":
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[counts]}"),
                                 TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                                 console=Console(file=self.stream), transient=False)
            self._bar.start()
            self._task = self._bar.add_task(s.verb, total=s.total or None, counts="", eta="")
        if self._bar is None:
            return
        if event.kind == "finished" and event.state in ("failed", "interrupted"):
            where = event.url or event.log or ""
            self._bar.console.print(f"[red]{event.state}[/] {event.item}: {event.message}  {where}",
                                    markup=True, highlight=False)
        elif event.kind == "note":
            self._bar.console.print(f"torchbot: {event.message}", markup=False, highlight=False)
        counts = f"{s.done}/{s.total} {s.verb}, {s.failed} failed, {s.running} running"
        eta = f"ETA {duration(s.eta)}" if s.eta is not None else ""
        self._bar.update(self._task, completed=s.finished, total=s.total or None, counts=counts, eta=eta)
        if event.kind == "end":
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def watch(verb: str, stream=None, live: bool | None = None):
    """A :class:`config.progress.Progress` rendered by :class:`TerminalProgress`; call
    ``progress.listener.close()`` when the work ends, however it ends."""
    from config.progress import Progress

    return Progress(TerminalProgress(stream, live), verb=verb)


def apply_watched(plan, verb: str):
    """``plan.apply(progress)`` with live progress on the terminal (one line per item elsewhere),
    the display closed however the work ends."""
    progress = watch(verb)
    try:
        return plan.apply(progress)
    finally:
        progress.listener.close()
