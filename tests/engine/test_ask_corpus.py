"""The real-phrasing corpus (tests/engine/ask_corpus.toml): questions as people type them, each with
the package it must get and the hardware facts that decide it."""

import tomllib
from collections import Counter
from pathlib import Path

import pytest

from bot.frontends.commands import ask
from config.settings import Settings
from release.context import Context

REC = "pytorch-2.9-python313"
CORPUS = tomllib.loads((Path(__file__).with_name("ask_corpus.toml")).read_text())["case"]
CLASSES = {"plurals", "typos", "cpu_models", "cloud", "unknown", "workloads", "cuda", "mixed_wsl", "phantom",
           "clouds_beyond", "systems", "corrections"}


@pytest.fixture(scope="module")
def ctx():
    return Context(Settings(flox_org="acme", repo_path=None))


def test_every_class_has_at_least_15_questions_each_with_a_reason():
    counts = Counter(c["class"] for c in CORPUS)
    assert set(counts) == CLASSES
    assert min(counts.values()) >= 15, counts
    for c in CORPUS:
        assert c["why"].strip() and "\n" not in c["why"], c["q"]
    assert len({c["q"] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[f"{c['class']}:{c['q'][:50]}" for c in CORPUS])
def test_corpus_question_gets_its_answer(ctx, case):
    d = ask(ctx, case["q"]).to_dict()
    rec = d["recommendation"]
    if case["package"]:
        assert rec is not None, (case["why"], d["warnings"], d["missing"])
        assert (rec["package"], rec["branch"]) == (case["package"], case.get("branch", REC)), case["why"]
        assert d["reasons"]
    else:
        assert rec is None, (case["why"], rec)
        assert d["warnings"] or d["missing"]
    said = " ".join(d["warnings"] + d["missing"])
    for words in case.get("says", []):
        assert words in said, (words, d["warnings"], d["missing"])
