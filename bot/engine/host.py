"""This machine's GPUs and CPU, for ``torchbot ask --here``: the adapter to NVML, ``nvidia-smi``
and ``/proc``. May import nothing of torchbot.

It writes the facts as the text a user would paste (the chat help asks for the same commands),
so one parser reads both:

    name, compute_cap, driver_version          <- nvidia-smi --query-gpu=... --format=csv
    NVIDIA H100 80GB HBM3, 9.0, 550.54.15
    vendor_id : GenuineIntel                   <- the first block of /proc/cpuinfo
    model name : Intel(R) Xeon(R) Platinum 8480+
    flags : fpu vme ... avx512_bf16 amx_int8

GPUs come from NVML (nvidia-ml-py), falling back to ``nvidia-smi`` when the NVML library
cannot be loaded. Every source is a parameter: an NVML module, the nvidia-smi command, the
cpuinfo and /proc/version paths, so tests feed recorded outputs.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SMI_QUERY = ["--query-gpu=name,compute_cap,driver_version", "--format=csv"]
CSV_HEADER = "name, compute_cap, driver_version"


@dataclass
class HostFacts:
    text: str  # what `ask` reads
    summary: list[str] = field(default_factory=list)  # what was found, and from where
    cpu_from: str | None = None  # where the CPU's flags were read ("this machine's /proc/cpuinfo")


def _str(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_gpus(nvml=None) -> list[str]:
    """CSV rows (name, compute_cap, driver_version) from NVML. Raises when NVML is unusable."""
    if nvml is None:
        import pynvml as nvml
    nvml.nvmlInit()
    try:
        driver = _str(nvml.nvmlSystemGetDriverVersion())
        rows = []
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            rows.append(f"{_str(nvml.nvmlDeviceGetName(handle))}, {major}.{minor}, {driver}")
        return rows
    finally:
        nvml.nvmlShutdown()


def smi_gpus(command: str = "nvidia-smi", timeout: float = 20.0) -> list[str]:
    """CSV rows from ``nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv``.
    Raises OSError / subprocess errors when it cannot run."""
    out = subprocess.run([command, *SMI_QUERY], capture_output=True, text=True, timeout=timeout, check=True).stdout
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return [line for line in lines if not line.lower().startswith("name")]


def cpu_block(cpuinfo: Path) -> str:
    """The first processor block of /proc/cpuinfo (the others repeat it per core)."""
    lines = []
    with cpuinfo.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                if lines:
                    break
                continue
            lines.append(line.rstrip("\n"))
    return "\n".join(lines)


def gather(
    nvml=None,
    nvidia_smi: str = "nvidia-smi",
    cpuinfo: Path = Path("/proc/cpuinfo"),
    proc_version: Path = Path("/proc/version"),
    use_nvml: bool = True,
) -> HostFacts:
    facts = HostFacts(text="")
    parts: list[str] = []
    rows: list[str] | None = None
    if use_nvml:
        try:
            rows = nvml_gpus(nvml)
            facts.summary.append(f"GPUs from NVML: {len(rows)}")
        except Exception as err:  # noqa: BLE001  ImportError, NVMLError_LibraryNotFound, driver not loaded ...
            facts.summary.append(f"NVML not usable ({type(err).__name__}: {err}); trying {nvidia_smi}")
    if rows is None:
        try:
            rows = smi_gpus(nvidia_smi)
            facts.summary.append(f"GPUs from {nvidia_smi}: {len(rows)}")
        except (OSError, subprocess.SubprocessError) as err:
            facts.summary.append(f"{nvidia_smi} not usable ({type(err).__name__}); no NVIDIA driver found")
            rows = []
    if rows:
        parts.append(CSV_HEADER)
        parts.extend(rows)
        facts.summary.extend(f"  GPU {i}: {row}" for i, row in enumerate(rows))
    else:
        parts.append("no NVIDIA GPU found on this machine (no NVIDIA driver answered)")
    try:
        block = cpu_block(cpuinfo)
        parts.append(block)
        model = next(
            (line.split(":", 1)[1].strip() for line in block.splitlines() if line.lower().startswith("model name")),
            None,
        )
        facts.summary.append(f"CPU from {cpuinfo}: {model or 'no model name (flags and CPU part only)'}")
        facts.cpu_from = "this machine's /proc/cpuinfo" if cpuinfo == Path("/proc/cpuinfo") else str(cpuinfo)
    except OSError as err:
        facts.summary.append(f"{cpuinfo} not readable ({err.strerror or err}); CPU unknown")
    try:
        if "microsoft" in proc_version.read_text(errors="replace").lower():
            parts.append("running under WSL2")
            facts.summary.append("WSL2 (from /proc/version)")
    except OSError:
        pass
    facts.text = "\n".join(parts) + "\n"
    return facts
