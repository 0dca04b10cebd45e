"""Release questions in words, read apart from hardware questions (issue 35), by properties over
generated phrasings: a release question ("why is pytorch-2.10 held?", "what changed since last week?",
"show me the dashboard", "which pin is pytorch-2.9 on?") never falls through to /variant, and a
hardware question, even one dressed in a release word ("last week I got an RTX 4090"), never reads as
a release question. Pure: the intents, the hardware parser and the catalog's data, no repository."""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.engine.hardware import parse
from bot.engine.intents import RELEASE_QUESTIONS, hardware_question, read
from config.catalog_data import load_catalog

# the branch names of the real repositories (build-pytorch, then build-torchvision)
BRANCHES = {"main": "2.8.0", "main-staging": "2.8.0", "pytorch-2.10-python313": "2.10.0",
            "pytorch-2.8-python311": "2.8.0", "pytorch-2.8-python312": "2.8.0", "pytorch-2.9-python311": "2.9.1",
            "pytorch-2.9-python313": "2.9.1", "pytorch-2.9-vllm-0.14.0": "2.9.1", "pytorch-2.9-vllm-0.15.1": "2.9.1",
            "pytorch-2.10": "2.10.0", "pytorch-2.9": "2.9.1"}
NAMES = sorted(BRANCHES)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

HELD = ["why is {b} held", "why is {b} on hold", "why was {b} not bumped", "why wasn't {b} bumped",
        "what is holding back {b}", "is {b} held", "why is the bump of {b} held", "{b} held why",
        "why is {b} blocked", "why did torchbot refuse to bump {b}", "why isn't {b} moving"]
CHANGES = ["what changed since last week", "what has changed this week", "what's new", "whats new this week",
           "what happened last week", "any changes since last week", "changelog", "recent changes please",
           "what changed"]
DASHBOARD = ["show me the dashboard", "dashboard", "the dashboard please", "release status", "where does the release "
             "stand", "how is the release going", "give me the release overview", "open the dashboard"]
PIN = ["which pin is {b} on", "what pin is {b} on", "which nixpkgs is {b} pinned to", "what is {b} pinned to",
       "pins of {b}"]
OPENERS = ["", "@torchbot ", "hey torchbot ", "please ", "can you tell me ", "torchbot, ", "hi "]
ENDS = ["", "?", "??", ".", "!", " ?"]


@lru_cache(maxsize=1)
def catalog():
    return load_catalog()


def phrasing(templates: list[str]):
    """(the message, the branch it names): an opener, a template, an ending, in any case."""
    def make(o, t, b, e, upper):
        text = o + t.format(b=b) + e
        return (text.upper() if upper else text), b
    return st.builds(make, st.sampled_from(OPENERS), st.sampled_from(templates), st.sampled_from(NAMES),
                     st.sampled_from(ENDS), st.booleans())


def routed(text: str) -> str:
    """Where chat sends the message: the intent's command, or variant (as bot.frontends.chat does)."""
    intent = read(text, BRANCHES)
    return "variant" if hardware_question(intent, parse(catalog(), text)) else intent.command


@SETTINGS
@given(phrasing(HELD))
def test_why_held_is_a_release_question_about_that_branch(case):
    text, branch = case
    intent = read(text, BRANCHES)
    assert (intent.command, intent.args) == ("held", (branch,)), (text, intent)
    assert routed(text) == "held"


@SETTINGS
@given(phrasing(CHANGES))
def test_what_changed_is_a_release_question(case):
    assert routed(case[0]) == "changes", case


@SETTINGS
@given(phrasing(DASHBOARD))
def test_the_dashboard_in_words(case):
    assert routed(case[0]) == "dashboard", case


@SETTINGS
@given(phrasing(PIN))
def test_which_pin_is_x_on_names_that_branch_only(case):
    text, branch = case
    intent = read(text, BRANCHES)
    assert routed(text) == "pins" and intent.args == (branch,), (text, intent)


@pytest.mark.parametrize("text, command, args", [
    ("why is pytorch-2.10 held?", "held", ("pytorch-2.10",)),
    ("what changed since last week?", "changes", ()),
    ("show me the dashboard", "dashboard", ()),
    ("which pin is pytorch-2.9 on?", "pins", ("pytorch-2.9",)),
    ("release status", "dashboard", ()),  # not /publish of a branch called "status"
    ("release pytorch-2.9", "publish", ("pytorch-2.9",)),
])
def test_the_issues_questions(text, command, args):
    intent = read(text, BRANCHES)
    assert (intent.command, intent.args) == (command, args) and routed(text) == command


GPUS = ["RTX 4090", "H100", "A100", "L40S", "RTX 3090", "B200", "GH200", "Tesla T4", "RTX 5090", "Jetson AGX Orin"]
HARDWARE = ["which build for an {g}", "I have an {g}, what should I install",
            "last week I bought an {g}, which variant", "what's new for the {g}",
            "my {g} is blocked, which package works", "is the {g} held back by anything",
            "what changed for {g} users", "{g} with python 3.12", "2x {g} on ubuntu",
            "what do I run on a p5.48xlarge this week", "Graviton3 and an {g}"]


@SETTINGS
@given(st.builds(lambda o, t, g, e: o + t.format(g=g) + e, st.sampled_from(OPENERS), st.sampled_from(HARDWARE),
                 st.sampled_from(GPUS), st.sampled_from(ENDS)))
def test_a_hardware_question_never_reads_as_a_release_question(text):
    where = routed(text)
    assert where not in RELEASE_QUESTIONS and where == "variant", (text, where, read(text, BRANCHES))


@pytest.mark.parametrize("text", ["Which NVIDIA GPU do I have?", "H100 with Sapphire Rapids, CUDA 13.1",
                                  "what do I install on an RTX 4090 with python 3.13"])
def test_plain_hardware_questions_still_go_to_variant(text):
    assert routed(text) == "variant"
