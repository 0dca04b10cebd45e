"""A branch's recipe facts -> the catalog Branch they describe (pure).

CUDA groups per (CUDA version, nixpkgs pin), CPU-only ISAs, darwin, companions, the PyTorch a
source override builds. What the recipes cannot say (the PyTorch version nixpkgs' own torch has
at a pin, cuDNN, the driver floor, the purpose) comes from the torchbot record in the README
(``<!-- torchbot:branch {...} -->``), else the embedded catalog's branch of that name when it is
on the same pin, else the branch's own row in the README's branch table, else the branch name.

May import: config, release.recipes.facts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace

from config.catalog import Branch, Catalog, Companion, CudaGroup, TorchSource, Variant, vtuple
from release.recipes.facts import NONE_PIN, RecipeFacts

PYTORCH_REPO = "build-pytorch"
VISION_REPO = "build-torchvision"

_META_RE = re.compile(r"<!--\s*torchbot:branch\s+(\{.*?\})\s*-->", re.S)
_BRANCH_VERSION_RE = re.compile(r"pytorch-?(\d+\.\d+(?:\.\d+)?)")
_VLLM_RE = re.compile(r"vllm-(\d+\.\d+(?:\.\d+)?)")


def readme_record(text: str | None) -> dict:
    """The torchbot record of a README (``{"_bad": True}`` when it is not a JSON object)."""
    if not text:
        return {}
    m = _META_RE.search(text)
    if not m:
        return {}
    try:
        data = json.loads(m[1])
    except json.JSONDecodeError:
        return {"_bad": True}
    return data if isinstance(data, dict) else {"_bad": True}


def readme_row(text: str | None, branch: str, column: str) -> str | None:
    """A branch's own cell in the README's branch tables (``| `branch` | … |``), by column name."""
    if not text:
        return None
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.strip("* ").lower() for c in cells]
            continue
        if set(line) <= set("|-: "):
            continue
        if column.lower() not in header or not cells:
            continue
        first = cells[0].replace("*", "")
        if re.search(r"`" + re.escape(branch) + r"`", first):
            i = header.index(column.lower())
            if i < len(cells):
                value = cells[i].replace("*", "").strip()
                if re.fullmatch(r"\d+(?:\.\d+)+", value):
                    return value
    return None


def resolve_companions(recipes: dict[str, RecipeFacts], problems: list[str]) -> dict[str, RecipeFacts]:
    """A companion importing a sibling recipe builds against it: facts it leaves open (GPU target,
    CUDA, source override) come from the sibling; an import of a recipe not on the branch is a problem."""
    out = dict(recipes)
    for pkg, f in recipes.items():
        sib = f.sibling
        if sib is None or not f.usable:
            continue
        other = recipes.get(sib)
        if other is None:
            problems.append(f"{f.file}: imports ./{sib}.nix, which is not on this branch")
            out[pkg] = replace(f, problem=f"imports ./{sib}.nix, which is not on this branch")
            continue
        notes = list(f.notes)
        if other.gpu_arch and f.gpu_arch and other.gpu_arch != f.gpu_arch:
            notes.append(f"builds {f.gpu_arch} against {sib}, which builds {other.gpu_arch}")
        if other.cuda and f.cuda and other.cuda != f.cuda:
            notes.append(f"uses CUDA {f.cuda}, but {sib} uses CUDA {other.cuda}")
        out[pkg] = replace(
            f, cuda=f.cuda or other.cuda, gpu_arch=f.gpu_arch or other.gpu_arch,
            pytorch=f.pytorch or other.pytorch, torch_source=f.torch_source or other.torch_source,
            notes=tuple(notes),
        )
    return out


def build_branch(
    catalog: Catalog, name: str, recipes: dict[str, RecipeFacts], meta: dict, embedded: Branch | None,
    readme: str | None, kind: str,
) -> tuple[Branch, list[str], str]:
    """The catalog Branch a branch's usable recipes describe; (branch, problems, pytorch_from)."""
    problems: list[str] = []
    usable = [f for f in recipes.values() if f.usable]
    pythons = Counter(f.python for f in usable if f.python)
    python = pythons.most_common(1)[0][0] if pythons else "3"
    variants = [_variant(f, python) for f in usable]
    order = meta.get("order") or {}
    core = [v for v in variants if v.kind == "pytorch"] if kind == PYTORCH_REPO else variants
    base_pins = Counter(v.pin for v in core if not v.cuda) or Counter(v.pin for v in core) or Counter(
        v.pin for v in variants)
    pin = base_pins.most_common(1)[0][0]
    fallback = embedded if embedded is not None and embedded.pin in {v.pin for v in variants} else None
    torch_source = _torch_source(usable, problems)
    pytorch, pytorch_from = _pytorch_version(name, pin, meta, fallback, readme, torch_source)
    vllm = meta.get("vllm") if "vllm" in meta else (embedded.vllm if embedded else None)
    if vllm is None and (named := _VLLM_RE.search(name)):
        vllm = named[1]
    purpose_default = "vllm-certified" if vllm else ("staging" if "staging" in name else "python-variant")
    branch = Branch(
        name=name,
        pytorch=pytorch,
        python=python,
        cudnn=_fact(meta, embedded, "cudnn", "9.x"),
        min_driver=_fact(meta, embedded, "min_driver", ""),
        purpose=_fact(meta, embedded, "purpose", purpose_default),
        summary=_fact(meta, embedded, "summary", ""),
        pin=pin,
        cpu_isas=_cpu_isas(catalog, core, order, fallback),
        darwin_mps=any(v.darwin for v in core),
        cuda_groups=_cuda_groups(core, pin, order, fallback),
        companions=_companions(variants, order, fallback) if kind == PYTORCH_REPO else (),
        vllm=vllm,
        torch_source=torch_source,
        kind=kind,
    )
    return replace(branch, variants=_in_catalog_order(catalog, branch, variants)), problems, pytorch_from


def _ordered(items, hint: list) -> list:
    pos = {h: i for i, h in enumerate(hint)}
    return sorted(items, key=lambda x: (pos.get(x, len(pos)),))


def _variant(f: RecipeFacts, python: str) -> Variant:
    return Variant(
        package=f.package, kind=f.kind or "pytorch", python=f.python or python, cuda=f.cuda, gpu_arch=f.gpu_arch,
        cpu_isa=f.cpu_isa, platform=f.platform, darwin=f.darwin, pin=f.pin, pname=f.pname, platforms=f.platforms,
        pytorch=f.pytorch, torch_from=f.torch_from, big_parallel=f.big_parallel,
    )


def _cuda_groups(core: list[Variant], pin: str, order: dict, fallback: Branch | None) -> tuple[CudaGroup, ...]:
    """One group per (CUDA version, pin), in the README record's order, else the embedded branch's,
    else newest CUDA first."""
    by_group: dict[tuple[str, str], list[Variant]] = {}
    for v in core:
        if v.cuda and v.gpu_arch:
            by_group.setdefault((v.cuda, v.pin), []).append(v)
    hint_cuda = [g.get("version") for g in order.get("cuda", [])] or (
        [g.version for g in fallback.cuda_groups] if fallback else [])
    hint_archs = {g.get("version"): g.get("archs", []) for g in order.get("cuda", [])} or (
        {g.version: list(g.archs) for g in fallback.cuda_groups} if fallback else {})
    keys = sorted(by_group, key=lambda k: (tuple(-x for x in vtuple(k[0])), k[1]))
    keys = sorted(keys, key=lambda k: hint_cuda.index(k[0]) if k[0] in hint_cuda else len(hint_cuda))
    groups = []
    for ver, gpin in keys:
        members = by_group[(ver, gpin)]
        archs = sorted({v.gpu_arch for v in members}, key=lambda a: int(re.sub(r"\D", "", a) or 0))
        archs = _ordered(archs, hint_archs.get(ver, []))
        groups.append(CudaGroup(ver, tuple(archs), None if gpin == pin else gpin))
    return tuple(groups)


def _cpu_isas(catalog: Catalog, core: list[Variant], order: dict, fallback: Branch | None) -> tuple[str, ...]:
    isas = [v.cpu_isa for v in core if not v.cuda and not v.darwin and not v.gpu_arch and v.cpu_isa]
    isas = sorted(dict.fromkeys(isas), key=lambda i: catalog.all_isas.index(i) if i in catalog.all_isas else 99)
    return tuple(_ordered(isas, order.get("cpu_isas") or (list(fallback.cpu_isas) if fallback else [])))


def _companions(variants: list[Variant], order: dict, fallback: Branch | None) -> tuple[Companion, ...]:
    comps = [f"{v.kind}:{v.cuda}:{v.gpu_arch}:{v.cpu_isa}" for v in variants
             if v.is_companion and v.cuda and v.gpu_arch and v.cpu_isa]
    comps = _ordered(list(dict.fromkeys(comps)), order.get("companions") or (
        [f"{c.kind}:{c.cuda}:{c.arch}:{c.isa}" for c in fallback.companions] if fallback else []))
    return tuple(Companion(*c.split(":")) for c in comps)


def _torch_source(usable: list[RecipeFacts], problems: list[str]) -> TorchSource | None:
    """The PyTorch source override most recipes build (a problem when they differ)."""
    sources = Counter(f.torch_source for f in usable if f.torch_source)
    torch_source: TorchSource | None = sources.most_common(1)[0][0] if sources else None
    if len(sources) > 1:
        problems.append(
            "recipes build different PyTorch sources ("
            + ", ".join(sorted({s.version for s in sources})) + f"); the branch is read as {torch_source.version}"
        )
    return torch_source


def _pytorch_version(name: str, pin: str, meta: dict, fallback: Branch | None, readme: str | None,
                     torch_source: TorchSource | None) -> tuple[str, str]:
    """The branch's PyTorch version and where it comes from."""
    if torch_source:
        return torch_source.version, "recipes (source override)"
    if meta.get("pytorch"):
        return str(meta["pytorch"]), "README torchbot record"
    if fallback is not None:
        return fallback.pytorch, "embedded catalog (same pin)"
    if said := readme_row(readme, name, "PyTorch"):
        return said, "README branch table"
    if named := _BRANCH_VERSION_RE.search(name):
        return named[1], "branch name"
    return "unknown", "nothing (nixpkgs' torch, unpinned)" if pin == NONE_PIN else "nothing"


def _fact(meta: dict, embedded: Branch | None, key: str, default):
    """README record, else the embedded branch of this name (what the maintainers meant the branch
    for does not change with a pin), else the default."""
    if key in meta and meta[key] is not None:
        return str(meta[key])
    if embedded is not None and getattr(embedded, key):
        return getattr(embedded, key)
    return default


def _in_catalog_order(catalog: Catalog, branch: Branch, variants: list[Variant]) -> tuple[Variant, ...]:
    """The variants in the order the catalog expands the branch (others after, by name)."""
    expected: list[str] = []
    if branch.kind == PYTORCH_REPO:
        try:
            expected = [v.package for v in catalog.expand(branch)]
        except KeyError:
            expected = []
    pos = {p: i for i, p in enumerate(expected)}
    return tuple(sorted(variants, key=lambda v: (pos.get(v.package, len(pos)), "" if v.package in pos else v.package)))
