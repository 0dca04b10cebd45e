"""Numbers and names that look like a CPU of another line are never read as it: a wrong CPU
here means a build that stops with an illegal instruction.

- The Xeon 6300 series (Raptor Lake-E: AVX2, no AVX-512) shares its digits with Ice Lake-SP's
  numbering; that numbering is read only with the tier named ("Xeon Gold 6330").
"""

import pytest

from bot.engine.hardware import parse
from bot.frontends.commands import ask
from config.catalog_data import load_catalog
from config.settings import Settings
from release.context import Context

CAT = load_catalog()
CTX = Context(Settings(flox_org="acme", repo_path=None))


def ask_dict(q: str) -> dict:
    return ask(CTX, q).to_dict()


@pytest.mark.parametrize("q", ["Intel Xeon 6369P", "Xeon(R) 6315P", "Xeon 6 6349P", "Intel(R) Xeon(R) 6341P",
                               "6300P server"])
def test_a_xeon_6300_is_raptor_lake_e_with_avx2_never_ice_lake(q):
    hw = parse(CAT, q)
    assert hw.cpu_uarch == "alderlake" and "Xeon 6300" in hw.cpu, (q, hw.cpu)
    assert "avx512f" not in hw.cpu_flags
    assert ask_dict(f"{q}, no gpu")["recommendation"]["package"] == "pytorch-python313-cpu-avx2"


@pytest.mark.parametrize(("q", "uarch"), [
    ("Xeon Gold 6330", "icelake"),  # listed
    ("Xeon Gold 6399Y", "icelake"),  # not listed: the numbering, with the tier named
    ("Xeon Platinum 8399", "icelake"),
    ("Xeon 6 6530P", "graniterapids"),
    ("Xeon 6399Y", None),  # no tier: not guessed to be Ice Lake
])
def test_ice_lake_sps_numbering_is_read_only_with_the_tier_named(q, uarch):
    assert parse(CAT, q).cpu_uarch == uarch, q


# A number of digits alone is a quantity far more often than a CPU: it names one only with a
# brand word before it, "CPU"/"processor" beside it, "dual" before it, or as a phrase of its own
# in a list of hardware ("9654, no GPU", "H100 with a 9654"), never with a unit after it.
@pytest.mark.parametrize("q", [
    "6144 MiB", "batch size 6144", "7742 images", "8 GB of 6400 MT/s RAM", "RTX 4090, 6144 MiB free",
    "trained 9654 steps on an A100", "8480 W power budget", "I have 7742 images and an RTX 3090",
    "L40S with 8468 MB used", "CUDA out of memory: tried to allocate 6144 MiB", "seed 7742, no GPU",
    "a batch of 6144, on an H100", "epoch 9654 and an A100", "H100 with 6144 MiB free",
])
def test_a_quantity_is_never_a_cpu(q):
    hw = parse(CAT, q)
    assert (hw.cpu, hw.cpu_flags, hw.cpu_candidates) == (None, None, []), (q, hw.cpu)


@pytest.mark.parametrize(("q", "uarch"), [
    ("Xeon 8480+", "sapphirerapids"), ("8480+", "sapphirerapids"), ("EPYC 9654", "zen4"), ("a 9654 CPU", "zen4"),
    ("6248 processor", "cascadelake"), ("A100 host with dual 7763", "zen3"), ("9654P", "zen4"),
    ("Xeon Gold 6144 with 6144 MiB", "skylake_sp"), ("EPYC 9654 at 3700 MHz", "zen4"),
    ("9654", "zen4"), ("9654, no GPU", "zen4"), ("H100 with a 9654", "zen4"), ("L40S + 7763", "zen3"),
    ("A100 host with 7763 and 8 GPUs", "zen3"),
])
def test_a_number_with_cpu_context_is_still_read(q, uarch):
    assert parse(CAT, q).cpu_uarch == uarch, q


# AMD FX and A-series APUs: Bulldozer-family, K10 (Llano) or Jaguar/Puma cores. None has AVX-512,
# only Excavator has AVX2; "A10-7850K" is one CPU, never an A10 GPU beside an "Intel Core 7850K".
@pytest.mark.parametrize(("q", "uarch", "package"), [
    ("AMD A8-7600", "steamroller", "pytorch-python313-cpu-avx"),
    ("A10-7850K", "steamroller", "pytorch-python313-cpu-avx"),
    ("AMD A10 7890K", "steamroller", "pytorch-python313-cpu-avx"),
    ("A10-6800K", "piledriver", "pytorch-python313-cpu-avx"),
    ("AMD A12-9800", "excavator", "pytorch-python313-cpu-avx2"),
    ("A9-9420", "excavator", "pytorch-python313-cpu-avx2"),
    ("AMD FX-8800P", "excavator", "pytorch-python313-cpu-avx2"),
    ("A4-5000", "jaguar", "pytorch-python313-cpu-avx"),
    ("AMD A8-3850", "k10", None),  # Llano: K10 cores, no AVX at all
    ("FX-8350", "piledriver", "pytorch-python313-cpu-avx"),
    ("FX-8150", "bulldozer", "pytorch-python313-cpu-avx"),
])
def test_an_amd_apu_or_fx_is_its_own_core_never_a_ryzen_nor_a_gpu(q, uarch, package):
    hw = parse(CAT, q)
    assert (hw.cpu_uarch, hw.gpus, hw.unknown_gpu) == (uarch, [], []), (q, hw.cpu, hw.gpus)
    assert "avx512f" not in hw.cpu_flags
    rec = ask_dict(f"{q}, no gpu")["recommendation"]
    assert (rec and rec["package"]) == package, q


@pytest.mark.parametrize("q", ["A10-7850K with an RTX 3090", "RTX 3090 in an AMD A8-7600 box",
                               "A10-9999K and an RTX 3090", "AMD A10-9990 and an RTX 3090"])
def test_an_a_series_model_string_names_no_a10_gpu(q):
    hw = parse(CAT, q)
    assert [g.name for g in hw.gpus] == ["RTX 3090"] and hw.unknown_gpu == [], (q, hw.gpus)
    assert hw.cpu_flags is None or "avx512f" not in hw.cpu_flags


def test_an_unknown_a_series_number_is_an_unknown_cpu_asked_about():
    hw = parse(CAT, "A10-9999K, no gpu")
    assert (hw.gpus, hw.unknown_cpu) == ([], ["a10 9999k"])


def test_an_a10_gpu_is_still_an_a10():
    for q in ["A10 24GB", "2x A10", "A10, 2023 model", "A10 with an EPYC 7763"]:
        assert [g.name for g in parse(CAT, q).gpus] == ["A10"], q
