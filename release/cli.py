"""`torchbot release ...`: each part of the release manager registers its own verbs
(release.cli_init: init/render; release.cli_pins: bump-pins, branch; release.cli_builds:
build, status, publish, workflow). Missing parts are skipped."""

from __future__ import annotations

import importlib

PARTS = ("release.cli_init", "release.cli_pins", "release.cli_builds")


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
