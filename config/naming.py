"""Package naming rules of the build-pytorch repository (seed 002), both directions.

GPU:        pytorch-python{PY}-cuda{MAJ}_{MIN}-{smNN}-{isa}
CPU-only:   pytorch-python{PY}-cpu-{isa}
macOS:      pytorch-python{PY}-darwin-mps
companions: torchvision|torchaudio-python{PY}-cuda{MAJ}_{MIN}-{smNN}-{isa}
"""

from __future__ import annotations

from dataclasses import dataclass

from config.regex_cache import rx

KINDS = ("pytorch", "torchvision", "torchaudio")

_NAME_RE = rx(
    r"^(?P<kind>pytorch|torchvision|torchaudio)-python(?P<py>3\d{1,2})-"
    r"(?:(?P<darwin>darwin-mps)|cpu-(?P<cpu_isa>[a-z0-9_]+)|"
    r"cuda(?P<cuda>\d{2}_\d)-(?P<arch>sm\d{2,3})-(?P<isa>[a-z0-9_]+))$"
)


@dataclass(frozen=True, slots=True)
class ParsedName:
    """The parts of a package name."""

    kind: str  # pytorch | torchvision | torchaudio
    python: str  # "3.13"
    cuda: str | None  # "12.8"
    gpu_arch: str | None  # "sm90"; "mps" never appears here (darwin has is_darwin)
    cpu_isa: str | None
    is_darwin: bool = False


def python_tag(python: str) -> str:
    """'3.13' -> 'python313'."""
    return "python" + python.replace(".", "")


def cuda_tag(cuda: str) -> str:
    """'12.8' -> '12_8'."""
    return cuda.replace(".", "_")


def package_name(
    kind: str,
    python: str,
    *,
    cuda: str | None = None,
    gpu_arch: str | None = None,
    cpu_isa: str | None = None,
    darwin: bool = False,
) -> str:
    py = python_tag(python)
    if darwin:
        return f"{kind}-{py}-darwin-mps"
    if gpu_arch is None:
        return f"{kind}-{py}-cpu-{cpu_isa}"
    return f"{kind}-{py}-cuda{cuda_tag(cuda or '')}-{gpu_arch}-{cpu_isa}"


def parse_package_name(name: str) -> ParsedName | None:
    """The inverse of :func:`package_name`; None for names outside the convention."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    py = m["py"]
    python = f"{py[0]}.{py[1:]}"
    if m["darwin"]:
        return ParsedName(m["kind"], python, None, None, None, is_darwin=True)
    if m["cpu_isa"]:
        return ParsedName(m["kind"], python, None, None, m["cpu_isa"])
    return ParsedName(m["kind"], python, m["cuda"].replace("_", "."), m["arch"], m["isa"])


# nixpkgs revisions
REV_RE = rx(r"^[0-9a-f]{40}$")


def short(rev: str) -> str:
    """The 7-character form of a nixpkgs revision, as the READMEs and commit messages show it."""
    return rev[:7]
