"""CPU model numbers by generation (config/data/cpu_models): every listed model is read as its
family's part and maps to a microarchitecture; the build an answer picks follows that
microarchitecture's flags; a bare number is read only when one vendor's part has it, otherwise
the answer names the candidates and asks; a number of digits ("9654") needs "CPU" or
"processor" beside it or to be a phrase of its own ("9654, no GPU"), since it is far more often a
quantity ("6144 MiB")."""

import re

import pytest

from bot.engine.hardware import parse
from bot.engine.hardware.cpu_table import cpu_table
from bot.frontends.commands import ask
from config.catalog_data import build_catalog, load_catalog
from config.cpu_models import load_cpu_models
from config.errors import CatalogError
from config.settings import Settings
from release.context import Context

CAT = load_catalog()
FAMILIES = load_cpu_models(CAT.data_dir).families
LISTED = [(f, m) for f in FAMILIES for m in f.models]
REC = "pytorch-2.9-python313"


@pytest.fixture(scope="module")
def ctx():
    return Context(Settings(flox_org="acme", repo_path=None))


def expected_isa(flags: frozenset[str], arch: str, workload: str | None = None) -> str | None:
    """The build the hardware facts call for, written from the ISA definitions of cpus.toml:
    x86 AVX-512 (F, DQ, VL, BW) -> avx512, with avx512_bf16 for BF16 training -> avx512bf16,
    with avx512_vnni for INT8 inference -> avx512vnni; AVX2 + FMA + F16C -> avx2; AVX -> avx;
    no AVX -> none. ARM: SVE2 -> armv9; FP16 + dot product -> armv8_2; else none."""
    if arch == "aarch64":
        if {"sve2", "sve"} <= flags:
            return "armv9"
        return "armv8_2" if {"asimd", "fphp", "asimdhp", "asimddp"} <= flags else None
    if "avx" not in flags:
        return None
    if {"avx512f", "avx512dq", "avx512vl", "avx512bw", "avx2", "fma", "f16c"} <= flags:
        if workload == "bf16-training" and "avx512_bf16" in flags:
            return "avx512bf16"
        if workload == "int8-inference" and "avx512_vnni" in flags:
            return "avx512vnni"
        return "avx512"
    return "avx2" if {"avx2", "fma", "f16c"} <= flags else "avx"


def test_the_data_is_large_and_every_family_names_a_known_microarchitecture():
    assert len(LISTED) >= 1000
    for f in FAMILIES:
        assert f.uarch in CAT.uarchs, (f.name, f.generation)
    covered = {f.uarch for f in FAMILIES} | {m.uarch for m in CAT.cpu_models}
    # every x86 and ARM server generation whose features archspec knows has a name torchbot reads
    for key in ("skylake_sp", "cascadelake", "cooperlake", "icelake", "sapphirerapids", "emeraldrapids",
                "graniterapids", "sierraforest", "zen", "zen2", "zen3", "zen4", "zen5", "neoverse_n1",
                "neoverse_v1", "neoverse_v2", "neoverse_n2", "neoverse_v3", "ampereone", "arrowlake",
                "arrowlake_s", "alderlake", "tigerlake", "skylake", "haswell", "broadwell", "cannonlake"):
        assert key in covered, key


def branded(fam, model: str) -> str:
    """The model as a question names it: the family's name and brand words ("Intel Pentium 4410Y")."""
    name = fam.name.lower().split()
    return " ".join([fam.name, *sorted(w for w in fam.words if w not in name and w not in ("intel", "amd")), model])


@pytest.mark.parametrize("fam,model", LISTED, ids=[f"{f.name} {m}" for f, m in LISTED])
def test_every_listed_model_named_with_its_brand_is_its_familys_part(fam, model):
    hw = parse(CAT, branded(fam, model))
    assert hw.cpu_uarch == fam.uarch, (hw.cpu, hw.cpu_candidates, hw.unknown_cpu)
    assert hw.cpu.endswith(f"{model} ({fam.generation})")
    assert not hw.unknown_cpu and not hw.gpus


def test_a_bare_number_is_read_only_when_one_part_has_it_otherwise_the_candidates_are_named():
    uarchs_of: dict[str, set[str]] = {}
    for f, m in LISTED:
        pm = re.fullmatch(r"([a-z]+\d?)-(.+)", m.lower())  # "w9-3495X": the number alone is "3495x"
        number = pm.group(2) if pm else m.lower()
        if f.bare == "all" or (f.bare == "suffixed" and not number.isdigit()):
            uarchs_of.setdefault(number, set()).add(f.uarch)
    shared = {n for n, u in uarchs_of.items() if len(u) > 1}
    assert {"7900x", "3960x", "5500u", "9960x", "4410y"} <= shared  # Intel/AMD, and Xeon/Pentium
    for number, uarchs in uarchs_of.items():
        if number.isdigit():  # digits with a unit are a quantity; alone, or "9654 CPU", the EPYC
            assert parse(CAT, f"{number} MiB").cpu is None, number
        hw = parse(CAT, number)
        if number in shared:
            assert hw.cpu_uarch is None and len(hw.cpu_candidates) == len(uarchs), (number, hw.cpu_candidates)
            assert hw.cpu_flags == frozenset.intersection(*(CAT.uarchs[u].flags for u in uarchs))
        else:
            assert hw.cpu_uarch in uarchs and not hw.cpu_candidates, (number, hw.cpu, hw.cpu_candidates)


@pytest.mark.parametrize("fam,model", LISTED, ids=[f"{f.name} {m}" for f, m in LISTED])
def test_the_cpu_only_build_follows_the_microarchitectures_flags(ctx, fam, model):
    u = CAT.uarchs[fam.uarch]
    d = ask(ctx, f"{fam.name} {model}, no GPU").to_dict()
    want = expected_isa(u.flags, u.arch)
    if want is None:
        assert d["recommendation"] is None and any("lacks" in w for w in d["warnings"]), d["warnings"]
    else:
        assert d["recommendation"]["package"] == f"pytorch-python313-cpu-{want}", (u.key, d["warnings"])


# Microarchitectures named by a pattern of cpus.toml (ARM parts, code names): a name for each.
NAMED = {
    "neoverse_n1": "Graviton2",
    "neoverse_v1": "Graviton3",
    "neoverse_v2": "Graviton4",
    "neoverse_n2": "Cobalt 100",
    "neoverse_v3": "Neoverse V3",
    "nvidia_olympus": "NVIDIA Vera",
    "cortex_x925": "GB10 CPU",
    "ampereone": "AmpereOne",
    "cortex_a72": "Graviton 1",
    "cortex_a76": "Cortex-A76",
    "thunderx2": "ThunderX2",
    "a64fx": "A64FX",
    "zen6": "Zen 6",
    "bulldozer": "FX-8150",
    "nehalem": "Westmere",
    "pentium_noavx": "Pentium G4560",
    "pantherlake": "Core Ultra X7 358H",
    "core2": "Core 2 Quad Q6600",
    "k10": "Phenom II X6 1090T",
    "bobcat": "AMD E-350",
}


def example(uarch: str) -> str:
    fam, model = next(((f, m) for f, m in LISTED if f.uarch == uarch), (None, None))
    return branded(fam, model) if fam else NAMED[uarch]


EXAMPLED = sorted(u for u in {f.uarch for f in FAMILIES} | {m.uarch for m in CAT.cpu_models}
                  if not u.startswith("apple"))  # Apple M-series answers are the macOS build


@pytest.mark.parametrize("uarch", EXAMPLED)
@pytest.mark.parametrize("workload,words", [(None, ""), ("bf16-training", "bf16 training"),
                                            ("int8-inference", "int8 inference")])
def test_the_build_follows_the_flags_of_every_microarchitecture(ctx, uarch, workload, words):
    u = CAT.uarchs[uarch]
    name = example(uarch)
    assert parse(CAT, name).cpu_uarch == uarch, name
    d = ask(ctx, f"{name}, no GPU, {words}").to_dict()
    want = expected_isa(u.flags, u.arch, workload)
    rec = d["recommendation"]
    assert (rec and rec["package"].rsplit("-", 1)[1]) == (want or None), (uarch, d["warnings"])


@pytest.mark.parametrize("q,package,cpu", [
    # the issue's examples: recent AMD HS/HX mobile Ryzen (AVX-512, not the avx2 fallback)
    ("RTX 4070 laptop GPU with a Ryzen 9 7945HX", "pytorch-python313-cuda12_9-sm89-avx512", "Zen 4"),
    ("Ryzen 7 8845HS mini PC, no GPU", "pytorch-python313-cpu-avx512", "Zen 4"),
    ("9955HX laptop with an RTX 5090 laptop GPU", "pytorch-python313-cuda12_9-sm120-avx512", "Zen 5"),
    ("Ryzen 9 7940HS, cpu only, bf16 training", "pytorch-python313-cpu-avx512bf16", "Zen 4"),
    # bare Xeon Scalable numbers without the brand
    ("H100 box, host CPU 8468", "pytorch-python313-cuda12_9-sm90-avx512", "Sapphire Rapids"),
    ("A100 on a 6448Y", "pytorch-python313-cuda12_9-sm80-avx512", "Sapphire Rapids"),
    ("cpu only 8592+ int8 inference", "pytorch-python313-cpu-avx512vnni", "Emerald Rapids"),
    # a bare EPYC number
    ("A100 host with dual 7763", "pytorch-python313-cuda12_9-sm80-avx2", "Milan"),
    ("9654, no GPU", "pytorch-python313-cpu-avx512", "Genoa"),
    ("a 9654 CPU, no GPU", "pytorch-python313-cpu-avx512", "Genoa"),
    ("H100 with a 9654", "pytorch-python313-cuda12_9-sm90-avx512", "Genoa"),
    # a Broadwell Xeon
    ("V100 on a Xeon E5-2686 v4", "pytorch-python311-cuda12_9-sm70-avx2", "Broadwell"),
    ("E5-2680v4 box, cpu only", "pytorch-python313-cpu-avx2", "Broadwell"),
])
def test_the_issues_examples(ctx, q, package, cpu):
    d = ask(ctx, q).to_dict()
    assert d["recommendation"]["package"] == package, d["warnings"]
    assert cpu in d["hardware"]["cpu"] and not d["hardware"]["unknown"]


def test_a_number_two_vendors_share_is_asked_about_with_a_build_both_run(ctx):
    d = ask(ctx, "7900X, no GPU").to_dict()
    assert d["recommendation"]["package"] == "pytorch-python313-cpu-avx512"  # Skylake-X and Zen 4 both have it
    assert any("Intel Core i9-7900X" in q and "AMD Ryzen 7900X" in q for q in d["missing"])
    d = ask(ctx, "3960X, cpu only").to_dict()  # Sandy Bridge-E (AVX) or Threadripper (AVX2): what both run
    assert d["recommendation"]["package"] == "pytorch-python313-cpu-avx" and d["missing"]
    d = ask(ctx, "Threadripper 3960X, cpu only").to_dict()  # the brand decides
    assert d["recommendation"]["package"] == "pytorch-python313-cpu-avx2" and not d["missing"]


def test_a_brand_picks_its_own_part_and_rejects_another_brands_number():
    assert parse(CAT, "Core i9-9900X").cpu_uarch == "skylake_sp"
    assert parse(CAT, "Ryzen 9 9900X").cpu_uarch == "zen5"
    hw = parse(CAT, "Xeon 7763")  # an EPYC number under the Xeon brand: not guessed
    assert hw.cpu_uarch is None and hw.unknown_cpu == ["xeon 7763"]


def test_numbers_that_are_not_cpus_stay_unread():
    for q in ["DDR5-5600 RAM", "BogoMIPS: 4800.00", "python 3.12, cuda 12.4", "two 4090s", "RTX 2080S",
              "driver 535.104", "Xeon E5-1650 v4"]:
        hw = parse(CAT, q)
        assert not hw.cpu_candidates and (hw.cpu is None or "1650 v4" in q), (q, hw.cpu)
    assert parse(CAT, "Xeon E5-1650 v4").cpu_uarch == "broadwell"  # not a Xeon D-1650


def test_no_avx_parts_are_known_as_such(ctx):
    for q in ["Celeron N5105", "Pentium Silver J5005", "Atom C3758", "Celeron J1900", "Pentium Gold G5400",
              "Atom N270"]:
        d = ask(ctx, f"{q} home server, no GPU").to_dict()
        assert d["recommendation"] is None and "avx" not in d["hardware"]["cpu_flags"], q
        assert any("no AVX" in w or "AVX disabled" in w for w in d["warnings"]), (q, d["warnings"])
    assert ask(ctx, "Intel N100 mini PC, no GPU").to_dict()["recommendation"]["package"] == "pytorch-python313-cpu-avx2"


def test_the_compiled_data_is_the_toml_compiled():
    # After editing a cpu_models/*.toml: python -m config.cpu_models
    from config.cpu_models import COMPILED, compiled_text

    assert (CAT.data_dir / "cpu_models" / COMPILED).read_text() == compiled_text(CAT.data_dir)


def test_edited_toml_is_read_even_before_it_is_compiled_again(tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(CAT.data_dir, data)
    toml = data / "cpu_models" / "amd.toml"
    toml.write_text(toml.read_text().replace('"""9965 ', '"""9999 9965 '))
    cat = build_catalog(data)
    assert parse(cat, "EPYC 9999").cpu_uarch == "zen5" and parse(CAT, "EPYC 9999").cpu_uarch is None


def test_a_family_naming_an_unknown_microarchitecture_is_one_clear_error(tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(CAT.data_dir, data)
    (data / "cpu_models" / "zz_bad.toml").write_text(
        '[[family]]\nname = "X"\ngeneration = "Y"\nuarch = "nonesuch"\nbare = "all"\nmodels = "1234"\n'
    )
    with pytest.raises(CatalogError, match="unknown microarchitecture 'nonesuch'"):
        cpu_table(build_catalog(data))


def test_a_family_needing_a_word_it_does_not_have_is_one_clear_error(tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(CAT.data_dir, data)
    (data / "cpu_models" / "zz_bad.toml").write_text(
        '[[family]]\nname = "X"\ngeneration = "Y"\nuarch = "zen4"\nwords = ["amd"]\nneeds = ["gold"]\n'
        'bare = "none"\nnumber = "1234"\n'
    )
    with pytest.raises(CatalogError, match="needs must be among its words"):
        cpu_table(build_catalog(data))


@pytest.mark.parametrize(("q", "name"), [
    ("Ryzen 9 7945HX", "AMD Ryzen 9 7945HX (Zen 4)"),
    ("AMD Ryzen AI 9 HX 370", "AMD Ryzen AI 9 HX 370 (Ryzen AI 300, Strix Point / Krackan Point, Zen 5)"),
    ("Ryzen Threadripper PRO 7995WX", "AMD Ryzen Threadripper PRO 7995WX (Zen 4)"),
    ("Ryzen 7 PRO 7840U", "AMD Ryzen 7 PRO 7840U (Zen 4)"),
    ("Xeon Gold 6248R", "Intel Xeon Gold 6248R (2nd gen Xeon Scalable, Cascade Lake)"),
])
def test_a_cpu_is_named_as_the_question_named_it_tier_included(q, name):
    assert parse(CAT, q).cpu == name
