"""What one recipe builds, read from its Nix syntax tree (pure: text in, facts out).

The package is the file name (what ``flox build`` and ``flox publish`` take). The facts come
from the expression the file evaluates to, followed through its ``let`` bindings
(``release/recipes/buildchain.py``, on the tree-sitter-nix tree of ``release/recipes/nixtree.py``):

- the build: ``<nixpkgs>.<pythonXPackages>.<torch|pytorch|torchvision|torchaudio>`` with its
  ``.override { … }`` arguments and ``.overrideAttrs (old: { … })`` attributes;
- the nixpkgs it is built from: the ``fetchTarball`` pin of that import (or none, for a
  callPackage recipe that takes its package set from the caller) and the import's overlays:
  the CUDA package set (``cudaPackages = final.cudaPackages_X_Y`` or the major alias
  ``cudaPackages_13``), a PyTorch source override (``version`` + ``fetchFromGitHub``), patched
  packages (a magma patch);
- the GPU target: ``gpuTargets``, else ``TORCH_CUDA_ARCH_LIST``, ``passthru.gpuArch``, the
  ``gpuArchSM`` / ``gpuArchNum`` bindings; for a torchvision/torchaudio recipe, the PyTorch it
  builds against: an inline ``torch.override``/``overrideAttrs`` (``customPytorch``), a sibling
  recipe it ``import``s, or a build-pytorch recipe fetched from GitHub;
- the CPU ISA from the compiler flags (``cpuFlags``), else ``passthru.cpuISA``; platforms from
  ``meta.platforms`` (a list inherited from nixpkgs follows the ISA);
- ``pname``, ``requiredSystemFeatures`` and ``cmakeFlags`` (``-DCUDA_VERSION``).

Where the recipe does not say, the file name does (``cudaX_Y``, ``smNN``, the ISA), and a note
says so; where the recipe and its name disagree, the recipe wins and a note says so. A recipe
is a problem only when it is unusable: a syntax error (named by line), not a
PyTorch/torchvision/torchaudio build, or with no GPU or CPU target at all.

May import: config, release.recipes.nixtree, release.recipes.buildchain, release.recipes.cpuflags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.catalog import Catalog, TorchSource
from config.naming import ParsedName, parse_package_name
from release.recipes.buildchain import (
    KINDS,
    NONE_PIN,
    Build,
    Nixpkgs,
    bindings_under,
    build_of,
    nixpkgs_of,
    peel,
    version_and_src,
)
from release.recipes.cpuflags import SCRIPTS, cpu_flags
from release.recipes.nixtree import STRINGS, UNKNOWN, Attrs, NixSyntaxError, Scope, Source, parse

__all__ = ["NONE_PIN", "RECIPES_DIR", "RecipeFacts", "isa_of_flags", "read_recipe"]

RECIPES_DIR = ".flox/pkgs"

_PYSET = re.compile(r"^python(\d)(\d+)?Packages$")
_CMAKE_CUDA = re.compile(r"-DCUDA_VERSION=(\d+)\.(\d+)")
_ARCH_LIST = re.compile(r"TORCH_CUDA_ARCH_LIST\s*=\s*\"?([^\"\s;]+)")
_PINS = re.compile(rb"nixpkgs/archive/([0-9a-f]{40})")
_MENTIONS = re.compile(rb"\.\s*(torch|pytorch|torchvision|torchaudio)\s*\.\s*(override|overrideAttrs)\b")
_CUDA_SET = re.compile(r"cudaPackages_(\d+)(?:_(\d+))?")


@dataclass(frozen=True)
class RecipeFacts:
    """One recipe file, as read."""

    file: str  # .flox/pkgs/<package>.nix
    package: str  # the file name without .nix: what `flox build` takes
    kind: str | None = None  # pytorch | torchvision | torchaudio
    pname: str | None = None
    python: str | None = None  # "3.13"
    pin: str = NONE_PIN  # the nixpkgs commit the package is built from, or "none"
    pins: tuple[str, ...] = ()  # every nixpkgs commit the file names
    cuda: str | None = None  # "13.1"
    gpu_arch: str | None = None  # "sm90"
    gpu_targets: tuple[str, ...] = ()  # as written: "9.0"
    cpu_isa: str | None = None
    cpu_flags: tuple[str, ...] = ()
    darwin: bool = False
    platform: str = "x86_64-linux"  # where the package runs
    platforms: tuple[str, ...] = ()  # where it builds and runs: meta.platforms, less what the ISA cannot run on
    platforms_inherited: bool = False  # meta.platforms comes from nixpkgs: the ISA's platform
    listed_platforms: tuple[str, ...] = ()  # meta.platforms exactly as the recipe lists it
    pytorch: str | None = None  # the PyTorch version the recipe builds from source (None: nixpkgs' torch)
    torch_source: TorchSource | None = None
    patches: tuple[str, ...] = ()  # packages an overlay patches (magma)
    big_parallel: bool = False
    torch_from: str | None = None  # companions: inline | import:<package> | remote:<owner/repo>@<rev>:<package>
    inner_pname: str | None = None  # the pname of an inline PyTorch
    notes: tuple[str, ...] = ()
    problem: str | None = None  # set when the recipe is unusable

    @property
    def usable(self) -> bool:
        return self.problem is None

    @property
    def sibling(self) -> str | None:
        """The sibling recipe a companion imports."""
        if self.torch_from and self.torch_from.startswith("import:"):
            return self.torch_from[len("import:"):]
        return None


# ---------------------------------------------------------------------------------------
# small readings


def _arch_key(target: object) -> str | None:
    """"9.0" / "sm_90" / "90" / "9.0+PTX" / "sm90" -> "sm90"; "mps" -> "mps"."""
    if not isinstance(target, str):
        return None
    t = target.strip().lower().removesuffix("+ptx")
    if t == "mps":
        return "mps"
    m = re.fullmatch(r"(\d+)\.(\d)[a-z]?", t)
    if m:
        return f"sm{m[1]}{m[2]}"
    m = re.fullmatch(r"(?:sm_?|compute_)?(\d{2,3})[a-z]?", t)
    if m:
        return f"sm{m[1]}"
    return None


def isa_of_flags(catalog: Catalog, flags: tuple[str, ...]) -> str | None:
    """The catalog ISA whose compile flags these are (exactly, else the best one they include)."""
    if not flags:
        return None
    given = set(flags)
    for isa in catalog.isas.values():
        if set(isa.flags) == given:
            return isa.key
    for f in flags:
        if f.startswith("-march=armv9"):
            return "armv9" if "armv9" in catalog.isas else None
        if f.startswith(("-march=armv8.2", "-march=armv8-a")):
            return "armv8_2" if "armv8_2" in catalog.isas else None
    fits = [i for i in catalog.isas.values() if set(i.flags) <= given]
    return max(fits, key=lambda i: len(i.flags)).key if fits else None


def _literal_list(val) -> list[str] | None:
    if isinstance(val, list) and all(isinstance(x, str) for x in val):
        return val
    return None


def _pins(src: Source) -> tuple[str, ...]:
    """Every nixpkgs commit the file's strings name, in order (comments do not count)."""
    top = src.tree.root_node
    out = []
    for m in _PINS.finditer(src.data):
        n = top.descendant_for_byte_range(m.start(), m.end())
        while n is not None and n.type not in STRINGS and n.type not in ("comment", "uri_expression"):
            n = n.parent
        if n is not None and n.type != "comment":
            out.append(m[1].decode())
    return tuple(dict.fromkeys(out))


def _script(b: Build | None) -> str:
    """preConfigure / preBuild / configurePhase text of a build (interpolations as written)."""
    if b is None:
        return ""
    out = []
    for name in SCRIPTS:
        out += b.src.strings_in(b.attr_node(name))
    return "\n".join(out)


def _strings_of(b: Build | None, name: str) -> list[str]:
    return b.strings_of(name) if b is not None else []


def _override_cuda(b: Build | None) -> tuple[str, str | None] | None:
    """``cudaPackages = pkgs.cudaPackages_X_Y`` as an ``override`` argument."""
    node = b.arg_node("cudaPackages") if b is not None else None
    if node is None:
        return None
    m = next(filter(None, map(_CUDA_SET.fullmatch, b.src.identifiers_in(node))), None)
    return (m[1], m[2]) if m else None


# ---------------------------------------------------------------------------------------
# the reading, step by step


@dataclass
class _Reading:
    """What the steps of ``read_recipe`` share."""

    catalog: Catalog
    path: str
    package: str
    named: ParsedName | None
    src: Source
    b: Build
    pins: tuple[str, ...]
    kind: str | None = None
    inner: Build | None = None  # a companion's inline PyTorch
    torch_from: str | None = None
    nixpkgs: Nixpkgs = field(default_factory=Nixpkgs)
    inner_pkgs: Nixpkgs | None = None
    script: str = ""
    notes: list[str] = field(default_factory=list)


def read_recipe(catalog: Catalog, filename: str, text: str | bytes) -> RecipeFacts:
    """The facts of one recipe file (``filename`` is its name under .flox/pkgs)."""
    package = filename.removesuffix(".nix")
    path = f"{RECIPES_DIR}/{filename}"
    named = parse_package_name(package)
    try:
        src = parse(text)
        node, scope = peel(src, src.root, Scope(src))
        b = build_of(src, node, scope)
    except (NixSyntaxError, ValueError) as err:
        return RecipeFacts(path, package, problem=f"unparsable: {err}")
    r = _Reading(catalog, path, package, named, src, b, _pins(src), kind=b.kind)
    # a wrapper that only imports another recipe is read through that recipe
    if b.kind is None and not b.imported:
        return _fallback(r, scope)
    _companion_torch(r)
    r.nixpkgs = nixpkgs_of(b)
    r.inner_pkgs = nixpkgs_of(r.inner) if r.inner is not None else None
    r.script = _script(b) + _script(r.inner)
    python = _python(r)
    gpu = _gpu_target(r)
    listed = _literal_list(_meta_platforms(b))
    darwin = gpu.darwin or listed == ["aarch64-darwin"]
    read = cpu_flags([b, r.inner], r.script)
    flags = read.flags
    if read.unread:
        r.notes.append(f"the CPU flags {', '.join(f'`{u}`' for u in read.unread)} are computed by nixpkgs; "
                       "the CPU ISA is not read from them")
    isa = _cpu_isa(r, flags, gpu.passthru_isa, darwin)
    isa = None if darwin else isa
    gpu_arch = None if darwin else gpu.arch
    cuda = _cuda(r, gpu_arch) if gpu_arch else None
    platform, platforms, inherited, listed_platforms = _platforms(r, listed, isa, darwin)
    source = _torch_source(r)
    pname = _string_attr(b, "pname")
    pin = r.nixpkgs.pin
    if pin == NONE_PIN and not r.nixpkgs.from_caller and r.pins:
        pin = r.pins[0]
        r.notes.append("nixpkgs pin read from the file (its import is not the build's base)")
    if pname and pname != package:
        r.notes.append(f"pname is {pname}; the package is the file name")
    if b.imported and r.kind is None:
        r.kind = named.kind if named else None
        r.torch_from = b.imported
    problem = None
    if r.kind is None:
        problem = "does not build PyTorch, torchvision or torchaudio"
    elif not gpu_arch and not isa and not darwin:
        problem = "no GPU or CPU target (no gpuTargets, GPU architecture, CPU flags, cpuISA or darwin platform)"
    patches = tuple(dict.fromkeys(r.nixpkgs.patches + (r.inner_pkgs.patches if r.inner_pkgs else ())))
    return RecipeFacts(
        file=path, package=package, kind=r.kind, pname=pname, python=python, pin=pin, pins=r.pins, cuda=cuda,
        gpu_arch=gpu_arch, gpu_targets=gpu.targets, cpu_isa=isa, cpu_flags=flags, darwin=darwin,
        platform=platform, platforms=platforms, platforms_inherited=inherited, listed_platforms=listed_platforms,
        pytorch=source.version if source else None, torch_source=source, patches=patches,
        big_parallel=any("big-parallel" in t for t in _strings_of(b, "requiredSystemFeatures")),
        torch_from=r.torch_from, inner_pname=_string_attr(r.inner, "pname"), notes=tuple(r.notes), problem=problem,
    )


def _string_attr(b: Build | None, name: str) -> str | None:
    v = b.attr(name) if b is not None else None
    return v if isinstance(v, str) else None


def _meta_platforms(b: Build):
    meta = b.attr("meta")
    return meta.get("platforms") if isinstance(meta, Attrs) else UNKNOWN


def _companion_torch(r: _Reading) -> None:
    """A torchvision/torchaudio build's ``torch`` argument: an inline PyTorch build, or an import."""
    if r.kind not in ("torchvision", "torchaudio"):
        return
    tnode = r.b.arg_node("torch")
    if tnode is None:
        return
    tn, tscope = peel(r.src, tnode, r.b.scope)
    tb = build_of(r.src, tn, tscope)
    if tb.imported:
        r.torch_from = tb.imported
    elif tb.kind == "pytorch":
        r.inner, r.torch_from = tb, "inline"


def _python(r: _Reading) -> str | None:
    python = None
    for part in (*r.b.path, *(r.inner.path if r.inner else ())):
        m = _PYSET.match(part)
        if m and m[2]:
            python = f"{m[1]}.{m[2]}"
            break
    named = r.named
    if named and python and named.python != python:
        r.notes.append(
            f"the name says Python {named.python}, the recipe builds with python{python.replace('.', '')}Packages")
    return python or (named.python if named else None)


@dataclass
class _Gpu:
    targets: tuple[str, ...]
    arch: str | None
    darwin: bool
    passthru_isa: object


def _gpu_target(r: _Reading) -> _Gpu:
    """gpuTargets, else TORCH_CUDA_ARCH_LIST, passthru.gpuArch, the gpuArchSM / gpuArchNum
    bindings, else the name; ``cudaSupport = false`` means none."""
    b, inner, named = r.b, r.inner, r.named
    cuda_support = b.arg("cudaSupport")
    if cuda_support is UNKNOWN and inner is not None:
        cuda_support = inner.arg("cudaSupport")
    targets: list[str] = []
    for build in (b, inner):
        t = _literal_list(build.arg("gpuTargets")) if build is not None else None
        if t:
            targets = t
            break
    if not targets:
        m = _ARCH_LIST.search(r.script)
        if m and _arch_key(m[1].split(";")[0]):
            targets = [t for t in re.split(r"[;\s]+", m[1]) if t]
    passthru = b.attr("passthru")
    pt_gpu = passthru.get("gpuArch") if isinstance(passthru, Attrs) else UNKNOWN
    pt_isa = passthru.get("cpuISA") if isinstance(passthru, Attrs) else UNKNOWN
    if not targets and isinstance(pt_gpu, str):
        targets = [pt_gpu]
    if not targets:
        for name in ("gpuArchSM", "gpuArchNum"):
            bound = (inner or b).scope.lookup(name)
            v = bound.value() if bound else UNKNOWN
            if isinstance(v, str) and _arch_key(v):
                targets = [v]
                break
    archs = [a for a in (_arch_key(t) for t in targets) if a]
    darwin = "mps" in archs or (named is not None and named.is_darwin)
    gpu_arch = next((a for a in archs if a != "mps"), None)
    if cuda_support is False:
        gpu_arch = None
    if len({a for a in archs if a != "mps"}) > 1:
        r.notes.append(f"builds several GPU targets ({', '.join(targets)}); listed under {gpu_arch}")
    if named and named.gpu_arch and gpu_arch and named.gpu_arch != gpu_arch:
        r.notes.append(f"the name says {named.gpu_arch}, the recipe builds {gpu_arch}")
    if gpu_arch is None and named and named.gpu_arch and cuda_support is not False and not archs:
        gpu_arch = named.gpu_arch
        why = "computes it" if targets else "leaves it to nixpkgs"
        r.notes.append(f"GPU target {gpu_arch} taken from the name (the recipe {why})")
    return _Gpu(tuple(targets), gpu_arch, darwin, pt_isa)


def _cpu_isa(r: _Reading, flags: tuple[str, ...], passthru_isa: object, darwin: bool) -> str | None:
    """The compiler flags decide what CPU the build needs; else passthru.cpuISA, else the name."""
    catalog, named = r.catalog, r.named
    isa = isa_of_flags(catalog, flags)
    if isinstance(passthru_isa, str) and passthru_isa:
        if isa and passthru_isa != isa:
            r.notes.append(f"passthru.cpuISA says {passthru_isa}, the compiler flags build {isa}")
        isa = isa or (passthru_isa if passthru_isa in catalog.isas else None)
    if isa is None and named and named.cpu_isa and not darwin:
        isa = named.cpu_isa if named.cpu_isa in catalog.isas else None
        if isa:
            r.notes.append(f"CPU ISA {isa} taken from the name")
    if named and named.cpu_isa and isa and named.cpu_isa != isa:
        r.notes.append(f"the name says {named.cpu_isa}, the recipe builds {isa}")
    return isa


def _cuda(r: _Reading, gpu_arch: str) -> str | None:
    """The CUDA version: the overlay's (or override's) cudaPackages_X_Y; the major alias with the
    minor from -DCUDA_VERSION or the name; else -DCUDA_VERSION; else the name."""
    attr = r.nixpkgs.cuda_attr or (r.inner_pkgs.cuda_attr if r.inner_pkgs else None)
    attr = _override_cuda(r.b) or _override_cuda(r.inner) or attr
    cmake = _CMAKE_CUDA.search(" ".join(_strings_of(r.b, "cmakeFlags") + _strings_of(r.inner, "cmakeFlags")))
    name_cuda = r.named.cuda if r.named else None
    cuda = None
    if attr and attr[1] is not None:
        cuda = f"{attr[0]}.{attr[1]}"
    elif attr:
        major = attr[0]
        if cmake and cmake[1] == major:
            cuda = f"{cmake[1]}.{cmake[2]}"
        elif name_cuda and name_cuda.split(".")[0] == major:
            cuda = name_cuda
        else:
            cuda = major
        r.notes.append(f"cudaPackages_{major} is an alias; CUDA {cuda} from "
                       + ("-DCUDA_VERSION" if cmake and cmake[1] == major else "the name"))
    elif cmake:
        cuda = f"{cmake[1]}.{cmake[2]}"
    elif name_cuda:
        cuda = name_cuda
        if r.torch_from is None or r.torch_from == "inline":
            r.notes.append(f"CUDA {cuda} taken from the name (the recipe uses nixpkgs' default cudaPackages)")
    if name_cuda and cuda and name_cuda != cuda:
        r.notes.append(f"the name says CUDA {name_cuda}, the recipe builds with CUDA {cuda}")
    return cuda


def _platforms(r: _Reading, listed: list[str] | None, isa: str | None, darwin: bool):
    """(platform, platforms, inherited, listed): meta.platforms less what the ISA cannot run on;
    an inherited list follows the ISA."""
    catalog = r.catalog
    platform = "aarch64-darwin" if darwin else (catalog.isas[isa].platform if isa in catalog.isas else None)
    if listed is None:
        platform = platform or "x86_64-linux"
        return platform, (platform,), True, ()
    platform = platform or (listed[0] if listed else "x86_64-linux")
    wrong = [p for p in listed if p != platform] if (isa or darwin) else []
    platforms = tuple(p for p in listed if p not in wrong) or (platform,)
    if wrong:
        r.notes.append(
            f"meta.platforms lists {', '.join(wrong)}, but a {isa or 'darwin'} build runs on {platform} only")
    return platform, platforms, False, tuple(listed)


def _torch_source(r: _Reading) -> TorchSource | None:
    """A PyTorch source override: in the package set's overlays, or in the build's own attributes."""
    source = (r.inner_pkgs.torch_source if r.inner_pkgs else None) or r.nixpkgs.torch_source
    b = r.b
    if source is None and r.kind == "pytorch" and b.attr_node("src") is not None and b.attr_node("version") is not None:
        source = version_and_src(r.src, b.attrsets[0].node)
    return source


def _fallback(r: _Reading, scope: Scope) -> RecipeFacts:
    """A recipe whose final expression is not an override chain torchbot knows: facts from its
    bindings and its name, with a note; a problem when nothing says it builds PyTorch."""
    src, b, named, path, package, pins = r.src, r.b, r.named, r.path, r.package, r.pins
    mentions = next((m for m in _MENTIONS.finditer(src.data) if src.in_code(m.start(1))), None)
    if not mentions:
        built = ".".join(((b.root,) if b.root else ()) + b.path) or "something else"
        return RecipeFacts(path, package, pins=pins,
                           problem=f"does not build PyTorch, torchvision or torchaudio (it builds {built})")
    kind = KINDS[mentions[1].decode()]
    notes = ["the recipe's shape is not one torchbot knows; facts read from its bindings and its name"]
    everywhere = bindings_under(src, src.root)
    targets = next((_literal_list(src.value(v, scope)) or [] for p, v in everywhere
                    if p[-1] == "gpuTargets" and v.type == "list_expression"), [])
    gpu_arch = next((a for a in map(_arch_key, targets) if a and a != "mps"), None) \
        or (named.gpu_arch if named else None)
    bound = scope.lookup("cpuFlags")
    flags = tuple(_literal_list(bound.value()) or ()) if bound else ()
    isa = isa_of_flags(r.catalog, flags) or (named.cpu_isa if named else None)
    darwin = bool(named and named.is_darwin)
    cm = next((m for p, v in everywhere if p[-1] == "cudaPackages"
               for m in map(_CUDA_SET.fullmatch, src.identifiers_in(v)) if m), None)
    cuda = (f"{cm[1]}.{cm[2]}" if cm and cm[2] else (named.cuda if named else None)) if gpu_arch else None
    catalog = r.catalog
    platform = "aarch64-darwin" if darwin else (catalog.isas[isa].platform if isa in catalog.isas else "x86_64-linux")
    problem = None if (gpu_arch or isa or darwin) else "no GPU or CPU target"
    return RecipeFacts(
        file=path, package=package, kind=kind, python=named.python if named else None,
        pin=pins[0] if pins else NONE_PIN, pins=pins, cuda=cuda, gpu_arch=gpu_arch, gpu_targets=tuple(targets),
        cpu_isa=isa, cpu_flags=flags, darwin=darwin, platform=platform, platforms=(platform,),
        platforms_inherited=True, notes=tuple(notes), problem=problem,
    )
