"""Arbitrary text never breaks `ask`: no exception, valid output, under a second."""

import json
import time

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bot.engine.hardware import parse
from bot.frontends.commands import ask, not_text
from config.errors import UsageError
from config.settings import Settings
from release.context import Context

CTX = Context(Settings(repo_path=None))
ask(CTX, "warm up: H100 with Graviton3")  # catalog and compiled matchers: once per process, not per question
WORDS = st.sampled_from(
    ["H100", "RTX", "4090", "sm_", "8.6", "Graviton", "3", "avx512", "no", "gpu", "python", "3.12", "vllm",
     "p5.48xlarge", "Flags:", "\n", "macOS", "M3", "driver", "535", "bf16", "int8", "EPYC", "9654", "xeon",
     "platinum", "8480+", "cuda", "13.0", "DGX", "Spark", "|", "-", "_", "(", ")", "...", "K80", "Orin"]
)
TEXT = st.one_of(
    st.text(max_size=2000),
    st.lists(WORDS, max_size=200).map(" ".join),
    st.tuples(st.text(max_size=50), st.integers(min_value=1, max_value=1_000_000)).map(
        lambda t: (t[0] or "x") * (t[1] // max(1, len(t[0] or "x")))
    ),
)


def check(text):
    # CPU time of this thread: what the reading costs, not what a loaded machine's other work adds
    start = time.thread_time()
    try:
        answer = ask(CTX, text)
    except UsageError as err:  # control bytes, not text: one line, never a recommendation
        assert not_text(text) and "not text I can read" in str(err), (text[:80], err)
        assert time.thread_time() - start < 1.0
        return
    elapsed = time.thread_time() - start
    d = json.loads(json.dumps(answer.to_dict()))
    assert set(d) == {"query", "hardware", "recommendation", "alternatives", "reasons", "warnings", "missing", "read"}
    assert isinstance(answer.text(), str) and answer.text()
    if d["recommendation"] is None:
        assert d["warnings"] or d["missing"]
    else:
        assert d["recommendation"]["package"] and d["reasons"]
    assert elapsed < 1.0, f"{elapsed:.2f}s for {len(text)} chars"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(TEXT)
def test_any_text_gets_a_valid_answer_fast(text):
    check(text)


def test_one_megabyte_of_text():
    check(("H100 Graviton3 avx512 p5.48xlarge lscpu Flags: avx avx2 " * 20000)[:1_000_000])
    check("\n".join(f"|   {i}  NVIDIA H100 80GB HBM3  On | 0000:{i:02x}:00.0 Off |" for i in range(12000))[:1_000_000])


# --- a message that corrects itself, beside a genuine mixed box ---------------------------

CAT = CTX.catalog


def _names(text):
    return [g.name for g in parse(CAT, text).gpus]


# GPU names read as themselves when named alone (system names and aliases read as another are left out)
GPUS = sorted(n for n in CAT.gpu_models if _names(f"an {n}") == [n])
CORRECTIONS = [
    "{a}, no wait, {b}", "{a}... scratch that, {b}", "I have an {a}, I meant an {b}",
    "it's an {a}, actually it's an {b}",
    "not an {a} but an {b}", "sorry, {b} not {a}", "correction: an {b}, not an {a}", "{n}x {a}, no wait, {n}x {b}",
    "{a} - sorry, {b}", "an {b} instead of an {a}", "my bad, {b} rather than {a}", "{a} oops I mean {b}",
    "I had an {a} but now I have an {b}", "we upgraded from an {a} to an {b}", "I wrote {a} but it's really an {b}",
    "replaced the {a} with an {b}",
]
MIXED = ["an {a} and an {b}", "{n}x {a} plus {k}x {b}", "{a} + {b}", "a box with an {a} and an {b} in it",
         "{n}x {a}, {k}x {b}", "I had an {a} but now I also have an {b}", "an {a} - sorry, I also have an {b}"]
PAIRS = st.tuples(st.sampled_from(GPUS), st.sampled_from(GPUS)).filter(
    lambda p: p[0].lower() not in p[1].lower() and p[1].lower() not in p[0].lower()
)
COUNTS = st.integers(min_value=1, max_value=8)


@settings(max_examples=120, deadline=None)
@given(PAIRS, st.sampled_from(CORRECTIONS), COUNTS)
def test_a_correction_never_yields_a_mixed_gpu_answer(pair, template, n):
    a, b = pair
    text = template.format(a=a, b=b, n=n)
    d = ask(CTX, text).to_dict()
    assert [g["name"] for g in d["hardware"]["gpus"]] == [b], text
    assert d["hardware"]["gpu"] == b
    assert not any("different architectures" in w or "No single variant" in w for w in d["warnings"]), text
    assert f"Read as the {b}: you corrected the {a}." in d["warnings"], (text, d["warnings"])


@settings(max_examples=120, deadline=None)
@given(PAIRS, st.sampled_from(MIXED), COUNTS, COUNTS)
def test_a_genuine_mixed_box_still_names_both_gpus(pair, template, n, k):
    a, b = pair
    text = template.format(a=a, b=b, n=n, k=k)
    assume(_names(f"an {a} and an {b}") == [a, b])  # two names that read apart at all
    d = ask(CTX, text).to_dict()
    assert [g["name"] for g in d["hardware"]["gpus"]] == [a, b], text
    assert not any("you corrected" in w for w in d["warnings"])
    if CAT.gpu_models[a] != CAT.gpu_models[b]:
        assert any("different architectures" in w for w in d["warnings"]), (text, d["warnings"])
