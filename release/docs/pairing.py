"""build-torchvision branches against the build-pytorch branch each pairs with (pure over the
reader's models).

A torchvision branch pairs with a build-pytorch branch (the reader's pairing: same PyTorch
major.minor, then Python, shared pins and CUDA versions). It is reported when its PyTorch does
not agree with its pair's, or when, for a CUDA version both build (or for the CPU-only
recipes), it uses another nixpkgs pin than its pair.

May import: config, release.recipes, release.docs.facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.catalog import vtuple
from release.docs.facts import BranchDoc, docs_from_model


@dataclass
class Mismatch:
    branch: str  # the torchvision branch
    pair: str | None  # the build-pytorch branch it pairs with
    what: str  # "PyTorch", "pin (CUDA 13.0)", "pair"
    says: str  # the torchvision branch's
    true: str  # its pair's

    def to_dict(self) -> dict:
        return {"branch": self.branch, "pair": self.pair, "what": self.what, "says": self.says, "true": self.true}

    def text(self) -> str:
        if self.pair is None:
            return f"torchvision {self.branch}: {self.says}"
        return f"torchvision {self.branch} vs {self.pair}: {self.what} {self.says} (build-pytorch: {self.true})"


def _agree(a: str, b: str) -> bool:
    x, y = vtuple(a), vtuple(b)
    n = min(len(x), len(y))
    return n >= 2 and x[:n] == y[:n]


def _pins_by_cuda(doc: BranchDoc) -> dict[str, str]:
    out = {}
    for pin, versions in doc.groups:
        for v in versions:
            out.setdefault(v, pin)
    return out


def compare(vision: BranchDoc, pair: BranchDoc) -> list[Mismatch]:
    out = []
    if vision.pytorch != "unknown" and not _agree(vision.pytorch, pair.pytorch):
        out.append(Mismatch(vision.name, pair.name, "PyTorch", vision.pytorch, pair.pytorch))
    mine, theirs = _pins_by_cuda(vision), _pins_by_cuda(pair)
    for cuda in vision.cuda:
        if cuda in theirs and mine.get(cuda) != theirs[cuda]:
            out.append(
                Mismatch(vision.name, pair.name, f"pin (CUDA {cuda})", mine.get(cuda, "-")[:7], theirs[cuda][:7])
            )
    shared = set(mine) & set(theirs)
    if not shared:
        vp, pp = set(vision.pins), set(pair.pins)
        if vp and pp and not vp & pp:
            out.append(Mismatch(vision.name, pair.name, "pin", " / ".join(p[:7] for p in vision.pins),
                                " / ".join(p[:7] for p in pair.pins)))
    return out


def check_pairing(pytorch_model, vision_model, skip=()) -> list[Mismatch]:
    """Every torchvision branch whose PyTorch or pins differ from its build-pytorch pair
    (branches matching ``skip`` patterns, e.g. ``*-staging``, are not checked)."""
    from release.docs.facts import skipped
    from release.recipes.repos import pair

    pt_docs = docs_from_model(pytorch_model)
    tv_docs = docs_from_model(vision_model)
    candidates = [bm.branch for bm in pytorch_model.branches.values() if bm.branch is not None]
    out: list[Mismatch] = []
    for name, bm in vision_model.branches.items():
        if bm.branch is None or name not in tv_docs or skipped(name, skip):
            continue
        best, how = pair(bm.branch, candidates)
        if best is None:
            out.append(Mismatch(name, None, "pair", how, ""))
            continue
        out.extend(compare(tv_docs[name], pt_docs[best.name]))
    return out
