"""`ask`: the seeds' scenarios and defaults (with the hardware corrections) and further
hardware questions. Each case names the package and branch it must get, or None, and
words its warnings must contain."""

import pytest

from bot.frontends.commands import ask
from config.settings import Settings
from release.context import Context

REC = "pytorch-2.9-python313"


@pytest.fixture(scope="module")
def ctx():
    return Context(Settings(flox_org="acme", repo_path=None))


def answer(ctx, q):
    return ask(ctx, q).to_dict()


def pkg(d):
    return d["recommendation"]["package"] if d["recommendation"] else None


# (question, package, branch, substrings that must appear in warnings)
SEED_CASES = [
    # Seed default "AWS with H100 + Graviton3: sm90-armv9" is wrong: Neoverse V1 has no SVE2.
    ("which variant for an H100 with Graviton3", "pytorch-python313-cuda12_9-sm90-armv8_2", REC, ["SVE2"]),
    ("Scenario 4: AWS Graviton3 + H100", "pytorch-python313-cuda12_9-sm90-armv8_2", REC, ["SVE2"]),
    # Scenario 1: i9-12900K is Alder Lake: AVX-512 fused off.
    ("RTX 3090 + Intel i9-12900K", "pytorch-python313-cuda12_9-sm86-avx2", REC, ["AVX-512 disabled"]),
    # Scenario 2: H100 + EPYC Zen 4, training (FP32 -> avx512) and INT8 inference (-> vnni).
    ("H100 Datacenter + AMD EPYC Zen 4 for training", "pytorch-python313-cuda12_9-sm90-avx512", REC, []),
    ("H100 + AMD EPYC Zen 4, INT8 inference", "pytorch-python313-cuda12_9-sm90-avx512vnni", REC, []),
    # Scenario 3: development laptop with no GPU, CPU unknown -> cpu-avx2 with what to check.
    ("Development laptop (no GPU)", "pytorch-python313-cpu-avx2", REC, ["avx512f"]),
    # Scenario 5: MacBook Pro M3.
    ("MacBook Pro M3", "pytorch-python313-darwin-mps", REC, []),
    # Defaults: RTX 3090 workstation with an unspecified Intel i9/Xeon -> avx2 unless flags say more.
    ("RTX 3090 Workstation (Intel i9)", "pytorch-python313-cuda12_9-sm86-avx2", REC, ["CPU not identified"]),
    ("H100 Datacenter (x86-64)", "pytorch-python313-cuda12_9-sm90-avx2", REC, ["CPU not identified"]),
    ("RTX 5090 Gaming PC", "pytorch-python313-cuda12_9-sm120-avx2", REC, ["CPU not identified"]),
    (
        "Inference Server (INT8 models) with RTX 3090 and Xeon Gold 6248",
        "pytorch-python313-cuda12_9-sm86-avx512vnni",
        REC,
        [],
    ),
    # L40S is Ada (8.9), not Hopper.
    ("L40S with Xeon Platinum 8480+", "pytorch-python313-cuda12_9-sm89-avx512", REC, ["Ada Lovelace"]),
    # AVX-512 VNNI starts with Cascade Lake, not Skylake-SP.
    ("T4 with Xeon Gold 6148 for int8 inference", "pytorch-python313-cuda12_9-sm75-avx512", REC, ["avx512_vnni"]),
    # Orin is SM87, not SM110: not supported.
    ("Jetson AGX Orin", None, None, ["8.7"]),
]

CASES = [
    # cloud instances (GPU and CPU facts)
    ("p5.48xlarge", "pytorch-python313-cuda12_9-sm90-avx2", REC, []),  # EPYC 7R13 Milan: no AVX-512
    ("p4d.24xlarge", "pytorch-python313-cuda12_9-sm80-avx512", REC, []),  # Cascade Lake
    ("g5.xlarge", "pytorch-python313-cuda12_9-sm86-avx2", REC, []),  # A10G + Zen 2
    ("g5g.2xlarge", "pytorch-python313-cuda12_9-sm75-armv8_2", REC, []),  # T4G + Graviton2
    ("g4dn.xlarge int8 inference", "pytorch-python313-cuda12_9-sm75-avx512vnni", REC, []),
    ("g6e.12xlarge", "pytorch-python313-cuda12_9-sm89-avx2", REC, []),  # L40S + Milan
    ("a3-highgpu-8g with bf16 training on the CPU", "pytorch-python313-cuda12_9-sm90-avx512bf16", REC, []),
    ("a2-ultragpu-8g", "pytorch-python313-cuda12_9-sm80-avx512", REC, []),
    ("g2-standard-24", "pytorch-python313-cuda12_9-sm89-avx512", REC, []),
    ("p6-b200.48xlarge", "pytorch-python313-cuda12_9-sm100-avx512", REC, []),
    ("Standard_NC24ads_A100_v4", "pytorch-python313-cuda12_9-sm80-avx2", REC, []),  # EPYC 7V13
    ("p3.2xlarge", "pytorch-python311-cuda12_9-sm70-avx2", "pytorch-2.9-python311", []),  # V100 only on py3.11/3.12
    ("p2.xlarge", None, None, ["K80"]),
    ("g4ad.xlarge", None, None, ["not an NVIDIA GPU"]),
    # superchips and appliances
    ("GH200", "pytorch-python313-cuda12_9-sm90-armv9", REC, []),
    ("GB200 NVL72", "pytorch-python313-cuda12_9-sm100-armv9", REC, []),
    ("DGX Spark", "pytorch-python313-cuda13_1-sm121-armv9", "pytorch-2.10-python313", ["580"]),
    ("Jetson AGX Thor", "pytorch-python313-cuda13_1-sm110-armv9", "pytorch-2.10-python313", []),
    ("Jetson AGX Thor cuda 13.0", "pytorch-python313-cuda13_0-sm110-armv9", "pytorch-2.10-python313", []),
    ("B300 with Grace", "pytorch-python313-cuda12_9-sm103-armv9", REC, []),
    ("DGX A100", "pytorch-python313-cuda12_9-sm80-avx2", REC, []),  # EPYC 7742 (Rome)
    # GPU names in many spellings
    ("NVIDIA GeForce RTX 4090 + Ryzen 9 7950X", "pytorch-python313-cuda12_9-sm89-avx512", REC, []),
    ("rtx4090 with a ryzen 9 5950x", "pytorch-python313-cuda12_9-sm89-avx2", REC, []),
    ("A100-SXM4-80GB and EPYC 7763", "pytorch-python313-cuda12_9-sm80-avx2", REC, []),
    ("compute capability 8.6 on an i7-6700K", "pytorch-python313-cuda12_9-sm86-avx2", REC, []),
    ("sm_120 with Zen 5", "pytorch-python313-cuda12_9-sm120-avx512", REC, []),
    ("GTX 1080 Ti on an i7-2600K", "pytorch-python313-cuda12_9-sm61-avx", REC, ["cuDNN", "FBGEMM"]),
    ("GTX 1070 with Xeon Platinum 8480+", "pytorch-python313-cuda12_9-sm61-avx2", REC, []),  # SM61 has only avx/avx2
    ("Tesla P100", None, None, ["6.0"]),
    ("RTX A6000 with Graviton4", "pytorch-python313-cuda12_9-sm86-armv9", REC, []),
    # constraints pick the branch
    ("H100 with python 3.12", "pytorch-python312-cuda12_8-sm90-avx2", "pytorch-2.8-python312", []),
    ("H100 for vllm 0.14", "pytorch-python312-cuda12_9-sm90-avx2", "pytorch-2.9-vllm-0.14.0", []),
    ("A100, vLLM 0.15.1, Sapphire Rapids", "pytorch-python313-cuda12_9-sm80-avx512", "pytorch-2.9-vllm-0.15.1", []),
    ("B300 python 3.11", "pytorch-python311-cuda12_9-sm103-avx2", "pytorch-2.9-python311", []),
    ("V100 python 3.13", None, None, ["SM70"]),
    ("RTX 5090 pytorch 2.10 with zen 4", "pytorch-python313-cuda13_1-sm120-avx512", "pytorch-2.10-python313", []),
    (
        "H100 with Sapphire Rapids, CUDA 13.1",
        "pytorch-python313-cuda13_1-sm90-avx512",
        "pytorch-2.10-python313",
        ["580"],
    ),
    ("GB200 pytorch 2.10 cuda 13.1", "pytorch-python313-cuda13_1-sm100-armv9", "pytorch-2.10-python313", []),
    ("RTX 5090, driver 560", None, None, ["too old"]),
    # 2.10 holds CUDA 12.9/12.8 groups too: driver 550 runs those, not 13.x
    ("H100 driver 550.54.15 pytorch 2.10", "pytorch-python313-cuda12_9-sm90-avx2", "pytorch-2.10-python313", []),
    ("H100 driver 550.54.15 cuda 13.1", None, None, ["too old"]),
    ("DGX Spark driver 570", None, None, ["too old"]),
    ("A100 cuda 12.8 python 3.13", "pytorch-python313-cuda12_8-sm80-avx2", "main", []),
    # CPU-only and macOS
    ("no GPU, Xeon Gold 6248 int8 inference", "pytorch-python313-cpu-avx512vnni", REC, []),
    ("cpu only on an i7-3770K", "pytorch-python313-cpu-avx", REC, ["FBGEMM"]),
    ("cpu only on an i7-3770K python 3.12", "pytorch-python312-cpu-avx", "pytorch-2.9-vllm-0.14.0", []),
    ("no GPU, Graviton3", "pytorch-python313-cpu-armv8_2", REC, []),
    ("no gpu on an i7-920", None, None, ["lacks AVX"]),
    ("Raspberry Pi 4, no GPU", None, None, ["dot-product"]),
    ("Intel MacBook Pro", None, None, ["Intel Macs"]),
    ("mac studio m2 ultra, python 3.12", "pytorch-python312-darwin-mps", "pytorch-2.8-python312", []),
    ("macOS with an H100 eGPU?", "pytorch-python313-darwin-mps", REC, ["macOS has no NVIDIA"]),
    ("Xeon Phi 7250, cpu only", "pytorch-python313-cpu-avx2", REC, ["DQ/VL/BW"]),
    # no usable hardware
    ("hello there", None, None, []),
    ("python 3.12 please", None, None, []),
    ("MI300X", None, None, ["not an NVIDIA GPU"]),
    ("compute capability 4.2", None, None, ["not a known NVIDIA architecture"]),
]


@pytest.mark.parametrize("question,package,branch,warns", SEED_CASES + CASES, ids=[c[0] for c in SEED_CASES + CASES])
def test_answer(ctx, question, package, branch, warns):
    d = answer(ctx, question)
    assert pkg(d) == package, d
    if package:
        r = d["recommendation"]
        assert r["branch"] == branch
        assert r["build_command"] == f"git checkout {branch} && flox build {package}"
        assert r["install_command"] == f"flox install acme/{package}"
        assert d["reasons"]
    else:
        assert d["warnings"] or d["missing"]
    text = " ".join(d["warnings"])
    for w in warns:
        assert w in text, (w, d["warnings"])


@pytest.mark.parametrize("q", ["hi, which one should I use?", "hello", "bf16 training please", "python 3.12?",
                               "Radeon RX 7900 XTX", "an MI300X", "Gaudi 3"])
def test_bad_input_gets_one_line_and_no_answer(ctx, q):
    a = ask(ctx, q)
    d = a.to_dict()
    assert d["recommendation"] is None and not d["alternatives"] and not d["missing"]
    assert len(d["warnings"]) == 1 and a.text() == d["warnings"][0] and "\n" not in a.text()
    if "Radeon" in q or "MI300X" in q or "Gaudi" in q:
        assert "is not an NVIDIA GPU" in a.text() and "CPU-only" in a.text()
    else:
        assert "nvidia-smi" in a.text() and "lscpu" in a.text()


@pytest.mark.parametrize("q", ["No NVIDIA, I want the CPU-only build. I have a Radeon RX 7900 XTX and Ryzen 7 7700X",
                               "cpu only please: Radeon RX 6800 + Ryzen 9 5950X"])
def test_a_cpu_only_request_beside_a_non_nvidia_gpu_gets_the_cpu_build(ctx, q):
    d = answer(ctx, q)
    assert d["recommendation"]["gpu_arch"] is None and d["recommendation"]["cpu_isa"]
    assert any("is not used" in w for w in d["warnings"])


def test_unknown_cpu_offers_the_avx512_build_as_an_alternative(ctx):
    d = answer(ctx, "H100")
    alts = {a["package"]: a["note"] for a in d["alternatives"]}
    assert "pytorch-python313-cuda12_9-sm90-avx512" in alts
    assert "avx512f" in alts["pytorch-python313-cuda12_9-sm90-avx512"]


def test_prose_that_contradicts_the_chip_gets_a_warning(ctx):
    d = answer(ctx, "H100 + Graviton3 (lscpu | grep sve2 found, Graviton3 has SVE2)")
    assert pkg(d) == "pytorch-python313-cuda12_9-sm90-armv8_2"
    assert any("does not implement" in w for w in d["warnings"])


def test_json_contract_shape(ctx):
    d = answer(ctx, "p5.48xlarge")
    assert set(d) == {"query", "hardware", "recommendation", "alternatives", "reasons", "warnings", "missing", "read"}
    hw = d["hardware"]
    for key in ("gpu", "gpu_arch", "cpu", "cpu_flags", "os", "workload", "python"):
        assert key in hw
    assert hw["gpu"] == "H100" and hw["gpu_arch"] == "sm90" and hw["instance"] == "p5.48xlarge"
    assert isinstance(hw["cpu_flags"], list) and "avx2" in hw["cpu_flags"]
    r = d["recommendation"]
    assert set(r) >= {"package", "branch", "gpu_arch", "cpu_isa", "cuda", "python", "pytorch", "platform",
                      "build_command", "install_command"}
    assert (r["gpu_arch"], r["cpu_isa"], r["cuda"], r["python"], r["pytorch"], r["platform"]) == (
        "sm90", "avx2", "12.9", "3.13", "2.9.1", "x86_64-linux")
    for a in d["alternatives"]:
        assert set(a) >= set(r)
