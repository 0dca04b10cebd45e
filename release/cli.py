"""`torchbot release ...`: each part of the release manager registers its own verbs
(release.recipes.cli: init/render; release.pins.cli: bump-pins; release.branches.cli: branch;
release.docs.cli: docs; release.builds.cli: build, status, workflow; release.publishing.cli: publish), and the output helpers they share.
Missing parts are skipped."""

from __future__ import annotations

import importlib
import json
import sys

PARTS = (
    "release.recipes.cli",
    "release.pins.cli",
    "release.branches.cli",
    "release.docs.cli",
    "release.builds.cli",
    "release.publishing.cli",
)


def register(sub) -> None:
    parser = sub.add_parser("release", help="manage the build-pytorch repository: recipes, pins, builds, publishing")
    verbs = parser.add_subparsers(dest="release_command", required=True, parser_class=type(parser))
    for name in PARTS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:
                continue
            raise
        module.register(verbs)


def emit(result, as_json: bool) -> int:
    """Print a result object (JSON or text); its exit code (0 unless the result says otherwise)."""
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=False))
    else:
        print(result.text())
    return getattr(result, "exit_code", 0)


def refusal(err, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"ok": False, "error": err.message}, indent=2))
    print(f"torchbot: {err.message}", file=sys.stderr)
    return err.exit_code
