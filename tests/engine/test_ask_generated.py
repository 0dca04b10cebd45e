"""Properties over generated questions (tests/support/ask_messages.py), not cases:

- metamorphic: the answer is the canonical message's whatever the filler, greetings, word order,
  case, units, count-prefix spelling, or a settled earlier machine named in front;
- it changes exactly when a correction names a new part (GPU, CPU, count, Python);
- safety, over every generated and corpus question: never CPU-only when an NVIDIA GPU is read, no
  GPU arch newer than the GPU, no CPU ISA the CPU lacks, no build for another CPU architecture,
  and the answer lists what it read.
"""

from __future__ import annotations

import os
import random
import tomllib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.engine.hardware import parse
from bot.engine.select import recommend
from config.catalog_data import load_catalog
from tests.support.ask_messages import ASKS, FILLER, GREETINGS, answerable, canonical, message, parts, right

CAT = load_catalog()
SETTINGS = settings(max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "120")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
CORPUS = [c["q"] for c in tomllib.loads((Path(__file__).with_name("ask_corpus.toml")).read_text())["case"]]


def ask(text):
    return recommend(CAT, parse(CAT, text))


def pick(text):
    r = ask(text).recommendation
    return None if r is None else (r.package, r.branch)


def _case(seed, settled=None):
    rnd = random.Random(seed)
    for _ in range(50):
        case = message(rnd, settled)
        if answerable(case):
            return case
    raise AssertionError("no answerable message in 50 draws")


@SETTINGS
@given(SEEDS)
def test_a_dressed_message_gets_the_canonical_answer(seed):
    case = _case(seed)
    assert right(ask, case), (case.text, case.canonical, pick(case.text), pick(case.canonical))


@SETTINGS
@given(SEEDS)
def test_a_settled_earlier_machine_in_front_changes_nothing(seed):
    case = _case(seed, settled=True)
    assert pick(case.text) == pick(case.canonical), (case.text, case.canonical)
    assert any("left out of this answer" in n for n in parse(CAT, case.text).notes), case.text


def _other(pool, current, seed):
    rnd = random.Random(seed)
    return rnd.choice([p for p in pool if p.lower() not in current.lower() and current.lower() not in p.lower()])


CORRECT_GPU = ["{w} with {c} {p}, no wait, {g}", "{w}, sorry, {g}. {c} {p}", "{c}, {p}, {w} - I meant {g}",
               "not a {w} but a {g}, with {c} {p}"]
CORRECT_CPU = ["{g} with {w} {p}. No wait, that's my other PC, this one has {c}", "{g}, {w}, {p}, sorry, {c}",
               "{g} {p} on {w}, I meant {c}"]


@SETTINGS
@given(SEEDS, st.sampled_from(CORRECT_GPU))
def test_a_gpu_correction_replaces_the_gpu_and_only_it(seed, template):
    case = _case(seed)
    gpus, _ = parts()
    wrong = _other(gpus, case.gpu, seed)
    py = f"python {case.python}" if case.python else ""
    text = template.format(w=wrong, g=case.gpu, c=case.cpu, p=py)
    assert pick(text) == pick(canonical(case.gpu, case.cpu, case.python)), text
    hw = parse(CAT, text)
    assert [g.name for g in hw.gpus] == [case.gpu], text


@SETTINGS
@given(SEEDS, st.sampled_from(CORRECT_CPU))
def test_a_cpu_correction_replaces_the_cpu_and_only_it(seed, template):
    case = _case(seed)
    _, cpus = parts()
    wrong = _other(cpus, case.cpu, seed)
    py = f"python {case.python}" if case.python else ""
    text = template.format(w=wrong, g=case.gpu, c=case.cpu, p=py)
    got, want = ask(text), ask(canonical(case.gpu, case.cpu, case.python))
    assert got.hardware.cpu == want.hardware.cpu and got.hardware.gpu == want.hardware.gpu, text
    assert pick(text) == pick(canonical(case.gpu, case.cpu, case.python)), text


@SETTINGS
@given(SEEDS, st.sampled_from(["3.11", "3.12", "3.13"]), st.sampled_from(["3.11", "3.12", "3.13"]))
def test_a_python_or_count_correction_replaces_only_it(seed, was, now):
    case = _case(seed)
    text = f"{case.gpu} with {case.cpu} python {was}, no wait, python {now}"
    assert pick(text) == pick(canonical(case.gpu, case.cpu, now)), text
    counted = f"4x {case.gpu}, sorry, 8x {case.gpu} with {case.cpu}"
    hw = parse(CAT, counted)
    assert (hw.gpu, hw.gpu_count) == (case.gpu, 8), counted
    assert pick(counted) == pick(canonical(case.gpu, case.cpu, "")), counted


@SETTINGS
@given(SEEDS)
def test_the_answer_changes_when_the_part_named_changes(seed):
    case = _case(seed)
    gpus, _ = parts()
    other = next((g for g in random.Random(seed).sample(gpus, len(gpus))
                  if CAT.gpu_models[g] != CAT.gpu_models[case.gpu]
                  and pick(canonical(g, case.cpu, case.python)) is not None), None)
    if other is None:
        return
    text = case.text.replace(case.gpu, other) if case.gpu in case.text else None
    if text is None or "no wait" in text:
        return
    assert pick(text) == pick(canonical(other, case.cpu, case.python)) != pick(case.canonical), text


# --- safety: never an answer that leaves the GPU idle or cannot run ------------------------

def safe(text: str) -> None:
    ans = ask(text)
    hw, r = ans.hardware, ans.recommendation
    if r is None or r.kind != "pytorch":
        return
    assert ans.read, text  # what was read as what, so a misreading shows
    if hw.gpu_arch and not hw.no_gpu and CAT.gpu_archs[hw.gpu_arch].served:
        assert r.gpu_arch is not None, ("CPU-only build for a named NVIDIA GPU", text)
    if r.gpu_arch and hw.gpu_arch:
        built, has = CAT.gpu_archs[r.gpu_arch].cc, CAT.gpu_archs[hw.gpu_arch].cc
        assert tuple(map(int, built.split("."))) <= tuple(map(int, has.split("."))), (text, built, has)
    if r.cpu_isa and r.cpu_isa in CAT.isas:
        isa = CAT.isas[r.cpu_isa]
        if hw.cpu_arch:
            assert isa.arch == hw.cpu_arch, ("a build for another CPU architecture", text)
        if hw.cpu_flags is not None and hw.flags_source != "stated":
            assert isa.requires <= hw.cpu_flags, ("an ISA above the CPU's", text, r.cpu_isa)
    if hw.os == "macos":
        assert r.platform == "aarch64-darwin" and hw.apple_silicon is not False, ("no build runs on an Intel Mac", text)


@SETTINGS
@given(SEEDS)
def test_no_generated_question_gets_an_answer_that_cannot_run(seed):
    rnd = random.Random(seed)
    for _ in range(3):
        safe(message(rnd).text)


def test_no_corpus_question_gets_an_answer_that_cannot_run():
    for q in CORPUS:
        safe(q)


# --- hosted GPU clouds: a shape's CPU is its source's, or said to be unknown -----------------

BIG_THREE = {"AWS", "GCP", "Azure"}
HOSTED = [i for i in CAT.instances if i.provider not in BIG_THREE and i.gpu is not None]
NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789 ._-/"


@st.composite
def hosted_question(draw):
    """A hosted GPU cloud's shape, its name drawn from the data's own pattern, dressed as in chat."""
    inst = draw(st.sampled_from(HOSTED))
    name = draw(st.from_regex(inst.pattern, fullmatch=True, alphabet=NAME_CHARS).filter(lambda s: len(s) < 60))
    rnd = random.Random(draw(SEEDS))
    words = [w for w in (name, f"on {inst.provider}" if inst.provider.lower() not in name else "") if w]
    text = rnd.choice(GREETINGS) + rnd.choice(["we rent ", "a ", "our ", ""]) + " ".join(words)
    text += ". " + rnd.choice(ASKS) + rnd.choice(FILLER)
    return inst, rnd.choice([str, str.lower, str.upper, str.title])(text)


@SETTINGS
@given(hosted_question())
def test_a_hosted_shape_has_its_sources_cpu_or_says_it_is_unknown(drawn):
    inst, text = drawn
    hw = parse(CAT, text)
    assert hw.instance_provider == inst.provider, (text, hw.instance)
    assert hw.gpu_arch == parse(CAT, inst.gpu).gpu_arch or hw.gpu_foreign == inst.gpu, (text, hw.gpus)
    ans = ask(text)
    r = ans.recommendation
    if inst.cpu is not None:
        assert hw.cpu_uarch == parse(CAT, inst.cpu).cpu_uarch, (text, hw.cpu)
    else:  # never silently assumed: said, and no instruction set beyond the x86-64 baseline
        assert hw.cpu_uarch is None and any("publish" in n and "CPU" in n for n in hw.notes), (text, hw.notes)
        assert r is None or r.cpu_isa in {None, "avx2"}, (text, r.package)
        assert any(x.startswith("CPU unknown") for x in ans.read), (text, ans.read)
    safe(text)
