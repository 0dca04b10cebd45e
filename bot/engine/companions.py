"""torchvision and torchaudio answers: "which torchvision for an RTX 4090 and i9-13900K",
"torchaudio for a T4".

The PyTorch answer for the hardware is worked out first (bot/engine/select.py); then the companion
package built for the same GPU architecture and a CPU ISA the CPU runs: on a build-torchvision
branch paired with that PyTorch branch (its recipes build the same PyTorch inline), on the
PyTorch branch itself (build-pytorch companions import the sibling PyTorch recipe), else on
any branch that has one, with a warning when its PyTorch differs. The answer names the
package, its branch, repository and build command, and the PyTorch it pairs with.

Pure: plain functions over the catalog and the hardware facts. May import: config, bot.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from bot.engine.answer import Answer, Pick
from bot.engine.branches import driver_reason
from bot.engine.cpu_isa import cpu_plan
from bot.engine.hardware import Hardware
from config.catalog import Branch, Catalog, Variant, vtuple
from config.regex_cache import rx
from config.versions import Version

_ASK_RE = rx(r"torch[\s_-]?(vision|audio)", re.I)


def companion_kind(text: str) -> str | None:
    """"torchvision" or "torchaudio" when the question asks for one (the first named)."""
    m = _ASK_RE.search(text or "")
    return f"torch{m[1].lower()}" if m else None


def _isa_order(cat: Catalog, hw: Hardware, pt: Pick) -> tuple[str, ...]:
    """ISAs the CPU runs, best first (an unidentified CPU: the assumed one and the safer ones below)."""
    if pt.cpu_isa is None:
        return ()
    plan = cpu_plan(cat, hw, Answer(hardware=hw), cat.isas[pt.cpu_isa].arch if pt.cpu_isa in cat.isas else None)
    if plan is None:
        return (pt.cpu_isa,)
    order = list(plan.order)
    if plan.assumed:
        arch = plan.arch
        below = sorted((i for i in cat.isas.values() if i.arch == arch and i.workload is None
                        and i.rank <= cat.isas[order[0]].rank), key=lambda i: -i.rank)
        order += [i.key for i in below]
    if pt.cpu_isa not in order:
        order.insert(0, pt.cpu_isa)
    return tuple(dict.fromkeys(order))


def _fits(v: Variant, kind: str, pt: Pick, order: tuple[str, ...], hw: Hardware) -> bool:
    if v.kind != kind:
        return False
    if pt.platform == "aarch64-darwin":
        return v.darwin
    if v.darwin or v.gpu_arch != pt.gpu_arch:
        return False
    if v.cpu_isa not in order:
        return False
    if hw.cuda and v.cuda and v.cuda != hw.cuda:
        return False
    return not (hw.python and v.python != hw.python)


def _candidates(cat: Catalog, pt: Pick) -> list[tuple[int, Branch]]:
    return _ranked_branches(cat, pt.branch, pt.pytorch, pt.python)


@lru_cache(maxsize=256)
def _ranked_branches(cat: Catalog, branch: str, pytorch: str, python: str) -> list[tuple[int, Branch]]:
    """Branches to look in, best pairing first: build-torchvision branches paired with the
    PyTorch branch, that branch itself, then branches with the same PyTorch, then the rest
    (cached per catalog: a catalog is replaced, not changed, when a branch moves)."""
    same = Version(pytorch).line
    out: list[tuple[int, Branch]] = []
    for b in cat.vision.values():
        rank = 0 if b.pairs_with == branch else (2 if Version(b.pytorch).line == same else 4)
        out.append((rank, b))
    for b in cat.branches.values():
        rank = 1 if b.name == branch else (3 if Version(b.pytorch).line == same else 5)
        out.append((rank, b))
    return sorted(out, key=lambda rb: (rb[0], rb[1].python != python, rb[1].rank, rb[1].name))


def _paired_pytorch(cat: Catalog, b: Branch, v: Variant) -> dict:
    """The PyTorch package a companion is built against, as far as the recipes say."""
    if v.torch_from and v.torch_from.startswith("import:"):
        pkg = v.torch_from[len("import:"):]
        return {"package": pkg, "branch": b.name, "repository": b.repository, "pytorch": b.pytorch,
                "how": f"imports ./{pkg}.nix from the same branch"}
    if b.kind == "build-torchvision":
        partner = cat.branches.get(b.pairs_with or "")
        match = None
        if partner is not None:
            match = next(
                (
                    x
                    for x in partner.variants_for(v.gpu_arch)
                    if x.kind == "pytorch"
                    and x.gpu_arch == v.gpu_arch
                    and x.cpu_isa == v.cpu_isa
                    and x.cuda == v.cuda
                    and x.darwin == v.darwin
                ),
                None,
            )
        how = (f"builds PyTorch {b.pytorch} inline" if v.torch_from == "inline"
               else f"takes PyTorch from {v.torch_from}" if v.torch_from else f"uses nixpkgs' torch ({b.pytorch})")
        if partner is not None:
            how += f"; the same build as {match.package} on {partner.name}" if match else f"; pairs with {partner.name}"
        return {"package": match.package if match else None, "branch": partner.name if partner else None,
                "repository": partner.repository if partner else None, "pytorch": b.pytorch, "how": how}
    return {"package": v.pytorch_package, "branch": b.name, "repository": b.repository, "pytorch": b.pytorch,
            "how": "built against the same branch's PyTorch"}


@lru_cache(maxsize=64)
def _carriers(cat: Catalog, kind: str) -> list[str]:
    """Where recipes of a kind exist: "branch (target-isa)" (for the answer that has none)."""
    return sorted({f"{b.name} ({v.gpu_arch or ('darwin' if v.darwin else 'cpu')}-{v.cpu_isa or 'mps'})"
                   for b in (*cat.vision.values(), *cat.branches.values()) for v in b.variants if v.kind == kind})


def _pick(cat: Catalog, b: Branch, v: Variant, org: str, note: str = "") -> Pick:
    return Pick(
        package=v.package, branch=b.name, gpu_arch=v.gpu_arch, cpu_isa=v.cpu_isa, cuda=v.cuda, python=b.python,
        pytorch=b.pytorch, platform=v.platform,
        build_command=f"git checkout {b.name} && flox build {v.package}",
        install_command=f"flox install {org}/{v.package}", note=note, repository=b.repository, kind=v.kind,
        pairs_with=_paired_pytorch(cat, b, v),
    )


def answer_companion(cat: Catalog, hw: Hardware, base: Answer, kind: str, org: str) -> Answer:
    """The torchvision/torchaudio answer for the hardware the PyTorch answer ``base`` is for."""
    # the hardware reasons carry over; the branch and CUDA reasons are the companion's own
    kept = base.reasons if base.hardware_reasons is None else base.reasons[: base.hardware_reasons]
    said = base.warnings if base.hardware_warnings is None else base.warnings[: base.hardware_warnings]
    ans = Answer(hardware=hw, reasons=list(kept), warnings=list(said), missing=list(base.missing),
                 read=list(base.read), refusal=base.refusal)
    pt = base.recommendation
    if pt is None:
        if not ans.missing:
            ans.warnings.append(f"No PyTorch variant fits this hardware, so there is no {kind} build for it either.")
        ans.alternatives = list(base.alternatives)
        return ans
    order = _isa_order(cat, hw, pt)
    found: list[tuple[tuple, Branch, Variant]] = []
    for rank, (_, b) in enumerate(_candidates(cat, pt)):
        for v in b.variants_for(None if pt.platform == "aarch64-darwin" else pt.gpu_arch):
            if _fits(v, kind, pt, order, hw):
                isa_pos = order.index(v.cpu_isa) if v.cpu_isa in order else 0
                cuda_key = (0 if v.cuda == pt.cuda else 1, tuple(-x for x in vtuple(v.cuda or "0")))
                found.append(((rank, isa_pos, cuda_key, v.package), b, v))
    if not found:
        target = (
            f"{pt.gpu_arch.upper()}"
            if pt.gpu_arch
            else ("Apple Silicon (MPS)" if pt.platform == "aarch64-darwin" else "CPU-only")
        )
        carriers = _carriers(cat, kind)
        ans.warnings.append(
            f"No {kind} recipe for {target} with a CPU ISA this CPU runs ({', '.join(order) or 'any'})"
            + (f"; {kind} recipes exist for: {', '.join(carriers[:8])}" + (" …" if len(carriers) > 8 else "")
               if carriers else f"; no branch has {kind} recipes")
            + "."
        )
        ans.alternatives = [replace(pt, note=f"the PyTorch package for this hardware (no {kind} build fits)")]
        return ans
    found.sort(key=lambda t: t[0])
    (rank, isa_pos, _, _), b, v = found[0]
    pick = _pick(cat, b, v, org)
    ans.recommendation = pick
    repo = f" in {b.repository}" if b.repository else (" in build-torchvision" if b.kind == "build-torchvision" else "")
    ans.reasons.append(f"{kind} for {pt.gpu_arch or 'this CPU'}{'' if not v.cpu_isa else ' + ' + v.cpu_isa}: "
                       f"{v.package} on {b.name}{repo}.")
    pw = pick.pairs_with or {}
    ans.reasons.append(f"It is built against PyTorch {b.pytorch}: {pw.get('how')}.")
    if b.kind == "build-torchvision" and b.pairing:
        ans.reasons.append(f"{b.name} {b.pairing}.")
    if Version(b.pytorch).line != Version(pt.pytorch).line or (
        b.pairs_with not in (None, pt.branch) and b.name != pt.branch
    ):
        ans.warnings.append(
            f"The PyTorch answer for this hardware is {pt.package} on {pt.branch} (PyTorch {pt.pytorch}); "
            f"{v.package} is built against PyTorch {b.pytorch}, so install the PyTorch it pairs with "
            f"({pw.get('package') or 'its own inline build'}) rather than mixing the two."
        )
    if v.cpu_isa and order and v.cpu_isa != order[0]:
        ans.warnings.append(
            f"No {kind} {pt.gpu_arch or 'CPU-only'} {order[0]} build; {v.cpu_isa} is the best one this CPU runs."
        )
    if v.cuda and pt.cuda and v.cuda != pt.cuda:
        ans.reasons.append(f"{kind} is built with CUDA {v.cuda} here (the PyTorch answer used CUDA {pt.cuda}).")
    if v.cuda and base.hardware_reasons is not None and (reason := driver_reason(cat, hw, v.cuda, v.gpu_arch)):
        ans.reasons.append(reason)
    partner_pkg = pw.get("package")
    if partner_pkg:
        partner_branch = cat.branches.get(pw.get("branch") or "")
        pv = partner_branch.by_package.get(partner_pkg) if partner_branch else None
        if pv is not None and partner_branch is not None:
            ans.alternatives.append(
                replace(
                    _pick(cat, partner_branch, pv, org), pairs_with=None, note=f"the PyTorch {v.package} pairs with"
                )
            )
    others: dict[tuple[str, str], tuple[Branch, Variant]] = {}
    for _, ob, ov in found[1:]:
        others.setdefault((ov.package, ob.name), (ob, ov))
    others.pop((v.package, b.name), None)
    for ob, ov in list(others.values())[: max(0, 4 - len(ans.alternatives))]:
        ans.alternatives.append(
            _pick(cat, ob, ov, org, f"PyTorch {ob.pytorch}" + (f", CUDA {ov.cuda}" if ov.cuda else "") + f", {ob.kind}")
        )
    return ans
