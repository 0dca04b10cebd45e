"""What a chat message asks for, in words: help, status, pins, the release commands ("bump
main", "release pytorch 2.9", "build pytorch-2.9-python313"), or a hardware question. Pure and
data-driven: the phrases are ``config/data/chat_intents.toml``; the caller gives the branch
names (and the PyTorch each builds). May import config only.

``read(text, branches)`` returns an :class:`Intent`: the slash command and its words (the chat
dispatcher runs it through the same command layer and Confirm step as the slash command), or
``"unknown"`` with the nearest command's usage; ``hardware_said(hw)`` says whether a message
no intent took names any hardware (it is then a /variant question)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from config.catalog import DATA_DIR

_TOKEN_RE = re.compile(r"[a-z0-9?][a-z0-9._/+-]*|\?")
_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
_REV_RE = re.compile(r"^[0-9a-f]{40}$")
ALL_WORDS = ({"all"}, {"every", "branch"}, {"all", "branches"}, {"everything"})


@dataclass(frozen=True)
class Intent:
    command: str  # help | status | pins | bump | build | publish | dashboard | held | changes | variant | unknown
    args: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()  # several branches fit ("pytorch 2.9"): the user picks one
    usage: str = ""  # the command's usage: said when the words were not enough, or the nearest command
    missing: str = ""  # what the words did not say ("which branch", "no branch builds PyTorch 2.9")


@dataclass(frozen=True)
class _Spec:
    command: str
    how: str
    phrases: tuple[tuple[str, ...], ...]
    usage: str
    all: bool = False
    free: bool = False
    target: bool = False  # a phrase intent that takes the branches the message names
    resume_words: frozenset[str] = field(default_factory=frozenset)


@lru_cache(maxsize=1)
def specs() -> tuple[frozenset[str], tuple[_Spec, ...]]:
    import tomllib

    with (DATA_DIR / "chat_intents.toml").open("rb") as fh:
        data: dict[str, Any] = tomllib.load(fh)
    out = []
    for d in data["intent"]:
        words = d.get("verbs") if d["how"] == "verb" else d["phrases"]
        out.append(_Spec(d["command"], d["how"], tuple(tuple(tokens(p)) for p in words), d["usage"],
                         d.get("all", False), d.get("free", False), d.get("target", False),
                         frozenset(d.get("resume_words", ()))))
    return frozenset(data["fillers"]), tuple(out)


def tokens(text: str) -> list[str]:
    """Lower-case words; branch names, versions and revisions stay whole; end punctuation goes."""
    return [t.rstrip(".,!:;") or t for t in _TOKEN_RE.findall(text.lower())]


def _strip(words: list[str], fillers: frozenset[str]) -> list[str]:
    i = 0
    while i < len(words) and words[i] in fillers:
        i += 1
    rest = words[i:]
    while rest and rest[-1] == "?":
        rest = rest[:-1]
    return rest


def _holds(words: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(words[i:i + n]) == phrase for i in range(len(words) - n + 1))


def read(text: str, branches: dict[str, str | None]) -> Intent:
    """The intent of ``text``; ``branches`` maps each branch name to the PyTorch it builds."""
    fillers, table = specs()
    raw = tokens(text)
    words = _strip(raw, fillers) or [w for w in raw if w != "?"] or raw
    for spec in table:
        if spec.how == "whole" and any(tuple(words) == p or tuple(raw) == p for p in spec.phrases):
            return Intent(spec.command)
        if spec.how == "verb":
            verb = max((p for p in spec.phrases if tuple(words[:len(p)]) == p), key=len, default=None)
            if verb is not None:
                return _with_target(spec, verb, words[len(verb):], branches)
        if spec.how == "phrase" and any(_holds(words, p) for p in spec.phrases):
            if spec.command == "pins" or spec.target:
                found, _versions = _targets(words, branches)
                return Intent(spec.command, tuple(found))
            return Intent(spec.command)
    return Intent("unknown", usage=nearest(words))


def _targets(words: list[str], branches: dict[str, str | None]) -> tuple[list[str], list[str]]:
    """(branch names said, or the branches of a PyTorch version said; the versions said)."""
    named = [w for w in words if w in branches]
    if named:
        return list(dict.fromkeys(named)), []
    prefixed = [b for w in words if w.count("-") and len(w) > 3 for b in branches if b.startswith(w + "-")]
    if prefixed:  # "pytorch-2.9": the branches named so, with more after it
        return list(dict.fromkeys(prefixed)), []
    versions = [w for w in words if _VERSION_RE.match(w)]
    found = [b for v in versions for b, torch in branches.items()
             if torch and (torch == v or torch.startswith(v + "."))]
    return list(dict.fromkeys(found)), versions


def _with_target(spec: _Spec, verb: tuple[str, ...], rest: list[str], branches: dict[str, str | None]) -> Intent:
    if spec.free:
        return Intent(spec.command, tuple(rest), usage=spec.usage, missing="" if rest else "what hardware")
    extra = [w for w in rest if _REV_RE.match(w)] if spec.command == "bump" else []
    if spec.resume_words & (set(rest) | set(verb)):
        extra.append("--resume")
    if spec.all and any(s <= set(rest) for s in ALL_WORDS):
        return Intent(spec.command, ("all", *extra))
    found, versions = _targets(rest, branches)
    if len(found) == 1:
        return Intent(spec.command, (found[0], *extra))
    if len(found) > 1:
        return Intent(spec.command, tuple(extra), choices=tuple(found), usage=spec.usage)
    if versions:
        return Intent(spec.command, usage=spec.usage,
                      missing=f"no branch builds PyTorch {versions[0]}")
    unknown = next((w for w in rest if w not in ("the", "branch", "pytorch", "on", "of", "for", "a")), None)
    return Intent(spec.command, usage=spec.usage,
                  missing=f"no branch '{unknown}'" if unknown else "which branch")


def nearest(words: list[str]) -> str:
    """The usage of the command whose words are closest in spelling to the message's first words
    (``/torchbot help`` when nothing is close)."""
    _fillers, table = specs()
    best, score = "/torchbot help", 0.0
    for spec in table:
        for phrase in spec.phrases:
            said = " ".join(words[:len(phrase)])
            ratio = difflib.SequenceMatcher(a=said, b=" ".join(phrase)).ratio()
            if ratio > score and ratio >= 0.6:
                best, score = spec.usage, ratio
    return best


HARDWARE_FIELDS = ("gpu", "gpu_arch", "gpus", "gpu_foreign", "gpu_unknown_cc", "cpu", "cpu_uarch", "cpu_arch",
                   "cpu_flags", "cpu_candidates", "cpu_ambiguous", "os", "apple_silicon", "workload", "python",
                   "vllm", "driver", "cuda", "pytorch", "instance", "system_cpu", "no_gpu", "unknown_gpu",
                   "gpu_unnamed", "unknown_cpu", "unknown_instance", "stated_flags", "denied_flags")


RELEASE_QUESTIONS = frozenset({"dashboard", "held", "changes"})  # questions about the release, not a machine
DEVICE_FIELDS = ("gpu", "gpu_arch", "gpus", "gpu_foreign", "gpu_unknown_cc", "cpu", "cpu_uarch", "cpu_candidates",
                 "apple_silicon", "instance", "system_cpu", "unknown_gpu", "gpu_unnamed", "unknown_cpu",
                 "unknown_instance")


def device_said(hw) -> bool:
    """Whether the parsed question names a machine (a GPU, CPU, Apple silicon or an instance), not
    only versions (PyTorch, CUDA, Python), which a release question names too."""
    return any(getattr(hw, name, None) not in (None, False, (), [], frozenset(), "") for name in DEVICE_FIELDS)


def may_be_hardware(intent: Intent) -> bool:
    """Whether the message may still be a hardware question (then the caller parses it): no intent
    took it whole, or it is a release question that names no branch."""
    if intent.command == "pins":
        return False
    return intent.command in ("unknown", "variant") or bool(intent.missing) or (
        intent.command in RELEASE_QUESTIONS and not intent.args)


def hardware_question(intent: Intent, hw) -> bool:
    """Whether the message is a /variant question, given what ``hw`` (the parsed message) says: a
    release question only when it names a machine; anything else no intent took when it names any
    hardware at all."""
    if intent.command == "variant":
        return True
    if not may_be_hardware(intent):
        return False
    return device_said(hw) if intent.command in RELEASE_QUESTIONS else hardware_said(hw)


def hardware_said(hw) -> bool:
    """Whether the parsed question (``bot.engine.hardware``'s Hardware) says anything about a
    machine: then it is a /variant question, answered even when it is not enough."""
    return any(getattr(hw, name, None) not in (None, False, (), [], frozenset(), "") for name in HARDWARE_FIELDS)
