"""How ask reads real phrasing: typos (and the words it must leave alone), GPU counts,
pasted output it must not misread, and what it says about names it does not know."""

import random
from pathlib import Path

import pytest

from bot.engine import fuzzy
from bot.engine.hardware import parse
from bot.frontends.commands import ask

GUARD = [w for w in Path(__file__).with_name("guard_corpus.txt").read_text().split() if not w.startswith("#")]


@pytest.mark.parametrize("typo,word", [
    ("pytorhc", "pytorch"), ("pytroch", "pytorch"), ("nvida", "nvidia"), ("nvidai", "nvidia"), ("gravtion", "graviton"),
    ("graviotn", "graviton"), ("threadriper", "threadripper"), ("pyhton", "python"), ("infernce", "inference"),
    ("trainig", "training"), ("saphire", "sapphire"), ("quantised", "quantized"), ("geforece", "geforce"),
    ("neovers", "neoverse"), ("ubunut", "ubuntu"), ("macbok", "macbook"),
])
def test_typos_of_keywords_are_read_as_the_keyword(typo, word):
    assert fuzzy.corrections(f"which build for {typo} please") == {typo: word}


def test_the_guard_corpus_is_never_corrected():
    assert len(GUARD) > 700
    fixed = {w: fuzzy.corrections(w) for w in GUARD}
    assert {w: f for w, f in fixed.items() if f} == {}


def test_sentences_of_guard_words_get_no_recommendation(ctx):
    rng = random.Random(14)
    for _ in range(200):
        d = ask(ctx, " ".join(rng.sample(GUARD, 12))).to_dict()
        assert d["recommendation"] is None, d["query"]
        assert not d["hardware"]["gpus"] and d["hardware"]["cpu"] is None, d["query"]


@pytest.mark.parametrize("q", ["RTX 4900", "H1000", "A1OO with epyc 9654"])
def test_model_numbers_are_never_corrected_into_a_known_model(ctx, q):
    d = ask(ctx, q).to_dict()
    assert d["recommendation"] is None and not d["hardware"]["gpus"]
    assert d["missing"]


@pytest.mark.parametrize("q,count", [
    ("8x H100", 8), ("8xH100 SXM", 8), ("H100 x8", 8), ("H100 ×4", 4), ("a pair of 3090s", 2), ("dual RTX 4090", 2),
    ("quad A100s", 4), ("two L40Ss", 2), ("4 A100s", 4), ("8-way H100 box", 8), ("a couple of A6000s", 2),
    ("python 3.12 H100", None), ("driver 535 A100", None), ("cuda 12 h100", None), ("H100", None),
])
def test_gpu_counts(cat, q, count):
    hw = parse(cat, q)
    assert hw.gpu is not None and hw.gpu_count == count, (q, hw.gpu, hw.gpu_count)


def test_nvidia_smi_rows_are_counted_not_their_indexes(cat):
    rows = "\n".join(f"|   {i}  NVIDIA H100 80GB HBM3          On  |   00000000:{i:02X}:00.0 Off |" for i in range(8))
    hw = parse(cat, rows)
    assert (hw.gpu, hw.gpu_count) == ("H100", 8)


@pytest.mark.parametrize("q,plural", [("L4s", "L4"), ("4090s", "RTX 4090"), ("L40Ss", "L40S"), ("A6000s", "A6000"),
                                      ("H100s", "H100"), ("RTX 3090s", "RTX 3090"), ("T4s", "T4")])
def test_plural_gpu_names(cat, q, plural):
    assert parse(cat, f"we have {q}").gpu == plural


def test_every_catalog_gpu_in_the_plural_with_a_count_is_that_many_of_it(cat):
    """"8 Thors", "2 H100s": any model of the data, in the plural after a count, reads as that
    many of it (a short name without digits like Thor or Orin too)."""
    from bot.engine.hardware.matchers import matchers, token_spans

    m = matchers(cat)
    tried = 0
    for name in cat.gpu_models:
        key = "".join(t for t, _, _ in token_spans(name.lower()))
        if name.lower().endswith("s") or key + "s" in m.gpu:
            continue  # its plural is another name ("L40" + "s" is the L40S)
        if key in m.system:
            continue  # a system (a GH200, a Jetson): its count is of systems, not said as GPUs
        tried += 1
        hw = parse(cat, f"a box with 8 {name}s")
        assert (hw.gpu, hw.gpu_count) == (name, 8), (name, hw.gpu, hw.gpu_count)
    assert tried > 100


def test_flag_names_are_not_workloads(cat):
    for text in ("avx512_bf16 avx512f avx2", "Flags: avx avx2 fma f16c avx512f avx512_bf16 amx_int8",
                 "pytorch-python313-cpu-avx512bf16", "-mavx512bf16", "amx_int8", "svebf16 sve2"):
        assert parse(cat, text).workload is None, text
    assert parse(cat, "bf16 training").workload == "bf16-training"
    assert parse(cat, "int8 serving").workload == "int8-inference"


def test_repeated_cpuinfo_blocks_are_dropped_so_what_follows_is_read(cat):
    block = ("processor\t: {n}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6248\n"
             "flags\t\t: fpu avx avx2 fma f16c\n\n")
    text = "".join(block.format(n=i) for i in range(160)) + "GPU 0: NVIDIA L4 (UUID: GPU-1234)\n"
    assert len(text) > 16_000
    hw = parse(cat, text)
    assert hw.gpu == "L4" and hw.cpu_uarch == "cascadelake"


def test_wsl_driver_is_the_windows_one(cat):
    hw = parse(
        cat,
        "| NVIDIA-SMI 565.57.01    Driver Version: 566.36    CUDA Version: 12.7 |\n"
        "|   0  NVIDIA GeForce RTX 4090  On |",
    )
    assert (hw.driver, hw.os, hw.wsl, hw.cuda) == ("566.36", "linux", True, None)
    native = parse(cat, "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |")
    assert (native.driver, native.wsl) == ("550.54.15", False)


def test_unknown_arm_cpu_is_never_answered_with_x86(ctx):
    for q in ("graviton 5", "no GPU, Axion 2", "Neoverse V4 box, cpu only", "arm64 server, no gpu"):
        d = ask(ctx, q).to_dict()
        rec = d["recommendation"]
        assert rec is None or rec["platform"] == "aarch64-linux", (q, rec)


def test_an_unknown_gpu_never_gets_a_cpu_only_answer(ctx):
    for q in ("H300 + EPYC 9654, int8 serving", "4x RTX 6090 and a 14900K", "nvidia xz90 with graviton4"):
        d = ask(ctx, q).to_dict()
        assert d["recommendation"] is None, q
        assert any("nvidia-smi -L" in m for m in d["missing"]), q


def test_every_instance_pattern_has_a_shape_the_gate_lets_through(cat):
    """The cheap pre-check before the instance search must never hide a real instance name."""
    from bot.engine.hardware.instances import _INSTANCE_GATE_RE

    names = ["p5.48xlarge", "p6e-gb200.36xlarge", "g4dn.xlarge", "c7i-flex.large", "m8i.metal-48xl", "a1.medium",
             "a3-highgpu-8g", "a4x-maxgpu-4g", "c4a-standard-8", "n2-custom-8-32768", "e2-medium", "g4-standard-48",
             "standard_nd96isr_h100_v5", "standard_nc24ads_a100_v4", "nd gb200 v6", "standard_d8ps_v6", "dpsv6",
             "d8ps v6", "dasv6", "e8s_v5", "esv5", "bpsv2", "fsv2", "hbv4", "hb176rs_v4", "hx176rs", "dv3"]
    for name in names:
        assert _INSTANCE_GATE_RE.search(name), name
        assert parse(cat, name).instance == name, name


def test_a_bad_pattern_in_the_data_is_a_sentence_not_a_traceback(tmp_path):
    import shutil

    from bot.engine.hardware.matchers import matchers
    from config.catalog import DATA_DIR
    from config.catalog_data import build_catalog
    from config.errors import CatalogError

    shutil.copytree(DATA_DIR, tmp_path / "data")
    cpus = tmp_path / "data" / "cpus.toml"
    cpus.write_text(cpus.read_text().replace('pattern = "graviton ?4"', 'pattern = "graviton (4"', 1))
    with pytest.raises(CatalogError, match=r"CPU model pattern 'graviton \(4' in the catalog is invalid"):
        matchers(build_catalog(tmp_path / "data"))


def test_a_gpu_that_only_comes_with_an_arm_host_gets_an_arm_build(ctx):
    d = ask(ctx, "T4G, int8 inference").to_dict()
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm75-armv8_2"  # g5g: T4G + Graviton2
