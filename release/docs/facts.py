"""The facts the README tables state about a branch, computed from the repository model (pure).

``BranchDoc`` is what a row about a branch must say: PyTorch, Python, the CUDA versions in the
branch's order, the variant count, the nixpkgs pins with the CUDA versions each one carries.
``docs_from_model`` turns the reader's branch model into these; tests and the branch
derivation build them directly.

May import: config, release.recipes.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from config.catalog import vtuple

UNKNOWN = "unknown"  # a version nixpkgs decides (cuDNN) at a pin no fact speaks for


@dataclass(frozen=True)
class BranchDoc:
    name: str
    pytorch: str
    python: str
    cuda: tuple[str, ...]  # "13.0", "13.1", ... in the branch's order
    variants: int
    groups: tuple[tuple[str, tuple[str, ...]], ...]  # (pin, CUDA versions on it), the branch's pin order
    archs: tuple[str, ...] = ()  # "sm75", ... by compute capability
    cpu: bool = False
    darwin: bool = False
    summary: str = ""
    cudnn: str = ""
    min_driver: str = ""

    @property
    def pins(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.groups)

    def pin_of(self, cuda: str) -> str | None:
        for pin, versions in self.groups:
            if cuda in versions:
                return pin
        return None

    def architectures(self) -> str:
        """'SM61–SM120, CPU, Darwin' (a new row's Architectures cell)."""
        parts = []
        if self.archs:
            lo, hi = self.archs[0].upper(), self.archs[-1].upper()
            parts.append(lo if lo == hi else f"{lo}–{hi}")
        if self.cpu:
            parts.append("CPU")
        if self.darwin:
            parts.append("Darwin")
        return ", ".join(parts)


def skipped(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def docs_from_model(model) -> dict[str, BranchDoc]:
    """Branch name -> BranchDoc for every branch of the reader's repository model that has recipes."""
    out: dict[str, BranchDoc] = {}
    for name, bm in model.branches.items():
        b = bm.branch
        if b is None:
            continue
        order = list(b.cuda_versions)
        groups: dict[str, list[str]] = {}
        for v in bm.variants:
            if v.pin is None:
                continue
            versions = groups.setdefault(v.pin, [])
            if v.cuda and v.cuda not in versions:
                versions.append(v.cuda)
        for versions in groups.values():
            versions.sort(key=lambda c: order.index(c) if c in order else len(order))
        ordered = sorted(
            groups.items(),
            key=lambda kv: min((order.index(c) for c in kv[1] if c in order), default=len(order)),
        )
        archs = sorted({v.gpu_arch for v in bm.variants if v.gpu_arch}, key=lambda a: vtuple(a[2:]))
        out[name] = BranchDoc(
            name=name,
            pytorch=b.pytorch,
            python=b.python,
            cuda=tuple(order),
            variants=len(bm.variants),
            groups=tuple((p, tuple(vs)) for p, vs in ordered),
            archs=tuple(archs),
            cpu=any(v.gpu_arch is None and not v.darwin for v in bm.variants),
            darwin=any(v.darwin for v in bm.variants),
            summary=b.summary,
            cudnn=b.cudnn,
            min_driver=b.min_driver,
        )
    return out
