"""The typed catalog: branches and their variant matrices, GPU architectures, CPU ISAs,
CPU microarchitectures and models, cloud instances and CUDA toolkits.

Everything here is loaded from the TOML files in ``config/data``; adding a GPU, a CPU or a
branch is a data edit. The models are plain frozen dataclasses so the selection engine,
the recipe generator and the repository reader can share them without I/O. Reading the data
files into these models is ``config.catalog_data`` (``load_catalog``, ``build_catalog``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from pathlib import Path

from config.errors import CatalogError, NotInCatalogError
from config.naming import package_name

DATA_DIR = Path(__file__).with_name("data")

PURPOSE_RANK = {
    "recommended": 0,
    "python-variant": 1,
    "stable": 2,
    "vllm-certified": 3,
    "bleeding-edge": 4,
}


def pickled_as_arguments(cls):
    """Pickle ``cls`` as its constructor's arguments. The compiled catalog cache holds ~1,400 of
    these; the ``__setstate__`` dataclasses give a frozen slots class looks its fields up once
    per object, which made loading them a tenth of a one-shot ``ask``."""
    names = tuple(f.name for f in fields(cls))

    def __reduce__(self):
        return cls, tuple([getattr(self, n) for n in names])

    cls.__reduce__ = __reduce__
    return cls


@lru_cache(maxsize=512)
def vtuple(version: str) -> tuple[int, ...]:
    """'12.9.1' -> (12, 9, 1); non-numeric parts stop the tuple ('TBD' -> ())."""
    out: list[int] = []
    for part in version.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class Correction:
    """A GPU fact the seed documents get wrong, and the truth the answer says instead."""

    model: str
    says: str
    truth: str


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class GpuArch:
    """A GPU architecture (compute capability) and the CUDA, drivers and models it goes with."""

    key: str  # "sm90"
    cc: str  # "9.0"
    family: str
    desc: str = ""
    min_cuda: str | None = None
    max_cuda: str | None = None
    min_driver: str | None = None
    platforms: tuple[str, ...] = ()
    isas: tuple[str, ...] | None = None
    cudnn: bool = True
    served: bool = True
    reason: str = ""
    models: tuple[str, ...] = ()
    corrections: tuple[Correction, ...] = ()

    @property
    def num(self) -> str:
        return self.key[2:]

    @property
    def upper(self) -> str:
        return self.key.upper()

    @property
    def underscore(self) -> str:
        return "sm_" + self.num

    def cuda_ok(self, cuda: str) -> bool:
        v = vtuple(cuda)
        if self.min_cuda and v < vtuple(self.min_cuda):
            return False
        return not (self.max_cuda and v > vtuple(self.max_cuda))


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class CpuIsa:
    """A CPU instruction-set level the variants are built for (avx2, avx512, armv9, ...)."""

    key: str  # "avx512"
    arch: str  # "x86_64" | "aarch64"
    desc: str
    rank: int
    flags: tuple[str, ...]
    requires: frozenset[str]
    disables: tuple[str, ...] = ()
    workload: str | None = None
    hardware: str = ""

    @property
    def platform(self) -> str:
        return f"{self.arch}-linux"


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class Uarch:
    """A CPU microarchitecture and the flags that decide the build (from archspec where it knows it)."""

    key: str
    vendor: str
    arch: str
    name: str
    flags: frozenset[str]  # relevant flags only (cpus.toml [flags] relevant)
    note: str = ""
    archspec: str | None = None  # the archspec microarchitecture the flags come from
    nearest: str | None = None  # for one archspec lacks: the archspec one its flags extend


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class CpuModel:
    """A CPU model name pattern and its microarchitecture."""

    pattern: str
    name: str
    uarch: str


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class Instance:
    """A cloud instance family or shape, with the GPU and CPU it has."""

    pattern: str
    provider: str
    gpu: str | None  # None: a CPU-only family
    cpu: str | None  # None: the provider does not publish it (the note says so)
    families: tuple[str, ...] = ()  # bare family names ("m7g", "c4a")
    note: str = ""


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class CudaToolkit:
    """A CUDA toolkit version, the driver it needs and its nixpkgs attribute."""

    version: str
    min_driver: str
    nix_attr: str


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class Variant:
    """One package of the matrix. ``kind`` is pytorch, torchvision or torchaudio.

    The fields after ``pin`` are what a recipe read from a repository says beyond the matrix
    (its pname, listed platforms, the PyTorch it builds from source, where a companion's PyTorch
    comes from); they do not take part in comparisons, so a branch read back from a repository
    torchbot rendered equals its catalog definition."""

    package: str
    kind: str
    python: str
    cuda: str | None
    gpu_arch: str | None  # "sm90"; None for CPU-only and darwin
    cpu_isa: str | None  # None for darwin
    platform: str  # x86_64-linux | aarch64-linux | aarch64-darwin
    darwin: bool = False
    pin: str | None = None  # nixpkgs commit; "none" for a recipe without a pin of its own
    pname: str | None = field(default=None, compare=False)
    platforms: tuple[str, ...] = field(default=(), compare=False)  # meta.platforms as the recipe lists it
    pytorch: str | None = field(default=None, compare=False)  # version built from source, if the recipe says
    torch_from: str | None = field(default=None, compare=False)  # companions: inline | import:<pkg> | remote:…
    big_parallel: bool = field(default=False, compare=False)

    @property
    def is_companion(self) -> bool:
        return self.kind != "pytorch"

    @property
    def pytorch_package(self) -> str:
        """For a companion, the pytorch variant it imports; else itself."""
        return self.package.replace(self.kind + "-", "pytorch-", 1) if self.is_companion else self.package


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class CudaGroup:
    """The GPU architectures a branch builds with one CUDA version."""

    version: str
    archs: tuple[str, ...]
    pin: str | None = None  # None: the branch's pin


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class Companion:
    """A torchvision or torchaudio variant a branch builds beside PyTorch."""

    kind: str
    cuda: str
    arch: str
    isa: str


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class TorchSource:
    """The PyTorch source a branch builds from (version and hash)."""

    version: str
    hash: str


@dataclass(frozen=True, eq=False)
class Branch:
    """A branch of build-pytorch (or build-torchvision) and its variant matrix."""

    name: str
    pytorch: str
    python: str
    cudnn: str
    min_driver: str
    purpose: str
    summary: str
    pin: str
    cpu_isas: tuple[str, ...]
    darwin_mps: bool
    cuda_groups: tuple[CudaGroup, ...]
    companions: tuple[Companion, ...] = ()
    vllm: str | None = None
    torch_source: TorchSource | None = None
    variants: tuple[Variant, ...] = ()
    kind: str = "build-pytorch"  # or "build-torchvision"
    repository: str | None = None  # the repository the branch was read from (None: embedded catalog)
    pairs_with: str | None = None  # build-torchvision: the build-pytorch branch it pairs with
    pairing: str = ""  # how it pairs (PyTorch, CUDA, pins), or why no branch does

    @property
    def rank(self) -> int:
        return PURPOSE_RANK.get(self.purpose, len(PURPOSE_RANK))

    @property
    def cuda_versions(self) -> tuple[str, ...]:
        return tuple(g.version for g in self.cuda_groups)

    @property
    def pins(self) -> tuple[str, ...]:
        seen: dict[str, None] = {self.pin: None} if self.pin else {}
        for g in self.cuda_groups:
            if g.pin:
                seen.setdefault(g.pin, None)
        return tuple(seen)

    @cached_property
    def by_package(self) -> dict[str, Variant]:
        return {v.package: v for v in self.variants}

    @cached_property
    def pytorch_by_arch(self) -> dict[str | None, tuple[Variant, ...]]:
        """Linux pytorch variants by GPU architecture (None: CPU-only)."""
        out: dict[str | None, list[Variant]] = {}
        for v in self.variants:
            if v.kind == "pytorch" and not v.darwin:
                out.setdefault(v.gpu_arch, []).append(v)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def _by_arch(self) -> dict[str | None, tuple[Variant, ...]]:
        out: dict[str | None, list[Variant]] = {}
        for v in self.variants:
            out.setdefault(v.gpu_arch, []).append(v)
        return {k: tuple(vs) for k, vs in out.items()}

    def variants_for(self, gpu_arch: str | None) -> tuple[Variant, ...]:
        """Every variant (any kind) built for one GPU architecture (None: CPU-only and darwin), in order."""
        return self._by_arch.get(gpu_arch, ())

    def pin_for(self, cuda: str | None) -> str:
        for g in self.cuda_groups:
            if g.version == cuda and g.pin:
                return g.pin
        return self.pin


@dataclass(frozen=True, eq=False)  # identity hash: derived matchers are cached per catalog
class Catalog:
    """Everything `ask` and the release tools know: branches, GPUs, CPUs, instances, CUDA."""

    gpu_archs: dict[str, GpuArch]
    gpu_models: dict[str, str]  # model name -> arch key
    systems: dict[str, tuple[str, str | None]]  # product -> (gpu model, cpu name; None: the server maker's)
    foreign_patterns: tuple[str, ...]
    isas: dict[str, CpuIsa]
    implies: dict[str, tuple[str, ...]]
    uarchs: dict[str, Uarch]
    cpu_models: tuple[CpuModel, ...]
    arm_parts: dict[str, str]  # /proc/cpuinfo "CPU part" -> uarch key
    instances: tuple[Instance, ...]
    cuda: dict[str, CudaToolkit]
    branches: dict[str, Branch]
    recommended: str
    all_isas: tuple[str, ...]
    source: str = "embedded"
    relevant_flags: frozenset[str] = frozenset()  # the CPU flags selection reasons about
    providers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # cloud provider -> words naming it
    cpu_brands: dict[str, str] = field(default_factory=dict)  # CPU brand word -> x86_64 | aarch64
    vision: dict[str, Branch] = field(default_factory=dict)  # build-torchvision branches (with repositories)
    system_notes: dict[str, str] = field(default_factory=dict)  # system -> what every answer for it says
    data_dir: Path = DATA_DIR  # where the data was read: the CPU model tables are read from it when first needed

    def branch(self, name: str) -> Branch:
        try:
            return self.branches[name]
        except KeyError:
            known = ", ".join(self.branches)
            raise NotInCatalogError(f"Unknown branch '{name}'. Known branches: {known}.") from None

    def arch(self, key: str) -> GpuArch:
        try:
            return self.gpu_archs[key]
        except KeyError:
            raise CatalogError(f"Unknown GPU architecture '{key}'.") from None

    def isa(self, key: str) -> CpuIsa:
        try:
            return self.isas[key]
        except KeyError:
            raise CatalogError(f"Unknown CPU ISA '{key}'. Known: {', '.join(self.isas)}.") from None

    def with_branches(self, branches: Iterable[Branch], source: str) -> Catalog:
        return replace(self, branches={b.name: b for b in branches}, source=source)

    def variant_platform(self, gpu_arch: str | None, cpu_isa: str | None, darwin: bool = False) -> str:
        if darwin:
            return "aarch64-darwin"
        if cpu_isa in self.isas:
            return self.isas[cpu_isa].platform
        return "x86_64-linux"

    def allowed_isas(self, arch: GpuArch) -> tuple[str, ...]:
        """ISAs the matrix may pair with this GPU architecture (platform and arch limits)."""
        allowed = arch.isas if arch.isas is not None else self.all_isas
        return tuple(i for i in allowed if self.isas[i].platform in arch.platforms)

    def expand(self, branch: Branch) -> tuple[Variant, ...]:
        """The variant matrix a branch definition describes."""
        out: list[Variant] = []
        py = branch.python
        for isa in branch.cpu_isas:
            out.append(
                Variant(
                    package_name("pytorch", py, cpu_isa=isa), "pytorch", py, None, None, isa,
                    self.isas[isa].platform, pin=branch.pin,
                )
            )
        if branch.darwin_mps:
            out.append(
                Variant(
                    package_name("pytorch", py, darwin=True), "pytorch", py, None, None, None,
                    "aarch64-darwin", darwin=True, pin=branch.pin,
                )
            )
        for group in branch.cuda_groups:
            pin = group.pin or branch.pin
            for arch_key in group.archs:
                arch = self.gpu_archs[arch_key]
                for isa in self.allowed_isas(arch):
                    out.append(
                        Variant(
                            package_name("pytorch", py, cuda=group.version, gpu_arch=arch_key, cpu_isa=isa),
                            "pytorch", py, group.version, arch_key, isa, self.isas[isa].platform, pin=pin,
                        )
                    )
        for c in branch.companions:
            out.append(
                Variant(
                    package_name(c.kind, py, cuda=c.cuda, gpu_arch=c.arch, cpu_isa=c.isa),
                    c.kind, py, c.cuda, c.arch, c.isa, self.isas[c.isa].platform, pin=branch.pin_for(c.cuda),
                )
            )
        return tuple(out)

    def matrix_conflicts(self, branch: Branch) -> list[str]:
        """Reasons a branch definition is impossible; empty when it is buildable."""
        problems: list[str] = []
        for isa in branch.cpu_isas:
            if isa not in self.isas:
                problems.append(f"unknown CPU ISA '{isa}'")
        for group in branch.cuda_groups:
            if group.version not in self.cuda:
                problems.append(f"CUDA {group.version} is not a known toolkit ({', '.join(self.cuda)})")
            for arch_key in group.archs:
                arch = self.gpu_archs.get(arch_key)
                if arch is None:
                    problems.append(f"unknown GPU architecture '{arch_key}'")
                    continue
                if not arch.served:
                    problems.append(f"{arch.upper} cannot be built: {arch.reason}")
                    continue
                if arch.min_cuda and vtuple(group.version) < vtuple(arch.min_cuda):
                    problems.append(f"{arch.upper} needs CUDA >= {arch.min_cuda}, not {group.version}")
                if arch.max_cuda and vtuple(group.version) > vtuple(arch.max_cuda):
                    problems.append(f"{arch.upper} is not supported after CUDA {arch.max_cuda} (asked {group.version})")
                if not self.allowed_isas(arch):
                    problems.append(f"{arch.upper} has no CPU ISA it can be paired with")
        for c in branch.companions:
            if c.kind not in ("torchvision", "torchaudio"):
                problems.append(f"unknown companion kind '{c.kind}'")
        return problems
