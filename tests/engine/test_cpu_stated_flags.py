"""Flags a question states or denies in words. A known model's flags are never added to from
words; a flag the question denies is taken away from them (a hypervisor or the firmware can hide
AVX-512 from a VM) and the answer says so; for a CPU not identified, the guess never counts on
a flag the question denies."""

import pytest

from bot.engine.hardware import parse
from bot.frontends.commands import ask
from config.catalog_data import load_catalog
from config.settings import Settings
from release.context import Context

CAT = load_catalog()
CTX = Context(Settings(flox_org="acme", repo_path=None))


@pytest.mark.parametrize(("q", "package", "hidden"), [
    ("H100 on an 8175M VM, no avx512", "pytorch-python313-cuda12_9-sm90-avx2", "avx512f"),
    ("c5.2xlarge, no avx512", "pytorch-python313-cpu-avx2", "avx512f"),
    ("H100 on a Xeon 8480+ VM where avx512 is masked", "pytorch-python313-cuda12_9-sm90-avx2", "avx512f"),
    ("Xeon Platinum 8480+, no avx512_bf16, no gpu, bf16 training", "pytorch-python313-cpu-avx512", "avx512_bf16"),
    ("EPYC 7763 VM without avx2, no gpu", "pytorch-python313-cpu-avx", "avx2"),
    ("EPYC 9654 in a VM, avx512 disabled, int8 inference, no gpu", "pytorch-python313-cpu-avx2", "avx512_vnni"),
])
def test_a_flag_the_question_denies_is_taken_from_the_known_models_flags_and_said(q, package, hidden):
    d = ask_dict(q)
    assert d["recommendation"]["package"] == package, d["warnings"]
    assert hidden not in d["hardware"]["cpu_flags"]
    assert any("hypervisor or the firmware can hide" in w and hidden in w for w in d["warnings"]), d["warnings"]


def test_denying_avx512_takes_every_avx512_extension_and_leaves_avx2():
    hw = parse(CAT, "Xeon Platinum 8480+, no avx512")
    assert not {f for f in hw.cpu_flags if f.startswith("avx512")}
    assert {"avx", "avx2", "fma", "f16c", "amx_int8"} <= hw.cpu_flags


def test_a_denial_the_model_already_agrees_with_changes_nothing_and_says_nothing():
    hw = parse(CAT, "i9-13900K, no avx512, RTX 4090")
    assert hw.cpu_flags == CAT.uarchs["alderlake"].flags
    assert not any("hypervisor" in n for n in hw.notes)


def test_words_never_add_flags_to_a_known_model():
    d = ask_dict("EPYC 7763 with avx512, no gpu")
    assert d["recommendation"]["package"] == "pytorch-python313-cpu-avx2"
    assert "avx512f" not in d["hardware"]["cpu_flags"]
    assert any("does not implement" in w for w in d["warnings"])


@pytest.mark.parametrize(("q", "package"), [
    ("my cpu has avx2 but no avx512, no gpu", "pytorch-python313-cpu-avx2"),
    ("no gpu, the cpu has no avx2", "pytorch-python313-cpu-avx"),  # the guess steps down, never avx2
    ("A100, the VM's CPU has no avx2", "pytorch-python313-cuda12_9-sm80-avx"),
    ("no gpu, cpu has no avx", ""),  # every x86 build needs AVX
    ("no gpu, no fma on this cpu", "pytorch-python313-cpu-avx"),  # the avx2 build is compiled with -mfma
])
def test_for_a_cpu_not_identified_the_guess_never_counts_on_a_denied_flag(q, package):
    d = ask_dict(q)
    rec = d["recommendation"]
    assert (rec["package"] if rec else "") == package, d["warnings"]


def ask_dict(q: str) -> dict:
    return ask(CTX, q).to_dict()
