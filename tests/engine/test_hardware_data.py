"""Every GPU cloud shape beyond AWS, GCP and Azure and every system sold by name, checked against
the GPU and CPU its source documents: the GPU's architecture, the CPU's microarchitecture, and the
instruction sets that decide the build. The CPU's flags are looked up (archspec, or the model
tables), never read from the shape's or system's name: a shape's data names a CPU model, and the
question the answer reads is the shape's name alone."""

import re
import tomllib

import pytest

from bot.engine.hardware import parse
from config.catalog import DATA_DIR
from config.catalog_data import load_catalog

CAT = load_catalog()
BIG_THREE = {"AWS", "GCP", "Azure"}

# name as a user types it -> (GPU architecture, or the other accelerator; CPU microarchitecture or
# None when the source does not name one), from each entry's `source`
SHAPES = {
    # Oracle Cloud Infrastructure
    "BM.GPU.H100.8": ("sm90", "sapphirerapids"),
    "BM.GPU.H200.8": ("sm90", "sapphirerapids"),
    "BM.GPU.B200.8": ("sm100", "emeraldrapids"),
    "BM.GPU.GB200.4": ("sm100", "neoverse_v2"),
    "BM.GPU.GB300.4": ("sm103", "neoverse_v2"),
    "BM.GPU.A100-v2.8": ("sm80", "zen3"),
    "BM.GPU4.8": ("sm80", "zen2"),
    "VM.GPU.A10.1": ("sm86", "icelake"),
    "BM.GPU.L40S-NC.4": ("sm89", "sapphirerapids"),
    "BM.GPU.MI300X.8": ("MI300X", "sapphirerapids"),
    "VM.GPU3.2": ("sm70", "skylake_sp"),
    "VM.Standard.A1.Flex": (None, "neoverse_n1"),  # Ampere Altra: "A1" is the CPU's generation, not a GPU
    "VM.Standard.A2.Flex": (None, "ampereone"),  # AmpereOne
    # Lambda
    "gpu_8x_h100_sxm5": ("sm90", None),
    "gpu_1x_h100_pcie": ("sm90", None),
    "gpu_8x_a100_80gb_sxm4": ("sm80", None),
    "gpu_1x_a10": ("sm86", None),
    "gpu_1x_gh200": ("sm90", "neoverse_v2"),
    "gpu_8x_b200_sxm6": ("sm100", None),
    # CoreWeave
    "H100_NVLINK_80GB": ("sm90", "sapphirerapids"),
    # Paperspace
    "A100-80G": ("sm80", None),
    # Hetzner
    "GEX44": ("sm89", "alderlake"),
    "GEX130": ("sm89", "sapphirerapids"),
    # Scaleway (the CPU Type rows of its GPU Instances tables)
    "H100-1-80G": ("sm90", "zen4"),  # AMD EPYC 9334
    "H100-2-80G": ("sm90", "zen4"),
    "H100-SXM-8-80G": ("sm90", "sapphirerapids"),  # Xeon Platinum 8452Y
    "L40S-4-48G": ("sm89", "zen3"),  # AMD EPYC 7413
    "L4-1-24G": ("sm89", "zen3"),
    # Nebius (platforms named "GPU with CPU generation")
    "gpu-h100-sxm 8gpu-128vcpu-1600gb": ("sm90", "sapphirerapids"),
    "gpu-h200-sxm": ("sm90", "sapphirerapids"),
    "gpu-b200-sxm": ("sm100", "emeraldrapids"),
    "gpu-l40s-a": ("sm89", "icelake"),
    "gpu-l40s-d": ("sm89", "zen4"),
    # RunPod (GPU types published, the CPU drawn from a pool: unknown)
    "RunPod H100 SXM": ("sm90", None),
    "RunPod H200 SXM": ("sm90", None),
    "RunPod B200": ("sm100", None),
    "RunPod A100 PCIe": ("sm80", None),
    "RunPod L40S": ("sm89", None),
}
SYSTEMS = {
    "DGX-1": ("sm70", "broadwell"),
    "DGX-2": ("sm70", "skylake_sp"),
    "DGX A100": ("sm80", "zen2"),
    "DGX H100": ("sm90", "sapphirerapids"),
    "DGX H200": ("sm90", "sapphirerapids"),
    "DGX B200": ("sm100", "emeraldrapids"),
    "DGX B300": ("sm103", "graniterapids"),
    "DGX GB200": ("sm100", "neoverse_v2"),
    "DGX GB300": ("sm103", "neoverse_v2"),
    "GB200 NVL72": ("sm100", "neoverse_v2"),
    "GB300 NVL72": ("sm103", "neoverse_v2"),
    "DGX Station": ("sm70", "broadwell"),
    "DGX Station A100": ("sm80", "zen2"),
    "DGX Station GB300": ("sm103", "neoverse_v2"),
    "HGX H100": ("sm90", None),
    "HGX H200": ("sm90", None),
    "HGX B200": ("sm100", None),
    "HGX B300": ("sm103", None),
    "Jetson AGX Orin": ("sm87", "cortex_a76"),
    "Jetson Orin Nano": ("sm87", "cortex_a76"),
    "Jetson Orin NX": ("sm87", "cortex_a76"),
    "IGX Orin": ("sm87", "cortex_a76"),
    "IGX Thor": ("sm110", "neoverse_v3"),
}
# Superchips and modules of gpus.toml [systems], named the same way.
SUPERCHIPS = {
    "GH200": ("sm90", "neoverse_v2"),
    "GB200": ("sm100", "neoverse_v2"),
    "GB300": ("sm103", "neoverse_v2"),
    "DGX Spark": ("sm121", "cortex_x925"),
    "Jetson AGX Thor": ("sm110", "neoverse_v3"),
}
# What each microarchitecture must and must not have, as the variants' ISAs need it.
HAS = {
    "sapphirerapids": ({"avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}, set()),
    "emeraldrapids": ({"avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}, set()),
    "graniterapids": ({"avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}, set()),
    "icelake": ({"avx512f", "avx512_vnni"}, {"avx512_bf16"}),
    "skylake_sp": ({"avx512f"}, {"avx512_vnni", "avx512_bf16"}),
    "zen2": ({"avx2"}, {"avx512f"}),
    "zen3": ({"avx2"}, {"avx512f"}),
    "zen4": ({"avx512f", "avx512_vnni", "avx512_bf16"}, set()),
    "broadwell": ({"avx2"}, {"avx512f"}),
    "alderlake": ({"avx2"}, {"avx512f"}),
    "neoverse_v2": ({"sve2"}, set()),
    "neoverse_v3": ({"sve2"}, set()),
    "cortex_a76": ({"asimddp"}, {"sve", "sve2"}),
    "cortex_x925": ({"sve2"}, set()),
    "neoverse_n1": ({"asimddp"}, {"sve", "sve2"}),  # archspec: Neoverse N1 is ARMv8.2, no SVE
    "ampereone": ({"asimddp"}, {"sve", "sve2"}),  # archspec ampere1: ARMv8.6, no SVE
}


def _toml(name):
    with (DATA_DIR / name).open("rb") as fh:
        return tomllib.load(fh)


@pytest.mark.parametrize(("name", "facts"), [*SHAPES.items(), *SYSTEMS.items(), *SUPERCHIPS.items()])
def test_shape_or_system_has_its_sources_gpu_and_cpu(name, facts):
    gpu, uarch = facts
    hw = parse(CAT, name)
    if gpu is None:  # a CPU-only shape
        assert hw.gpu_arch is None and hw.gpu_foreign is None and hw.instance_gpu_less, (name, hw.gpus)
    elif gpu.startswith("sm"):
        assert hw.gpu_arch == gpu, (name, hw.gpus)
    else:
        assert hw.gpu_arch is None and hw.gpu_foreign == gpu, name
    assert hw.cpu_uarch == uarch, (name, hw.cpu)
    if uarch is None:  # the source names no CPU: the answer says so rather than guess
        assert any("CPU" in n and ("publish" in n or "server maker" in n) for n in hw.notes), hw.notes
        return
    # the flags are the microarchitecture's (archspec's, or the data's for one archspec lacks)
    assert hw.flags_source == "model" and hw.cpu_flags == CAT.uarchs[uarch].flags, name
    must, never = HAS[uarch]
    assert must <= hw.cpu_flags and not never & hw.cpu_flags, (name, sorted(hw.cpu_flags))


def test_every_shape_beyond_the_big_three_and_every_system_is_checked_and_sourced():
    beyond = [i for i in _toml("instances.toml")["instance"] if i["provider"] not in BIG_THREE]
    for i in beyond:
        assert any(re.fullmatch(i["pattern"], n.lower()) for n in SHAPES), f"no fact checks {i['pattern']}"
        assert i.get("source", "").startswith("https://"), i["pattern"]
        assert "cpu" in i or "publish" in i.get("note", ""), i["pattern"]  # no CPU: the note says why
    assert all(parse(CAT, n).instance_provider not in BIG_THREE for n in SHAPES)
    systems = _toml("systems.toml")["system"]
    assert {s["name"] for s in systems} == set(SYSTEMS)
    for s in systems:
        assert s["source"].startswith("https://"), s["name"]
        assert "cpu" in s or "server maker" in s.get("note", ""), s["name"]


def test_a_cpu_in_the_data_is_a_model_the_cpu_data_knows():
    """A shape's or system's CPU resolves to one microarchitecture through the CPU data."""
    cpus = {i["cpu"] for i in _toml("instances.toml")["instance"] if "cpu" in i}
    cpus |= {s["cpu"] for s in _toml("systems.toml")["system"] if "cpu" in s}
    for cpu in sorted(cpus):
        hw = parse(CAT, cpu)
        assert hw.cpu_uarch in CAT.uarchs, cpu
