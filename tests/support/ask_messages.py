"""Generated hardware questions with the answer each must get, for the metamorphic and safety
properties (tests/engine/test_ask_generated.py) and the share answered right (bench/ask.py).

A message names a GPU, a CPU and a Python version (each a part of the catalog's data, or a CPU
string as people write it) and is dressed by a random choice of the transformations the answer
must not depend on: the count prefix spelled any way, filler and greetings, word order, case,
units, and a settled earlier machine added in front. Its *canonical* form ("RTX 4090 with AMD
Ryzen 9 9950X python 3.11") is what the answer must equal. ``correction`` names a different part
instead of one of them, taken back or not. Everything comes from ``random.Random`` so a seed gives
the same batch (hypothesis draws the seed in the tests)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from bot.engine.hardware import parse
from bot.engine.select import recommend
from config.catalog_data import load_catalog

CPUS = ["Ryzen 9 9950X", "Ryzen 9 7950X", "Ryzen 7 5800X", "Ryzen 5 3600", "i9-13900K", "i7-8700K", "i7-4790K",
        "Xeon Platinum 8480+", "Xeon Gold 6248", "EPYC 9654", "EPYC 7763", "Threadripper 7980X", "i9-12900K",
        "Xeon w5-2465X", "EPYC 7R13", "Graviton3", "Graviton4", "Grace", "Ampere Altra", "Xeon E5-2698 v4"]
PYTHONS = {"3.11": ["python 3.11", "py311", "Python 3.11", "py 3.11", "python3.11"],
           "3.12": ["python 3.12", "py312", "Python 3.12", "python3.12"],
           "3.13": ["python 3.13", "py313", "Python 3.13"], "": [""]}
GREETINGS = ["", "hi! ", "Hey team, ", "hello, ", "quick question: ", "Morning all. ", "yo "]
FILLER = ["", " thanks!", " cheers", " (asking for a friend)", " Any help appreciated.", " ty", " :)"]
ASKS = ["which build should I use?", "which variant?", "what do I install?", "which package fits?", ""]
JOINS = [" with ", " + ", ", ", " and ", " / ", " on a box with "]
COUNT_WORDS = {2: "two", 4: "four", 8: "eight"}
UNITS = {"gpu": ["", " 24GB", " (80 GB)", " 48 GB"], "cpu": ["", " @ 3.0GHz", ", 64 GB RAM", " (16 cores)"]}
SETTLED = ["Last month's box had {g} and {c}; that one is sorted. The new server has ",
           "Our old workstation ran {g} with {c}, already set up. This one has ",
           "Previously we used {g} + {c}. Now: "]


@dataclass(frozen=True)
class Case:
    text: str
    canonical: str
    gpu: str
    cpu: str
    python: str


@lru_cache(maxsize=1)
def parts() -> tuple[list[str], list[str]]:
    """GPU names read as themselves alone, served on Linux with no CPU of their own; CPU strings
    read as a known microarchitecture."""
    cat = load_catalog()
    gpus = []
    for name in cat.gpu_models:
        hw = parse(cat, f"an {name}")
        if [g.name for g in hw.gpus] != [name] or hw.system_cpu or hw.gpu_arch is None:
            continue
        if not cat.gpu_archs[hw.gpu_arch].served:
            continue
        gpus.append(name)
    cpus = [c for c in CPUS if parse(cat, c).cpu_uarch]
    return gpus, cpus


def canonical(gpu: str, cpu: str, python: str, count: int = 0) -> str:
    return " ".join(x for x in (f"{count}x {gpu}" if count > 1 else gpu, "with", cpu,
                                f"python {python}" if python else "") if x)


def _count(rnd: random.Random, gpu: str, n: int) -> str:
    if n <= 1:
        return gpu
    spelled = rnd.choice(["{n}x{g}", "{n}x {g}", "{n} x {g}", "{n}×{g}", "{n} × {g}", "{g} x{n}", "{w} {g}s",
                          "{n}x {g}s", "{n} {g}s"])
    if "{w}" in spelled and n not in COUNT_WORDS:
        spelled = "{n} {g}s"
    return spelled.format(n=n, g=gpu, w=COUNT_WORDS.get(n, ""))


def message(rnd: random.Random, settled: bool | None = None) -> Case:
    gpus, cpus = parts()
    gpu, cpu = rnd.choice(gpus), rnd.choice(cpus)
    py = rnd.choice(list(PYTHONS))
    n = rnd.choice([0, 0, 1, 2, 4, 8])
    pieces = [_count(rnd, gpu, n) + rnd.choice(UNITS["gpu"]), cpu + rnd.choice(UNITS["cpu"])]
    if py:
        pieces.append(rnd.choice(PYTHONS[py]))
    rnd.shuffle(pieces)
    body = pieces[0] + "".join(rnd.choice(JOINS) + p for p in pieces[1:])
    text = rnd.choice(GREETINGS) + body + ". " + rnd.choice(ASKS) + rnd.choice(FILLER)
    text = rnd.choice([str, str, str.lower, str.upper, str.title])(text)
    if settled or (settled is None and rnd.random() < 0.25):
        g2 = rnd.choice([g for g in gpus if g.lower() not in gpu.lower() and gpu.lower() not in g.lower()])
        c2 = rnd.choice([c for c in cpus if c != cpu])
        text = rnd.choice(SETTLED).format(g=g2, c=c2) + text
    return Case(text.strip(), canonical(gpu, cpu, py, n), gpu, cpu, py)


def answerable(case: Case) -> bool:
    """The canonical message gets a build for that GPU (the pair runs somewhere)."""
    cat = load_catalog()
    ans = recommend(cat, parse(cat, case.canonical))
    hw = ans.hardware
    return ans.recommendation is not None and ans.recommendation.gpu_arch == hw.gpu_arch


def batch(seed: int, size: int) -> list[Case]:
    rnd = random.Random(seed)
    out: list[Case] = []
    while len(out) < size:
        case = message(rnd)
        if answerable(case):
            out.append(case)
    return out


def right(ctx_ask, case: Case) -> bool:
    """The message gets the canonical message's build (package and branch)."""
    def pick(text):
        r = ctx_ask(text).recommendation
        return None if r is None else (r.package, r.branch)
    got = pick(case.text)
    return got is not None and got == pick(case.canonical)


def share(ctx_ask, seed: int = 37, size: int = 400) -> tuple[float, list[Case]]:
    """The share of a fresh batch answered right, and the cases missed."""
    cases = batch(seed, size)
    missed = [c for c in cases if not right(ctx_ask, c)]
    return 1 - len(missed) / len(cases), missed
