"""Parsing pasted tool output and free text into hardware facts."""

import pytest

from bot.engine.hardware import parse
from bot.frontends.commands import ask

NVIDIA_SMI = """\
Tue Nov 18 10:02:11 2025
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""

LSCPU_SPR = """\
Architecture:            x86_64
  CPU op-mode(s):        32-bit, 64-bit
Vendor ID:               GenuineIntel
  Model name:            Intel(R) Xeon(R) Platinum 8480+
    Flags:               fpu vme de pse tsc msr pae mce cx8 apic sep mtrr sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 avx512_vnni amx_bf16 amx_int8
"""  # noqa: E501  (verbatim text)

LSCPU_GRAVITON3 = """\
Architecture:                    aarch64
CPU op-mode(s):                  32-bit, 64-bit
Vendor ID:                       ARM
Model name:                      Neoverse-V1
Flags:                           fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
"""  # noqa: E501  (verbatim text)

CPUINFO_ARM_V2 = """\
processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh rng bti
CPU implementer\t: 0x41
CPU part\t: 0xd4f
"""  # noqa: E501  (verbatim text)

CPUINFO_ALDERLAKE = """\
model name\t: 12th Gen Intel(R) Core(TM) i9-12900K
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand avx2 bmi1 bmi2 avx_vnni
"""  # noqa: E501  (verbatim text)


def test_nvidia_smi_table_gives_gpu_count_and_driver_not_a_cuda_request(cat):
    hw = parse(cat, NVIDIA_SMI)
    assert (hw.gpu, hw.gpu_arch, hw.gpu_count, hw.driver) == ("H100", "sm90", 2, "550.54.15")
    assert hw.cuda is None  # "CUDA Version: 12.4" is what the driver supports


def test_nvidia_smi_csv_compute_cap(cat):
    hw = parse(cat, "name, compute_cap\nNVIDIA RTX A5000, 8.6\n")
    assert (hw.gpu, hw.gpu_arch) == ("RTX A5000", "sm86")
    hw = parse(cat, "compute_cap\n8.9\n")
    assert hw.gpu_arch == "sm89"


def test_lscpu_flags_are_authoritative(cat):
    hw = parse(cat, LSCPU_SPR)
    assert hw.flags_source == "pasted" and hw.cpu_arch == "x86_64"
    assert {"avx512_bf16", "avx512_vnni", "avx512f"} <= hw.cpu_flags
    assert hw.cpu == "Intel Xeon Platinum 8480+ (4th gen Xeon Scalable, Sapphire Rapids)"


def test_graviton3_lscpu_has_sve_but_no_sve2(ctx):
    d = ask(ctx, "H100 on this box:\n" + LSCPU_GRAVITON3).to_dict()
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm90-armv8_2"
    assert "sve" in d["hardware"]["cpu_flags"] and "sve2" not in d["hardware"]["cpu_flags"]


def test_arm_cpuinfo_with_cpu_part(cat, ctx):
    hw = parse(cat, CPUINFO_ARM_V2)
    assert hw.cpu_uarch == "neoverse_v2" and hw.cpu_arch == "aarch64" and "sve2" in hw.cpu_flags
    d = ask(ctx, "no gpu\n" + CPUINFO_ARM_V2).to_dict()
    assert d["recommendation"]["package"] == "pytorch-python313-cpu-armv9"


def test_alder_lake_cpuinfo_avx_vnni_is_not_avx512_vnni(ctx):
    d = ask(ctx, "RTX 4090 int8 inference\n" + CPUINFO_ALDERLAKE).to_dict()
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm89-avx2"
    assert any("avx512_vnni" in w for w in d["warnings"])


def test_pasted_nvidia_smi_and_lscpu_together(ctx):
    d = ask(ctx, NVIDIA_SMI + LSCPU_SPR + "\nbf16 training").to_dict()
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm90-avx512bf16"


@pytest.mark.parametrize(
    "text,field,value",
    [
        ("python3.11", "python", "3.11"),
        ("py312", "python", "3.12"),
        ("Python 3.13", "python", "3.13"),
        ("vllm==0.15.1", "vllm", "0.15.1"),
        ("for vLLM", "vllm", "any"),
        ("R535 driver", "driver", "535"),
        ("driver version: 570.86.10", "driver", "570.86.10"),
        ("torch 2.10", "pytorch", "2.10"),
        ("cuda 12.8", "cuda", "12.8"),
        ("fine-tuning in bf16", "workload", "bf16-training"),
        ("quantized int8 serving", "workload", "int8-inference"),
        ("macOS on Apple Silicon", "os", "macos"),
        ("under WSL2", "os", "linux"),
    ],
)
def test_constraint_words(cat, text, field, value):
    assert getattr(parse(cat, text), field) == value


def test_versions_are_not_mistaken_for_compute_capabilities(cat):
    assert parse(cat, "python 3.12 and cuda 12.8 with driver 535.104").gpu_arch is None
    assert parse(cat, "torch 2.9 on ubuntu 8.6").gpu_arch is None


def test_model_name_spellings(cat):
    for text, model in [
        ("NVIDIA GeForce RTX 3080 Ti", "RTX 3080 Ti"),
        ("rtx-3080ti", "RTX 3080 Ti"),
        ("a 4090", "RTX 4090"),
        ("Tesla V100-SXM2-16GB", "Tesla V100"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("H100 NVL 94GB", "H100"),
        ("NVIDIA GH200 480GB", "GH200"),
    ]:
        assert parse(cat, text).gpu == model, text


@pytest.mark.parametrize(("text", "model", "arch"), [
    # the RTX 4050 exists only as a Laptop GPU (AD107): Ada, never unknown
    ("RTX 4050 Laptop GPU", "RTX 4050", "sm89"),
    ("NVIDIA GeForce RTX 4050 Laptop GPU", "RTX 4050", "sm89"),
    ("NVIDIA GeForce RTX 4060 Laptop GPU", "RTX 4060", "sm89"),
    ("RTX 4070 laptop", "RTX 4070", "sm89"),
    ("RTX 4060 Laptop", "RTX 4060", "sm89"),
    ("RTX 4080 Laptop GPU", "RTX 4080", "sm89"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090", "sm89"),  # AD103, not the desktop AD102, still 8.9
    ("NVIDIA RTX 3500 Ada Generation Laptop GPU", "RTX 3500 Ada", "sm89"),
    ("RTX 500 Ada", "RTX 500 Ada", "sm89"),
    # RTX 50 desktop and Laptop GPUs: consumer Blackwell, 12.0
    ("RTX 5050", "RTX 5050", "sm120"),
    ("NVIDIA GeForce RTX 5050 Laptop GPU", "RTX 5050", "sm120"),
    ("RTX 5060 Laptop GPU", "RTX 5060", "sm120"),
    ("RTX 5070 Ti Laptop GPU", "RTX 5070 Ti", "sm120"),
    ("NVIDIA GeForce RTX 5070 Ti Laptop GPU", "RTX 5070 Ti", "sm120"),
    ("RTX 5070 laptop GPU", "RTX 5070", "sm120"),
    ("RTX 5080 Laptop GPU", "RTX 5080", "sm120"),
    ("NVIDIA GeForce RTX 5090 Laptop GPU", "RTX 5090", "sm120"),
    ("RTX 5090 D", "RTX 5090 D", "sm120"),
    # laptop Ampere: the RTX 2050 is a GA107 despite its number
    ("NVIDIA GeForce RTX 2050", "RTX 2050", "sm86"),
    ("RTX 3050 Ti Laptop GPU", "RTX 3050 Ti", "sm86"),
    ("NVIDIA RTX A1000", "RTX A1000", "sm86"),
])
def test_laptop_and_desktop_gpu_names_read_as_the_architecture_they_are(cat, text, model, arch):
    hw = parse(cat, text)
    assert (hw.gpu, hw.gpu_arch, hw.unknown_gpu) == (model, arch, []), text
