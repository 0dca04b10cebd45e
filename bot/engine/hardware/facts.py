"""The typed facts a question gives about a machine (``Hardware``), and the text folding every
reader shares. Pure; imports nothing of torchbot but config.regex_cache."""

from __future__ import annotations

from dataclasses import dataclass, field

from config.regex_cache import rx

MAX_INPUT = 100_000  # characters read at all (GPU rows, flag lines)
SCAN = 16_000  # characters searched for model, instance and unknown names: a question, or pasted
#                nvidia-smi + lscpu output, is far shorter (/proc/cpuinfo's per-core repeats are dropped first)

# Barriers between the table cells and the lines of the free text GPU names are read from
# (``gpus.gpu_text``): never folded away, never part of a name, so no name is read across them.
CELL = " \u00a6 "  # broken bar
LINE = " \u00b6 "  # pilcrow

# Folding applied before matching model names: trademarks and separators become spaces.
_FOLD_RE = rx(r"\((?:r|tm|c)\)|[®™]|[\-_/,;|()\[\]\"'`]+")
_SPACES_RE = rx(r"\s+")


def fold(text: str) -> str:
    return _SPACES_RE.sub(" ", _FOLD_RE.sub(" ", text.lower().replace("×", "x"))).strip()


def bounded(pattern: str) -> str:
    return rf"(?<![a-z0-9])(?:{pattern})(?![a-z0-9])"


@dataclass(frozen=True)
class GpuSeen:
    """One GPU model the question names, with its architecture and count."""

    name: str  # model name as in the catalog (or a non-NVIDIA accelerator's name)
    arch: str | None  # catalog arch key; None for a non-NVIDIA accelerator
    count: int | None = None


@dataclass
class Hardware:
    """What the question says about the machine. ``None`` means "not said"."""

    query: str
    gpu: str | None = None  # model name as in the catalog
    gpu_arch: str | None = None  # catalog arch key, e.g. "sm90" (may be an unserved arch)
    gpu_count: int | None = None
    gpus: list[GpuSeen] = field(default_factory=list)  # every GPU model named, in order
    gpu_foreign: str | None = None  # a non-NVIDIA accelerator that was named
    gpu_unknown_cc: str | None = None  # a compute capability the catalog does not know
    cpu: str | None = None
    cpu_uarch: str | None = None
    cpu_arch: str | None = None  # x86_64 | aarch64
    cpu_flags: frozenset[str] | None = None
    cpu_candidates: list[str] = field(default_factory=list)  # a number several vendors' parts share: each of them
    cpu_ambiguous: str | None = None  # that number, as typed
    flags_source: str | None = None  # pasted | model | stated
    flags_from: str | None = (
        None  # where pasted flags were read, when not from the question ("this machine's /proc/cpuinfo")
    )
    stated_flags: frozenset[str] = frozenset()
    denied_flags: frozenset[str] = frozenset()  # flags the question says the CPU lacks, and those needing them
    os: str | None = None  # linux | macos | windows
    wsl: bool = False
    apple_silicon: bool | None = None
    workload: str | None = None  # bf16-training | int8-inference | training | inference
    python: str | None = None
    vllm: str | None = None  # a version, or "any"
    driver: str | None = None
    cuda: str | None = None  # a CUDA version the user asked for ("13.1", or a major: "13")
    pytorch: str | None = None
    instance: str | None = None
    instance_provider: str | None = None
    instance_gpu_less: bool = False  # a CPU-only cloud family
    system_cpu: str | None = None  # the CPU a named system or superchip comes with
    no_gpu: bool = False
    unknown_gpu: list[str] = field(default_factory=list)  # GPU-like names torchbot does not know
    gpu_unnamed: bool = False  # the question mentions a GPU ("my gpu box") without naming a known one
    gpu_suggestions: dict[str, str] = field(default_factory=dict)  # unknown name -> a model it may be ("a1oo": A100)
    unknown_cpu: list[str] = field(default_factory=list)
    unknown_instance: str | None = None
    corrections: list[tuple[str, str]] = field(default_factory=list)  # (as typed, read as)
    retracted: list[tuple[str, str, str]] = field(default_factory=list)  # (gpu|cpu|instance, taken back, meant)
    notes: list[str] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)  # several machines named, none singled out: ask which

    @property
    def unknown(self) -> list[str]:
        return [*self.unknown_gpu, *self.unknown_cpu, *([self.unknown_instance] if self.unknown_instance else [])]

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu,
            "gpu_arch": self.gpu_arch,
            "gpu_count": self.gpu_count,
            "gpus": [{"name": g.name, "arch": g.arch, "count": g.count} for g in self.gpus],
            "cpu": self.cpu,
            "cpu_uarch": self.cpu_uarch,
            "cpu_arch": self.cpu_arch,
            "cpu_flags": sorted(self.cpu_flags or ()),
            "os": self.os,
            "workload": self.workload,
            "python": self.python,
            "vllm": self.vllm,
            "driver": self.driver,
            "cuda": self.cuda,
            "pytorch": self.pytorch,
            "instance": self.instance,
            "other_accelerator": self.gpu_foreign,
            "unknown": self.unknown,
        }


