"""No phantom hardware, as properties over generated input:

- a pasted ``nvidia-smi`` table (Linux, Windows WDDM/TCC, the older 79-column layout; names
  cut off with "..."; any fan, temperature, power and memory values; wrapped by a narrow
  terminal) reads as exactly its GPU rows, and nothing else;
- every CPU model string of the data, alone or beside a GPU, names no GPU that was not named;
- a number in a sentence with a unit or a quantity's words ("6144 MiB", "batch size 7742"),
  even a CPU's model number, names no CPU.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.engine.hardware import parse
from config.catalog_data import load_catalog
from config.cpu_models import load_cpu_models
from tests.support.fixtures_smi import tables

CAT = load_catalog()
# PROPERTY_EXAMPLES=3000 for a deeper run than the suite's
SETTINGS = settings(max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "150")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# nvidia-smi's own spelling of some GPUs (the catalog's names are what people write).
PRINTED = {
    "NVIDIA H100 80GB HBM3": "H100", "NVIDIA H100 PCIe": "H100", "NVIDIA H200": "H200",
    "NVIDIA A100-SXM4-80GB": "A100", "NVIDIA A100-PCIE-40GB": "A100", "NVIDIA A100 80GB PCIe": "A100",
    "Tesla V100-SXM2-16GB": "Tesla V100", "Tesla V100-PCIE-32GB": "Tesla V100", "Tesla T4": "Tesla T4",
    "NVIDIA A10G": "A10G", "NVIDIA L40S": "L40S", "NVIDIA L4": "L4", "NVIDIA A30": "A30",
    "NVIDIA GeForce RTX 4090": "RTX 4090", "NVIDIA GeForce RTX 3090": "RTX 3090",
    "NVIDIA GeForce RTX 3080 Ti": "RTX 3080 Ti",
    "NVIDIA GeForce RTX 5090": "RTX 5090", "NVIDIA RTX A6000": "RTX A6000", "NVIDIA GeForce GTX 1080 Ti": "GTX 1080 Ti",
    "NVIDIA B200": "B200", "NVIDIA GeForce RTX 4070 Ti SUPER": "RTX 4070 Ti Super",
    "NVIDIA GeForce RTX 2080 Ti": "RTX 2080 Ti", "Quadro RTX 8000": "Quadro RTX 8000",
}


def _printed(model: str) -> str:
    if re.match(r"(?:rtx|gtx) \d", model, re.I):
        return f"NVIDIA GeForce {model}"
    if model.split()[0] in ("Tesla", "Quadro", "Jetson", "DGX", "DRIVE", "Titan"):
        return model
    return f"NVIDIA {model}"


# Every catalog GPU as nvidia-smi would print it, and the real spellings above.
NAMES = {**{_printed(m): m for m in CAT.gpu_models}, **PRINTED}
NAMES = {k: v for k, v in NAMES.items() if v is None or v in CAT.gpu_models}


def arch_of(printed: str) -> str | None:
    model = NAMES[printed]
    return CAT.gpu_models[model] if model else None


@SETTINGS
@given(tables(st.sampled_from(sorted(n for n in NAMES if NAMES[n]))))
def test_a_pasted_nvidia_smi_table_reads_as_exactly_its_gpu_rows(table):
    hw = parse(CAT, table.text)
    true_archs = {arch_of(n) for n in table.names}
    seen = sum(g.count or 1 for g in hw.gpus)
    # every GPU read is one of the rows' architectures; nothing else is named
    assert {g.arch for g in hw.gpus} <= true_archs, (hw.gpus, table.names)
    assert (hw.unknown_cpu, hw.gpu_foreign, hw.gpu_unknown_cc, hw.unknown_instance) == ([], None, None, None)
    assert hw.cpu is None or hw.system_cpu is not None  # a system's GPU (GB10) says its CPU
    # a row whose whole name is printed is read as that GPU
    for name, cut in zip(table.names, table.cut, strict=True):
        if not cut:
            assert any(g.name == NAMES[name] for g in hw.gpus), (name, hw.gpus)
    # one GPU per row: a cut-off name is read as what it can be, or asked about, never dropped
    assert seen <= len(table.names) and (seen == len(table.names) or hw.unknown_gpu), (hw.gpus, hw.unknown_gpu)
    if not any(table.cut):
        assert seen == len(table.names) and hw.unknown_gpu == [], (hw.gpus, hw.unknown_gpu)
    if not table.wrapped:
        assert hw.driver == table.driver


def test_a_fan_speed_after_an_na_cell_is_not_an_a30():
    text = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 566.36                 Driver Version: 566.36         CUDA Version: 12.7     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090      WDDM  |   00000000:01:00.0  On |                  N/A |
| 30%   45C    P8             25W /  450W |    1234MiB /  24564MiB |      3%      Default |
+-----------------------------------------+------------------------+----------------------+"""
    hw = parse(CAT, text)
    assert [(g.name, g.arch, g.count) for g in hw.gpus] == [("RTX 4090", "sm89", None)]
    assert hw.os == "windows" and hw.driver == "566.36"


def test_a_wrapped_name_and_a_cut_off_name_are_read_whole():
    wrapped = "|   0  NVIDIA GeForce RTX\n 4090        On  |   00000000:01:00.0  On |                  Off |"
    assert [g.name for g in parse(CAT, wrapped).gpus] == ["RTX 4090"]
    cut = "|   0  NVIDIA GeForce RTX 3080 ...    On  |   00000000:2B:00.0  On |                  N/A |"
    hw = parse(CAT, cut)
    assert [g.arch for g in hw.gpus] == ["sm86"] and any("cut off" in n for n in hw.notes)
    # cut where the models it can be differ in architecture: asked about, not guessed
    ambiguous = "|   0  NVIDIA RTX 6000...  On   | 00000000:00:1E.0 Off |                    0 |"
    hw = parse(CAT, ambiguous)
    assert hw.gpus == [] and hw.unknown_gpu == ["nvidia rtx 6000..."]


def test_numbers_of_lscpu_and_nvidia_smi_q_are_not_gpus():
    lscpu = "Architecture: x86_64\nModel name: Intel(R) Xeon(R) CPU E5-1650 v4 @ 3.60GHz\nCPU max MHz: 3090.0000\n" \
            "BogoMIPS: 4090.12\nL2 cache: 1650 KiB\nno gpu"
    hw = parse(CAT, lscpu)
    assert (hw.gpus, hw.unknown_gpu, hw.no_gpu) == ([], [], True)
    query = "==============NVSMI LOG==============\n\nAttached GPUs : 1\nGPU 00000000:01:00.0\n" \
            "    Product Name                          : NVIDIA A10G\n    FB Memory Usage\n" \
            "        Total                             : 4090 MiB\n    Max Clocks\n        Graphics : 3090 MHz\n"
    assert [(g.name, g.count) for g in parse(CAT, query).gpus] == [("A10G", None)]


# ---------------------------------------------------------------------------------------
# CPU model strings


def _table_strings() -> list[str]:
    """Every listed model number of the model-number tables, with its family's name (and alone
    where the number names the part alone)."""
    out = []
    for fam in load_cpu_models(CAT.data_dir).families:
        for model in fam.models:
            out.append(f"{fam.name} {model}")
            if fam.bare == "all" or (fam.bare == "suffixed" and not model.isdigit()):
                out.append(model)
    return out


TABLE_STRINGS = _table_strings()
RULE_FAMILIES = [f for f in load_cpu_models(CAT.data_dir).families if f.number]


def _cpu_strings():
    """CPU model strings of the data: what each name pattern reads (patterns over folded text),
    every listed model number, and numbers of the numbering rules with their prefix."""
    ascii_text = st.characters(codec="ascii")
    patterns = st.sampled_from(CAT.cpu_models).flatmap(
        lambda m: st.from_regex(re.compile(m.pattern), fullmatch=True, alphabet=ascii_text))
    rules = st.sampled_from(RULE_FAMILIES).flatmap(
        lambda f: st.tuples(st.sampled_from(list(f.prefixes) or [f.name]),
                            st.from_regex(re.compile(f.number), fullmatch=True, alphabet=ascii_text))
        .map(lambda t: f"{t[0]}-{t[1]}" if t[0].islower() else f"{t[0]} {t[1]}"))
    return st.one_of(patterns, st.sampled_from(TABLE_STRINGS), rules)


def test_every_listed_model_number_alone_and_beside_a_gpu_names_only_that_gpu():
    for cpu in TABLE_STRINGS:
        hw = parse(CAT, cpu)
        assert (hw.gpus, hw.unknown_gpu) == ([], []), (cpu, hw.gpus, hw.unknown_gpu)
        hw = parse(CAT, f"RTX 4090 with a {cpu}")
        assert [g.name for g in hw.gpus] == ["RTX 4090"] and hw.unknown_gpu == [], (cpu, hw.gpus, hw.unknown_gpu)


GPUS = st.sampled_from(["RTX 4090", "H100", "A30", "GTX 1650", "RTX 3090", "L4", "Quadro M4000", "T4", "A100"])


@SETTINGS
@given(_cpu_strings())
def test_a_cpu_model_string_alone_names_no_gpu(cpu):
    hw = parse(CAT, cpu)
    if hw.system_cpu is None:  # "grace hopper" is a superchip: a GPU is named
        assert (hw.gpus, hw.unknown_gpu, hw.gpu_arch) == ([], [], None), (cpu, hw.gpus, hw.unknown_gpu)


@SETTINGS
@given(_cpu_strings(), GPUS, st.sampled_from(["{g} with a {c}", "{c} and {g}", "{c}, {g}, no other gpu", "{g} + {c}"]))
def test_a_cpu_model_string_beside_a_gpu_names_only_that_gpu(cpu, gpu, form):
    hw = parse(CAT, form.format(g=gpu, c=cpu))
    if hw.system_cpu is None:
        assert [g.name for g in hw.gpus] == [gpu] and hw.unknown_gpu == [], (cpu, hw.gpus, hw.unknown_gpu)


@pytest.mark.parametrize(("q", "gpu"), [
    ("Quadro M4000 with a Xeon E5-1650 v4", "Quadro M4000"), ("Quadro M4000 and Xeon W-1650", "Quadro M4000"),
    ("Xeon E5-1650 v4, Quadro K2200", "Quadro K2200"), ("an old Quadro M6000 in a Xeon E5-1650 v3 box", "Quadro M6000"),
])
def test_a_model_number_inside_a_xeon_is_not_a_geforce(q, gpu):
    assert [g.name for g in parse(CAT, q).gpus] == [gpu]


# ---------------------------------------------------------------------------------------
# Numbers that are quantities

DIGIT_NUMBERS = sorted(k for k in load_cpu_models(CAT.data_dir).keys if k.isdigit())  # "6144", "7742", "9654"
UNITS = ["MiB", "MB", "GB", "GiB", "KiB", "MHz", "GHz", "MT/s", "W", "watts", "images", "samples", "steps",
         "tokens", "%", "ms", "s", "seconds", "epochs", "iterations", "rows", "files", "RPM", "GB/s", "dollars"]
BEFORE = ["batch size", "batch", "bs", "steps", "seed", "port", "epoch", "iteration", "PID", "id", "step",
          "allocated", "free", "used", "total", "lr warmup", "max_len", "image size", "resolution"]
FILLER = ["I", "have", "with", "my", "the", "a", "of", "about", "using", "and", "per", "run", "on", "for", "box",
          "server", "machine", "RAM", "memory", "dataset", "model", "training", "inference", "at", "is", "it",
          "when", "out", "fails", "loading", "took", "new", "our", "only", "node", "cluster", "laptop"]


@st.composite
def _quantity_sentences(draw):
    number = str(draw(st.one_of(st.sampled_from(DIGIT_NUMBERS), st.integers(100, 99999))))
    words = st.lists(st.sampled_from(FILLER), max_size=4).map(" ".join)
    unit = draw(st.sampled_from(UNITS))
    quantity = draw(st.sampled_from([
        f"{number} {unit}", f"{number}{unit}", f"{draw(st.sampled_from(BEFORE))} {number}",
        f"{draw(st.sampled_from(BEFORE))} = {number}", f"{draw(st.sampled_from(BEFORE))}: {number} {unit}",
    ]))
    gpu = draw(st.one_of(st.just(""), GPUS.map(lambda g: g + ", ")))
    return f"{gpu}{draw(words)} {quantity} {draw(words)}".strip()


@SETTINGS
@given(_quantity_sentences())
def test_a_number_with_a_unit_or_a_quantitys_words_names_no_cpu(text):
    hw = parse(CAT, text)
    assert (hw.cpu, hw.cpu_uarch, hw.cpu_flags, hw.cpu_candidates) == (None, None, None, []), (text, hw.cpu)


def test_no_gpu_name_of_the_catalog_names_a_cpu():
    for gpu in CAT.gpu_models:
        for text in (gpu, f"{gpu} GPU and a processor", f"NVIDIA {gpu}, 6144 MiB", f"a {gpu} in a CPU box"):
            hw = parse(CAT, text)
            if hw.system_cpu is None and "thor" not in gpu.lower():  # superchips and Jetson Thor name their CPU
                assert (hw.cpu, hw.cpu_candidates) == (None, []), (text, hw.cpu)
