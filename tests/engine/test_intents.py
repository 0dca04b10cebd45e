"""Reading a chat message's intent in words (bot/engine/intents.py, phrases from
config/data/chat_intents.toml): pure, no repository, no state."""

from __future__ import annotations

import pytest

from bot.engine.hardware import parse
from bot.engine.intents import hardware_said, read, specs, tokens
from config.catalog_data import load_catalog

BRANCHES = {"main": "2.8.0", "pytorch-2.9-python313": "2.9.1", "pytorch-2.9-python311": "2.9.1",
            "pytorch-2.10-python313": "2.10.0"}
REV = "0123abcd0123abcd0123abcd0123abcd0123abcd"


@pytest.mark.parametrize("text, command, args", [
    ("help", "help", ()),
    ("hello", "help", ()),
    ("what can you do?", "help", ()),
    ("what pin is main on?", "pins", ("main",)),
    ("which nixpkgs is pytorch-2.9-python313 pinned to", "pins", ("pytorch-2.9-python313",)),
    ("which nixpkgs is pytorch 2.10 on", "pins", ("pytorch-2.10-python313",)),
    ("pins", "pins", ()),
    ("how are the builds going", "status", ()),
    ("what's running?", "status", ()),
    ("bump main", "bump", ("main",)),
    ("please bump all branches", "bump", ("all",)),
    (f"can you bump main to {REV}", "bump", ("main", REV)),
    ("update the pin of pytorch-2.9-python311", "bump", ("pytorch-2.9-python311",)),
    ("build pytorch-2.9-python313", "build", ("pytorch-2.9-python313",)),
    ("resume the build of main", "build", ("main", "--resume")),
    ("release pytorch 2.10", "publish", ("pytorch-2.10-python313",)),
    ("publish main.", "publish", ("main",)),
])
def test_words_map_to_the_slash_commands(text, command, args):
    intent = read(text, BRANCHES)
    assert (intent.command, intent.args) == (command, args)
    assert not intent.missing and not intent.choices


def test_a_version_several_branches_build_asks_which():
    intent = read("release pytorch 2.9", BRANCHES)
    assert intent.command == "publish" and set(intent.choices) == {"pytorch-2.9-python313", "pytorch-2.9-python311"}


@pytest.mark.parametrize("text, usage, missing", [
    ("bump", "/bump <branch|all>", "which branch"),
    ("build nope", "/build <branch>", "no branch 'nope'"),
    ("publish pytorch 3.1", "/publish <branch>", "no branch builds PyTorch 3.1"),
])
def test_a_command_without_enough_words_says_what_is_missing(text, usage, missing):
    intent = read(text, BRANCHES)
    assert intent.usage.startswith(usage) and intent.missing == missing and not intent.args


@pytest.mark.parametrize("text, usage", [
    ("bmup main", "/bump <branch|all>"),
    ("biuld main", "/build <branch>"),
    ("publsh main", "/publish <branch>"),
    ("good morning everyone", "/torchbot help"),
])
def test_what_is_not_understood_gets_the_nearest_command(text, usage):
    intent = read(text, BRANCHES)
    assert intent.command == "unknown" and intent.usage.startswith(usage)


@pytest.mark.parametrize("text, said", [
    ("H100 with Graviton3", True), ("p5.48xlarge", True), ("DGX Spark", True), ("no GPU, EPYC 9654", True),
    ("python 3.12", True), ("good morning everyone", False), ("bmup main", False),
])
def test_hardware_said_tells_a_hardware_question_from_the_rest(text, said):
    assert hardware_said(parse(load_catalog(), text)) is said


def test_the_phrases_are_data_and_every_intent_has_a_usage():
    fillers, table = specs()
    assert {"please", "torchbot"} <= fillers
    assert {s.command for s in table} == {"help", "bump", "build", "publish", "status", "pins", "variant", "dashboard",
                                          "held", "changes"}
    assert all(s.usage.startswith("/") and s.phrases for s in table)
    assert tokens("Which nixpkgs is pytorch-2.9-python313 pinned to?") == [
        "which", "nixpkgs", "is", "pytorch-2.9-python313", "pinned", "to", "?"]
