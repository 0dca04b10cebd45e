"""`torchbot ask --here`: the machine's own GPUs (NVML, else nvidia-smi) and CPU (/proc/cpuinfo).
NVML is an external library: the tests hand `gather` a stand-in module with NVML's functions
and recorded answers; nvidia-smi is a real executable script printing recorded output."""

import json
import os
import subprocess
import sys
from pathlib import Path

from bot.engine.host import gather
from bot.frontends.commands import ask

ROOT = Path(__file__).resolve().parents[2]

SPR_CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq monitor ssse3 fma cx16 pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 wbnoinvd ida arat avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq rdpid cldemote movdiri movdir64b md_clear serialize amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2
"""  # noqa: E501  (verbatim text)

# A cloud VM that hides the model number: the flags (and archspec) say what it is.
ANONYMOUS_SPR_CPUINFO = SPR_CPUINFO.replace("Intel(R) Xeon(R) Platinum 8480+", "Intel(R) Xeon(R) Processor")

GRACE_CPUINFO = """\
processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh rng bti
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd4f
CPU revision\t: 0
"""  # noqa: E501  (verbatim text)

GRAVITON3_CPUINFO = GRACE_CPUINFO.replace(" sve2 sveaes svepmull svebitperm svesha3 svesm4", "").replace(
    "0xd4f", "0xd40"
)


class FakeNvml:
    """The functions of nvidia-ml-py's `pynvml` that torchbot calls, answering from a list."""

    class NVMLError(Exception):
        pass

    def __init__(self, gpus, driver="550.54.15", fail=False):
        self.gpus, self.driver, self.fail, self.calls = gpus, driver, fail, []

    def nvmlInit(self):
        self.calls.append("init")
        if self.fail:
            raise self.NVMLError("NVML Shared Library Not Found")

    def nvmlShutdown(self):
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, handle):
        return self.gpus[handle][0].encode()  # older nvidia-ml-py releases return bytes

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return self.gpus[handle][1]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def fake_smi(tmp_path, output, code=0):
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\nexit {code}\n")
    script.chmod(0o755)
    return str(script)


def here(ctx, tmp_path, *, nvml=None, smi="/nonexistent/nvidia-smi", cpuinfo=SPR_CPUINFO, wsl=False, extra=""):
    facts = gather(
        nvml=nvml,
        nvidia_smi=smi,
        cpuinfo=write(tmp_path, "cpuinfo", cpuinfo),
        proc_version=write(
            tmp_path, "version", "Linux version 5.15.153.1-microsoft-standard-WSL2" if wsl else "Linux version 6.8.0"
        ),
        use_nvml=nvml is not None,
    )
    return facts, ask(ctx, facts.text + extra, flags_from=facts.cpu_from).to_dict()


def test_h100_and_sapphire_rapids_get_sm90_avx512(ctx, tmp_path):
    nvml = FakeNvml([("NVIDIA H100 80GB HBM3", (9, 0))] * 8)
    facts, d = here(ctx, tmp_path, nvml=nvml)
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm90-avx512"
    hw = d["hardware"]
    assert (hw["gpu"], hw["gpu_count"], hw["driver"], hw["cpu_uarch"]) == ("H100", 8, "550.54.15", "sapphirerapids")
    assert hw["workload"] is None  # avx512_bf16 and amx_int8 in the flags are not "BF16 training"
    assert nvml.calls == ["init", "shutdown"]
    assert any("NVML" in line for line in facts.summary)
    assert "processor\t: 1" not in facts.text  # one cpuinfo block is enough


def test_cpu_without_a_model_number_is_named_from_its_flags_as_a_range(ctx, tmp_path):
    # A cloud VM's "Intel(R) Xeon(R) Processor" with AMX: any generation from Sapphire Rapids on.
    _, d = here(ctx, tmp_path, nvml=FakeNvml([("NVIDIA L4", (8, 9))]), cpuinfo=ANONYMOUS_SPR_CPUINFO)
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm89-avx512"  # the flags decide
    assert d["hardware"]["cpu"] == "a CPU with AMX and AVX-512 BF16 (Sapphire Rapids or newer)"
    assert d["hardware"]["cpu_uarch"] is None  # no one generation is claimed
    assert any("names no model number" in w and "Sapphire Rapids or newer" in w for w in d["warnings"])
    assert not any("Ice Lake" in line for line in d["warnings"] + d["reasons"])


def test_masked_cpu_with_fewer_flags_is_named_by_the_oldest_generation_that_has_them(ctx, tmp_path):
    cascade = ANONYMOUS_SPR_CPUINFO.replace(" amx_bf16", "").replace(" amx_int8", "").replace(" avx512_bf16", "")
    _, d = here(ctx, tmp_path, cpuinfo=cascade)
    assert d["hardware"]["cpu"] == "a CPU with AVX-512 VNNI (Cascade Lake or newer)"
    amd = ANONYMOUS_SPR_CPUINFO.replace("GenuineIntel", "AuthenticAMD")
    amd = amd.replace(" amx_bf16", "").replace(" amx_int8", "")
    _, d = here(ctx, tmp_path, cpuinfo=amd.replace("Intel(R) Xeon(R) Processor", "AMD EPYC Processor"))
    assert d["hardware"]["cpu"] == "a CPU with AVX-512 BF16 and AVX-512 VNNI (Zen 4 or newer)"


def test_ask_here_says_it_read_the_flags_from_the_file_not_from_a_paste(ctx, tmp_path):
    facts, d = here(ctx, tmp_path, nvml=FakeNvml([("NVIDIA H100 80GB HBM3", (9, 0))]), cpuinfo=ANONYMOUS_SPR_CPUINFO)
    said = " ".join(d["reasons"])
    assert f"from the CPU flags in {tmp_path / 'cpuinfo'}" in said and "pasted" not in said
    # The same text pasted into a question is "the pasted CPU flags".
    assert "from the pasted CPU flags" in " ".join(ask(ctx, facts.text).to_dict()["reasons"])


def test_this_machines_proc_cpuinfo_is_named_as_such(tmp_path):
    facts = gather(nvml=FakeNvml([], fail=True), nvidia_smi="/nonexistent/nvidia-smi",
                   proc_version=write(tmp_path, "version", "Linux version 6.8.0"))
    assert facts.cpu_from == "this machine's /proc/cpuinfo"


def test_nvml_failing_falls_back_to_nvidia_smi(ctx, tmp_path):
    smi = fake_smi(tmp_path, "name, compute_cap, driver_version\nNVIDIA A100-SXM4-80GB, 8.0, 535.183.01\n")
    facts, d = here(ctx, tmp_path, nvml=FakeNvml([], fail=True), smi=smi)
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm80-avx512"
    assert d["hardware"]["driver"] == "535.183.01"
    assert any("NVML not usable" in line for line in facts.summary)


def test_no_driver_at_all_is_a_cpu_only_answer_that_says_so(ctx, tmp_path):
    facts, d = here(ctx, tmp_path, nvml=FakeNvml([], fail=True))
    assert d["recommendation"]["package"] == "pytorch-python313-cpu-avx512"
    assert any("no NVIDIA driver" in line for line in facts.summary)


def test_grace_host_with_gh200_gets_armv9(ctx, tmp_path):
    _, d = here(
        ctx, tmp_path, nvml=FakeNvml([("NVIDIA GH200 480GB", (9, 0))], driver="570.124.06"), cpuinfo=GRACE_CPUINFO
    )
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm90-armv9"


def test_graviton3_host_gets_armv8_2_not_armv9(ctx, tmp_path):
    _, d = here(ctx, tmp_path, nvml=FakeNvml([("NVIDIA T4G", (7, 5))]), cpuinfo=GRAVITON3_CPUINFO)
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm75-armv8_2"


def test_mixed_gpus_in_one_host_get_one_answer_per_architecture(ctx, tmp_path):
    nvml = FakeNvml([("NVIDIA H100 PCIe", (9, 0)), ("NVIDIA A100-PCIE-40GB", (8, 0))])
    _, d = here(ctx, tmp_path, nvml=nvml)
    assert d["recommendation"]["gpu_arch"] == "sm80"
    assert any(a["gpu_arch"] == "sm90" and "H100" in a["note"] for a in d["alternatives"])
    assert any("No single variant runs on all" in w for w in d["warnings"])


def test_wsl_host_says_it_runs_the_linux_builds(ctx, tmp_path):
    smi = fake_smi(tmp_path, "name, compute_cap, driver_version\nNVIDIA GeForce RTX 4090, 8.9, 566.36\n")
    _, d = here(ctx, tmp_path, smi=smi, wsl=True)
    assert d["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm89-avx512"
    assert d["hardware"]["os"] == "linux" and d["hardware"]["driver"] == "566.36"
    assert any("WSL2" in w for w in d["warnings"])


def test_a_gpu_newer_than_the_catalog_is_read_by_its_compute_capability(ctx, tmp_path):
    _, d = here(
        ctx, tmp_path, nvml=FakeNvml([("NVIDIA RTX PRO 7000 Blackwell Server Edition", (12, 0))], driver="580.82.07")
    )
    assert d["recommendation"]["gpu_arch"] == "sm120"
    assert any("not in torchbot's GPU list" in w for w in d["warnings"])


def test_cli_ask_here_with_nvidia_smi_and_cpuinfo(tmp_path):
    smi = fake_smi(tmp_path, "name, compute_cap, driver_version\nNVIDIA H100 80GB HBM3, 9.0, 550.54.15\n")
    cpuinfo = write(tmp_path, "cpuinfo", SPR_CPUINFO)
    env = dict(os.environ)
    env.pop("TORCHBOT_REPO_PATH", None)
    base = [sys.executable, "-m", "bot", "ask", "--here", "--no-nvml", "--nvidia-smi", smi, "--cpuinfo", str(cpuinfo)]
    r = subprocess.run(
        [*base, "--json", "python", "3.12"], check=False, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["recommendation"]["package"] == "pytorch-python312-cuda12_8-sm90-avx512"  # the words still count
    r = subprocess.run(base, check=False, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert (
        r.returncode == 0
        and r.stdout.startswith("This machine:")
        and "Use pytorch-python313-cuda12_9-sm90-avx512" in r.stdout
    )
    assert f"from the CPU flags in {cpuinfo}" in r.stdout and "pasted" not in r.stdout


def test_the_chat_help_asks_for_what_ask_here_reads():
    from bot.engine.host import SMI_QUERY
    from bot.frontends.chat import HELP

    assert f"nvidia-smi {' '.join(SMI_QUERY)}" in HELP and "lscpu" in HELP and "torchbot ask --here" in HELP
