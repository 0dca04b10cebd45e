"""A new branch derived from its source branch: recipe texts transformed, not re-rendered (pure).

The real recipes carry what no template knows: torch source overrides, patch overlays (magma
for CUDA 13), compat shims, ``allowBroken``, per-recipe build settings. A derived branch keeps
every line of them except the facts that change:

- names: the file name and ``pname`` follow the new Python / CUDA (``pytorch210-python313-`` ->
  ``pytorch210-python312-``);
- Python: ``python3Packages`` / ``python313Packages`` -> ``python312Packages`` (the source
  override's overlay included, so it still applies), ``Python 3.13`` texts;
- CUDA: ``cudaPackages_12_9`` (or the major alias ``cudaPackages_13``), ``cuda12_9`` names,
  ``CUDA 12.9`` / ``-DCUDA_VERSION=12.9`` texts, for a version the source does not have cloned
  from the nearest version it has (same major first);
- the nixpkgs pin of the ``fetchTarball`` URL (a ``sha256`` of the old tarball is dropped);
- PyTorch only with a new source override (``--torch-src REV,HASH``, release.pins.override);
- everything else the texts say about the source (its pins, Python, vLLM and PyTorch in
  descriptions and comments, other repositories' branches): release.branches.statements.

Only the GPU architectures the source builds are carried over (``gpu`` may choose among them,
or name one the source builds with another CUDA version); architectures a CUDA version cannot
build are left out and said so.

May import: config, release.recipes (the reader's recipe facts), release.pins (pure rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from config.catalog import vtuple
from config.errors import RefusedError, ValidationError
from config.naming import ParsedName, package_name, parse_package_name, python_tag
from config.versions import Version
from release.pins.override import torch_swap
from release.pins.rules import PIN_RE

RECIPES_DIR = ".flox/pkgs"
_TARBALL_SHA_RE = re.compile(r'(builtins\.fetchTarball\s*\{[^}]*?)\n[ \t]*sha256\s*=\s*"[^"]*";', re.S)


@dataclass(frozen=True)
class Request:
    name: str
    source: str
    python: str
    cuda: tuple[str, ...]
    pin: str
    pytorch: str
    torch_src: tuple[str, str] | None = None  # (rev, hash)
    gpu: tuple[str, ...] | None = None
    cpu: tuple[str, ...] | None = None


@dataclass
class SourceRecipe:
    path: str
    package: str
    parsed: ParsedName | None
    text: str
    override: str | None = None  # the version its torch source override builds (the reader's facts)
    torch_source: object = None  # the reader's TorchSource (version, hash) or None


@dataclass
class Derived:
    recipes: dict[str, str] = field(default_factory=dict)  # new path -> text
    removed: list[str] = field(default_factory=list)  # source recipe paths not in the new branch
    torch: str = ""  # the PyTorch the recipes build
    torch_how: str = ""  # "source override 2.10.0 (kept)", "nixpkgs' torch", ...
    cuda_attrs: dict[str, int] = field(default_factory=dict)  # package sets the recipes use -> recipe count
    archs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # CUDA version -> archs
    cpu_isas: tuple[str, ...] = ()
    darwin: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def packages(self) -> list[str]:
        return sorted(PurePosixPath(p).stem for p in self.recipes)


def source_recipes(files: dict[str, str], catalog) -> list[SourceRecipe]:
    """The source branch's recipes with what the reader finds in them (the torch source override)."""
    from release.recipes.facts import read_recipe

    out = []
    for path, text in sorted(files.items()):
        p = PurePosixPath(path)
        if str(p.parent) != RECIPES_DIR or p.suffix != ".nix":
            continue
        facts = read_recipe(catalog, p.name, text)
        out.append(SourceRecipe(path, p.stem, parse_package_name(p.stem), text, facts.pytorch, facts.torch_source))
    return out


# ---------------------------------------------------------------------------------------
# PyTorch: what the derived recipes will build


def torch_plan(req: Request, recipes: list[SourceRecipe], torch_at_pin: str, pin_label: str) -> tuple[str, str, str]:
    """(mode, version, how) with mode "keep" (the source override builds it), "native"
    (nixpkgs' torch at the pin) or "new" (a new source override from --torch-src); refuses when
    the recipes would not build ``req.pytorch``."""
    want = vtuple(req.pytorch)
    full = len(want) > 2
    overrides = sorted({r.override for r in recipes if r.override}, key=vtuple)
    if req.torch_src:
        if not full:
            raise ValidationError(f"--torch-src builds an exact version: give --pytorch X.Y.Z, not {req.pytorch}.")
        if len(overrides) != 1 or any(r.override is None for r in recipes if _is_torch_recipe(r)):
            raise RefusedError(
                f"--torch-src: the recipes of '{req.source}' have no torch source override to point at "
                f"{req.pytorch}; torchbot keeps their overlays as written. Derive from a branch whose recipes "
                "build torch from source. Nothing was created."
            )
        return "new", req.pytorch, f"source override {req.pytorch} (rev {req.torch_src[0]}, from --torch-src)"
    if overrides:
        v = overrides[-1]
        if len(overrides) > 1:
            raise RefusedError(
                f"The recipes of '{req.source}' override torch to several versions ({', '.join(overrides)}); "
                "fix them before deriving a branch. Nothing was created."
            )
        if Version(v).line == Version(req.pytorch).line and (not full or vtuple(v) == want):
            native = [r.package for r in recipes if _is_torch_recipe(r) and r.override is None]
            if native and Version(torch_at_pin).line != Version(req.pytorch).line:
                raise RefusedError(
                    f"--pytorch {req.pytorch}: {len(native)} recipes of '{req.source}' build nixpkgs' torch, and "
                    f"nixpkgs {pin_label} has torch {torch_at_pin}. Nothing was created."
                )
            return "keep", v, f"source override {v} (kept from {req.source})"
        if Version(torch_at_pin).line == Version(req.pytorch).line:
            raise RefusedError(
                f"--pytorch {req.pytorch}: nixpkgs {pin_label} has torch {torch_at_pin} natively, but the recipes of "
                f"'{req.source}' override torch to {v} and torchbot does not remove overlays. Derive from a branch "
                f"without a source override, or give --torch-src REV,HASH to build {req.pytorch} from source. "
                "Nothing was created."
            )
        raise RefusedError(
            f"--pytorch {req.pytorch} is not what the recipes would build: nixpkgs {pin_label} has torch "
            f"{torch_at_pin} and the recipes of '{req.source}' override it to {v}. Give --torch-src REV,HASH to "
            f"build {req.pytorch} from source, or a pin whose nixpkgs has torch {req.pytorch}. Nothing was created."
        )
    if Version(torch_at_pin).line == Version(req.pytorch).line and (not full or vtuple(torch_at_pin) == want):
        return "native", torch_at_pin, f"nixpkgs' torch {torch_at_pin} at {pin_label}"
    raise RefusedError(
        f"--pytorch {req.pytorch} is not what the recipes would build: nixpkgs {pin_label} has torch {torch_at_pin} "
        f"and the recipes of '{req.source}' build nixpkgs' torch (no source override). Give --torch-src REV,HASH "
        f"to build {req.pytorch} from source, or a pin whose nixpkgs has torch {req.pytorch}. Nothing was created."
    )


def _is_torch_recipe(r: SourceRecipe) -> bool:
    return r.parsed is None or r.parsed.kind == "pytorch"


# ---------------------------------------------------------------------------------------
# Which recipes the new branch has, and from which source recipe each is made


def _nearest(version: str, available: list[str]) -> str:
    """The source CUDA version to derive ``version`` from: the nearest of the same major,
    else the newest of the nearest major."""
    v = vtuple(version)

    def key(a):
        t = vtuple(a)
        same = t[0] == v[0]
        return (not same, abs(t[0] - v[0]), abs(t[1] - v[1]) if same else 0, tuple(-x for x in t))

    return min(available, key=key)


def plan_targets(
    req: Request, recipes: list[SourceRecipe], catalog
) -> tuple[list[tuple[ParsedName, SourceRecipe]], list[str]]:
    """(target name, template recipe) pairs and notes. Refuses (ValidationError naming every
    conflict) when an asked architecture cannot be built or the source never builds it."""
    notes: list[str] = []
    gpu = [r for r in recipes if r.parsed and r.parsed.cuda]
    other = [r for r in recipes if not (r.parsed and r.parsed.cuda)]
    src_versions = sorted({r.parsed.cuda for r in gpu}, key=vtuple, reverse=True)
    problems: list[str] = []
    for v in req.cuda:
        if v not in catalog.cuda:
            problems.append(f"CUDA {v} is not a known toolkit ({', '.join(catalog.cuda)})")
    for a in req.gpu or ():
        arch = catalog.gpu_archs.get(a)
        if arch is None:
            problems.append(f"unknown GPU architecture '{a}'")
            continue
        for v in req.cuda:
            if v in catalog.cuda and not arch.cuda_ok(v):
                if arch.min_cuda and vtuple(v) < vtuple(arch.min_cuda):
                    problems.append(f"{arch.upper} needs CUDA >= {arch.min_cuda}, not {v}")
                else:
                    problems.append(f"{arch.upper} is not supported after CUDA {arch.max_cuda} (asked {v})")
        if req.cpu:
            allowed = catalog.allowed_isas(arch)
            if allowed and not set(allowed) & set(req.cpu):
                problems.append(f"{arch.upper} builds only for {', '.join(arch.platforms)}: --cpu names none of its "
                                f"ISAs ({', '.join(allowed)})")
        if not any(r.parsed.gpu_arch == a for r in gpu):
            built = sorted({r.parsed.gpu_arch for r in gpu}, key=lambda x: vtuple(x[2:]))
            problems.append(
                f"{a} is not built by '{req.source}' (it builds {', '.join(built) or 'no GPU architecture'}); "
                "torchbot derives recipes only from recipes the source has"
            )
    for isa in req.cpu or ():
        if isa not in catalog.isas:
            problems.append(f"unknown CPU ISA '{isa}'")
    if req.cuda and not src_versions:
        problems.append(f"'{req.source}' has no CUDA recipes to derive CUDA {', '.join(req.cuda)} recipes from")
    if problems:
        raise ValidationError(f"Cannot create branch '{req.name}': {'; '.join(dict.fromkeys(problems))}.")

    targets: list[tuple[ParsedName, SourceRecipe]] = []
    by_key = {(r.parsed.kind, r.parsed.cuda, r.parsed.gpu_arch, r.parsed.cpu_isa): r for r in gpu}
    dropped: dict[str, list[str]] = {}
    for v in req.cuda:
        base = v if v in src_versions else _nearest(v, src_versions)
        keys = {(k, a, i) for (k, c, a, i) in by_key if c == base}
        if req.gpu:
            keys = {(k, a, i) for (k, c, a, i) in by_key if a in req.gpu}
            keys = {key for key in keys if key[1] in req.gpu}
        if base != v:
            notes.append(f"CUDA {v} recipes derived from the source's CUDA {base} recipes")
        for kind, a, isa in sorted(keys, key=lambda k: (k[0] != "pytorch", vtuple(k[1][2:]), k[2])):
            if req.cpu and isa not in req.cpu:
                continue
            arch = catalog.gpu_archs.get(a)
            if arch is not None and not arch.cuda_ok(v):
                dropped.setdefault(v, []).append(a)
                continue
            cands = [c for (k, c, aa, ii) in by_key if (k, aa, ii) == (kind, a, isa)]
            tmpl_v = v if v in cands else _nearest(v, cands)
            tmpl = by_key[(kind, tmpl_v, a, isa)]
            targets.append((ParsedName(kind, req.python, v, a, isa), tmpl))
    for v, archs in dropped.items():
        notes.append(f"CUDA {v} cannot build {', '.join(sorted(set(archs)))}: left out")
    for r in other:
        if r.parsed is None:
            targets.append((None, r))
            continue
        if r.parsed.cpu_isa and req.cpu and r.parsed.cpu_isa not in req.cpu:
            continue
        targets.append((ParsedName(r.parsed.kind, req.python, None, None, r.parsed.cpu_isa, r.parsed.is_darwin), r))
    return targets, notes


# ---------------------------------------------------------------------------------------
# Text transformations


def python_swap(text: str, old: str, new: str) -> str:
    """Python ``old`` -> ``new`` in a recipe or manifest: package sets, tags, 'Python 3.13'."""
    if old == new:
        return text
    t_old, t_new = python_tag(old), python_tag(new)
    text = re.sub(r"\bpython3Packages\b", f"{t_new}Packages", text)
    text = re.sub(rf"(?<![A-Za-z0-9]){t_old}(?!\d)", t_new, text)
    return re.sub(rf"(?i)(python:?\s*){re.escape(old)}(?!\.?\d)", lambda m: m[1] + new, text)


def cuda_swap(text: str, old: str, new: str) -> str:
    """CUDA ``old`` -> ``new`` in a recipe: package set (incl. the major alias), names, texts."""
    if old == new:
        return text
    o, n = old.replace(".", "_"), new.replace(".", "_")
    text = re.sub(rf"\bcudaPackages_{o}\b", f"cudaPackages_{n}", text)
    if old.endswith(".0"):
        text = re.sub(rf"\bcudaPackages_{old.split('.')[0]}(?![_\d])", f"cudaPackages_{n}", text)
    text = re.sub(rf"(?<![A-Za-z0-9])cuda{o}(?!\d)", f"cuda{n}", text)
    return re.sub(rf"(CUDA[A-Za-z_]*[ :=]*){re.escape(old)}(?!\.?\d)", lambda m: m[1] + new, text)


def pin_swap(text: str, new_pin: str) -> tuple[str, bool]:
    """Every nixpkgs pin of the ``fetchTarball`` URLs -> ``new_pin``; a ``sha256`` of the old
    tarball is dropped (it would not match). Returns (text, sha256 dropped)."""
    changed = PIN_RE.sub(lambda m: m.group(1) + new_pin + m.group(3), text)
    if changed == text:
        return text, False
    dropped = _TARBALL_SHA_RE.sub(lambda m: m[1], changed)
    return dropped, dropped != changed


def derive_recipes(req: Request, recipes: list[SourceRecipe], catalog, torch: tuple[str, str, str],
                   follow=None) -> Derived:
    """The new branch's recipes from the source's (``torch``: the :func:`torch_plan`; ``follow``:
    the source's statements made the new branch's, release.branches.statements)."""
    mode, version, how = torch
    out = Derived(torch=version, torch_how=how)
    targets, notes = plan_targets(req, recipes, catalog)
    out.notes.extend(notes)
    dropped_sha = 0
    archs: dict[str, list[str]] = {}
    isas: list[str] = []
    used_templates: set[str] = set()
    for tgt, tmpl in targets:
        used_templates.add(tmpl.path)
        src_py = tmpl.parsed.python if tmpl.parsed else None
        text = tmpl.text
        if src_py and src_py != req.python:  # the branch's package set, named (overlays re-targeted with it)
            text = re.sub(r"\bpython3Packages\b", f"{python_tag(req.python)}Packages", text)
        if tgt is not None and tmpl.parsed and tmpl.parsed.cuda and tgt.cuda:
            text = cuda_swap(text, tmpl.parsed.cuda, tgt.cuda)
        text, dropped = pin_swap(text, req.pin)
        dropped_sha += dropped
        if mode == "new" and tmpl.override:
            text = torch_swap(text, tmpl.override, version, req.torch_src[0], req.torch_src[1])
        if follow is not None:
            text = follow.nix(text)
        if src_py and (follow is None or src_py != follow.source.python):
            text = python_swap(text, src_py, req.python)
        if tgt is None:
            name = tmpl.package if not src_py else python_swap(tmpl.package, src_py, req.python)
        else:
            name = package_name(tgt.kind, tgt.python, cuda=tgt.cuda, gpu_arch=tgt.gpu_arch, cpu_isa=tgt.cpu_isa,
                                darwin=tgt.is_darwin)
            if tgt.cuda and tgt.kind == "pytorch":
                archs.setdefault(tgt.cuda, [])
                if tgt.gpu_arch not in archs[tgt.cuda]:
                    archs[tgt.cuda].append(tgt.gpu_arch)
            elif tgt.cpu_isa and not tgt.cuda and tgt.kind == "pytorch" and tgt.cpu_isa not in isas:
                isas.append(tgt.cpu_isa)
            out.darwin = out.darwin or tgt.is_darwin
        out.recipes[f"{RECIPES_DIR}/{name}.nix"] = text
        for a in set(re.findall(r"\bcudaPackages_\d+(?:_\d+)?\b", text)):
            out.cuda_attrs[a] = out.cuda_attrs.get(a, 0) + 1
    out.removed = [r.path for r in recipes if r.path not in out.recipes]
    out.archs = {v: tuple(sorted(a, key=lambda x: vtuple(x[2:]))) for v, a in archs.items()}
    out.cpu_isas = tuple(isas)
    if dropped_sha:
        out.notes.append(f"{dropped_sha} recipes pinned the old nixpkgs tarball's sha256: dropped (it cannot match "
                         f"{req.pin[:7]}); add the new one with nix-prefetch-url --unpack")
    return out
