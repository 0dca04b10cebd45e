"""What one recipe builds, read from its Nix source (pure: text in, facts out).

The package is the file name (what ``flox build`` and ``flox publish`` take). The facts come
from the expression the file evaluates to, followed through its ``let`` bindings:

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
is a problem only when it is unusable: unparsable, not a PyTorch/torchvision/torchaudio build,
or with no GPU or CPU target at all.

May import: config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.catalog import Catalog, TorchSource
from config.naming import parse_package_name
from release.recipes.nixscan import (
    UNKNOWN, Attrs, Node, NixSyntaxError, Scan, Scope, scan,
)

RECIPES_DIR = ".flox/pkgs"
NONE_PIN = "none"

_KINDS = {"torch": "pytorch", "pytorch": "pytorch", "torch-bin": "pytorch", "torchvision": "torchvision",
          "torchaudio": "torchaudio"}
_OVERRIDES = ("override", "overrideAttrs", "overridePythonAttrs")
_NIXPKGS_URL = re.compile(r"nixpkgs/archive/([0-9a-f]{40})(?:\.tar\.gz)?")
_ARCHIVE_URL = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/archive/([0-9a-f]{7,40})(?:\.tar\.gz)?")
_PYSET = re.compile(r"^python(\d)(\d+)?Packages$")
_CUDA_ATTR = re.compile(r"\bcudaPackages\s*=\s*[\w'.]*?\bcudaPackages_(\d+)(?:_(\d+))?\b")
_CMAKE_CUDA = re.compile(r"-DCUDA_VERSION=(\d+)\.(\d+)")
_ARCH_LIST = re.compile(r"TORCH_CUDA_ARCH_LIST\s*=\s*\"?([^\"\s;]+)")
_CONCAT = re.compile(r"concatStringsSep\s+\"[^\"]*\"\s+([A-Za-z_][\w'-]*)")
_FLAG = re.compile(r"(?<![\w-])(-m(?:arch=[\w.+-]+|avx[\w]*|no-[\w]+|fma|f16c|bmi2?|sse[\w.]*))")
_TORCH_OVERRIDE = re.compile(r"\btorch\s*=\s*[\w'.]+\.overrideAttrs\s*\(")
_PATCHED = re.compile(r"\b([A-Za-z_][\w-]*)\s*=\s*[\w']+\.\1\.overrideAttrs\s*\(")
_GROUP_AFTER = re.compile(r"\s*(?:[A-Za-z_][\w'-]*\s*:\s*)*(?:rec\s*)?\{")


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


@dataclass
class _Build:
    """An override chain: base attribute path, its override arguments and overrideAttrs sets."""

    scan: Scan
    scope: Scope
    root: str | None = None  # the identifier the base path starts from
    root_node: Node | None = None
    path: tuple[str, ...] = ()
    overrides: list[Attrs] = field(default_factory=list)  # outermost first
    attrsets: list[Attrs] = field(default_factory=list)  # outermost (last applied) first
    imported: str | None = None  # import ./x.nix / "${src}/…/x.nix"
    imported_node: Node | None = None

    @property
    def kind(self) -> str | None:
        return _KINDS.get(self.path[-1]) if self.path else None

    def arg(self, name: str):
        for a in self.overrides:
            if name in a.ranges():
                return a.get(name)
        return UNKNOWN

    def arg_node(self, name: str) -> Node | None:
        for a in self.overrides:
            if name in a.ranges():
                return a.node_of(name)
        return None

    def attr(self, name: str):
        for a in self.attrsets:
            if name in a.names():
                return a.get(name)
        return UNKNOWN

    def attr_range(self, name: str) -> tuple[int, int] | None:
        for a in self.attrsets:
            r = a.ranges().get(name)
            if r is not None:
                return r
        return None


def _peel(s: Scan, node: Node, scope: Scope, depth: int = 0) -> tuple[Node, Scope]:
    """Through lambdas (parameters into scope), lets, withs, parentheses and bound names."""
    while depth < 20:
        depth += 1
        k = node.kind
        if k == "lambda":
            scope = Scope(s, scope)
            scope.add_params(node.c, node.a)
            node = node.b
        elif k == "let":
            scope = Scope(s, scope)
            scope.add(node.c)
            node = node.b
        elif k in ("with", "paren"):
            node = node.b if k == "with" else node.a
        elif k == "ident":
            bound = scope.lookup(node.a)
            if bound is None:
                break
            node, scope = bound.node, bound.scope
        else:
            break
    return node, scope


def _fn_attrs(s: Scan, node: Node, scope: Scope) -> Attrs | None:
    """The attribute set an ``overrideAttrs`` argument returns (``old: { … }``, ``old: base // { … }``)."""
    node, inner = _peel(s, node, scope)
    val = s.value(node, inner)
    return val if isinstance(val, Attrs) else None


def _build(s: Scan, node: Node, scope: Scope) -> _Build:
    b = _Build(s, scope)
    for _ in range(20):
        node, scope = _peel(s, node, scope)
        b.scope = scope
        if node.kind == "app":
            fn, _ = _peel(s, node.a, scope)
            if fn.kind == "select" and fn.b[0][-1] in _OVERRIDES:
                path = fn.b[0]
                if path[-1] == "override":
                    val = s.value(_peel(s, node.b, scope)[0], scope)
                    if isinstance(val, Attrs):
                        b.overrides.append(val)
                else:
                    a = _fn_attrs(s, node.b, scope)
                    if a is not None:
                        b.attrsets.append(a)
                node = fn.a if len(path) == 1 else Node("select", fn.start, fn.end, fn.a, (path[:-1], None))
                continue
            # import PATH { … }  /  callPackage PATH { … }
            head, args = node, []
            while head.kind == "app":
                args.insert(0, head.b)
                head = head.a
            if head.kind in ("ident", "select") and args:
                name = head.a if head.kind == "ident" else head.b[0][-1]
                if name in ("import", "callPackage", "scopedImport"):
                    b.imported_node = args[0] if name != "scopedImport" else args[-1]
                    b.imported = _import_target(s, b.imported_node, scope)
            return b
        if node.kind == "select":
            base = node.a
            b.path = node.b[0]
            if base.kind == "ident":
                b.root = base.a
            b.root_node = base
            return b
        if node.kind == "ident":
            b.root = node.a
            return b
        return b
    return b


def _import_target(s: Scan, node: Node, scope: Scope) -> str | None:
    """``./x.nix`` -> "import:x"; ``"${src}/.flox/pkgs/x.nix"`` (src a GitHub archive) -> "remote:…"."""
    node, _ = _peel(s, node, scope)
    if node.kind == "path":
        stem = node.a.rsplit("/", 1)[-1]
        return "import:" + (stem[:-4] if stem.endswith(".nix") else stem)
    if node.kind == "str":
        raw = s.strings[node.a]
        stem = raw.rsplit("/", 1)[-1]
        stem = stem[:-4] if stem.endswith(".nix") else stem
        m = re.match(r"\$\{\s*([A-Za-z_][\w'-]*)\s*\}", raw)
        if m:
            bound = scope.lookup(m[1])
            if bound is not None:
                for text in s.strings_in(*bound.rng):
                    u = _ARCHIVE_URL.search(text)
                    if u:
                        return f"remote:{u[1]}@{u[2]}:{stem}"
        return "remote:?:" + stem
    return None


def _strings_reachable(s: Scan, rng: tuple[int, int], scope: Scope, depth: int = 0) -> list[str]:
    """String literals in a range and in the bindings its identifiers name (two levels)."""
    out = s.strings_in(*rng)
    if depth >= 2:
        return out
    for m in re.finditer(r"(?<![\w'.-])([A-Za-z_][\w'-]*)", s.code[rng[0]:rng[1]]):
        bound = scope.lookup(m[1])
        if bound is not None and bound.rng != rng and not (rng[0] <= bound.rng[0] < rng[1]):
            out += _strings_reachable(s, bound.rng, bound.scope, depth + 1)
    return out


@dataclass
class _Nixpkgs:
    pin: str = NONE_PIN
    cuda_attr: tuple[str, str | None] | None = None  # ("13", "1") or ("13", None) for the alias
    torch_source: TorchSource | None = None
    patches: tuple[str, ...] = ()
    from_caller: bool = False  # a callPackage parameter (no pin of its own)


def _nixpkgs_of(s: Scan, b: _Build) -> _Nixpkgs:
    """The package set a build's base path starts from: its pin and overlays."""
    out = _Nixpkgs()
    if b.root is None:
        if b.root_node is not None:
            _read_pkgset(s, (b.root_node.start, b.root_node.end), b.scope, out)
        return out
    bound = b.scope.lookup(b.root)
    if bound is None:
        out.from_caller = True
        return out
    _read_pkgset(s, bound.rng, bound.scope, out)
    return out


def _read_pkgset(s: Scan, rng: tuple[int, int], scope: Scope, out: _Nixpkgs) -> None:
    for texts in (s.strings_in(*rng), None):
        for text in texts if texts is not None else _strings_reachable(s, rng, scope):
            m = _NIXPKGS_URL.search(text)
            if m:
                out.pin = m[1]
                break
        if out.pin != NONE_PIN:
            break
    def code_facts():
        code = s.code[rng[0]:rng[1]]
        m = _CUDA_ATTR.search(code)
        patches = tuple(dict.fromkeys(p for p in _PATCHED.findall(code) if p not in ("torch", "python3Packages")))
        groups = [(m.end() - 1, s.close[m.end() - 1]) for m in _TORCH_OVERRIDE.finditer(s.code, rng[0], rng[1])]
        return ((m[1], m[2]) if m else None), patches, groups

    out.cuda_attr, out.patches, groups = s.memo(("pkgset", rng), code_facts)
    out.torch_source = _version_and_src(s, groups[0]) if groups else None


_VERSION = re.compile(r"\bversion\s*=\s*\x01(\d+)\x02")
_FETCH_GH = re.compile(r"\bfetchFromGitHub\s*\{")


def _version_and_src(s: Scan, group: tuple[int, int]) -> TorchSource | None:
    """``… { version = "X"; src = fetchFromGitHub { repo = "pytorch"; hash = …; }; }`` in a group
    (the overlay's ``torch = prev.torch.overrideAttrs (…)``)."""
    v = _VERSION.search(s.code, group[0], group[1])
    f = _FETCH_GH.search(s.code, group[0], group[1])
    if not v or not f:
        return None
    brace = f.end() - 1
    binds = s.bindings(brace + 1, s.close[brace])[0]

    def lit(name):
        r = binds.get(name)
        if r is None:
            return None
        node = s.expr(*r)
        return s.strings[node.a] if node.kind == "str" else None

    if (lit("repo") or "").lower() != "pytorch":
        return None
    version = s.strings[int(v[1])]
    if not re.fullmatch(r"\d+(?:\.\d+)+\S*", version):
        return None
    return TorchSource(version, lit("hash") or lit("sha256") or "")


# ---------------------------------------------------------------------------------------


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
        if f.startswith("-march=armv8.2") or f.startswith("-march=armv8-a"):
            return "armv8_2" if "armv8_2" in catalog.isas else None
    fits = [i for i in catalog.isas.values() if set(i.flags) <= given]
    return max(fits, key=lambda i: len(i.flags)).key if fits else None


def _literal_list(val) -> list[str] | None:
    if isinstance(val, list) and all(isinstance(x, str) for x in val):
        return val
    return None


def read_recipe(catalog: Catalog, filename: str, text: str) -> RecipeFacts:
    """The facts of one recipe file (``filename`` is its name under .flox/pkgs)."""
    package = filename[:-4] if filename.endswith(".nix") else filename
    path = f"{RECIPES_DIR}/{filename}"
    named = parse_package_name(package)
    try:
        s = scan(text)
        root = s.expr(0, len(s.code))
        node, scope = _peel(s, root, Scope(s))
        b = _build(s, node, scope)
    except (NixSyntaxError, KeyError, IndexError, ValueError) as err:
        return RecipeFacts(path, package, problem=f"unparsable: {err}")
    notes: list[str] = []
    pins = tuple(dict.fromkeys(m[1] for t in s.strings for m in [_NIXPKGS_URL.search(t)] if m))

    # The build itself; a wrapper that only imports another recipe is read through that recipe.
    if b.kind is None and not b.imported:
        return _fallback(catalog, s, scope, path, package, named, pins, b)
    inner: _Build | None = None
    torch_from = None
    kind = b.kind
    if kind in ("torchvision", "torchaudio"):
        tnode = b.arg_node("torch")
        if tnode is not None:
            tn, tscope = _peel(s, tnode, b.scope)
            tb = _build(s, tn, tscope)
            if tb.imported:
                torch_from = tb.imported
            elif tb.kind == "pytorch":
                inner, torch_from = tb, "inline"
    nixpkgs = _nixpkgs_of(s, b)
    inner_pkgs = _nixpkgs_of(s, inner) if inner is not None else None

    pname = b.attr("pname")
    pname = pname if isinstance(pname, str) else None
    inner_pname = None
    if inner is not None:
        ip = inner.attr("pname")
        inner_pname = ip if isinstance(ip, str) else None

    # Python
    python = None
    for part in (*b.path, *(inner.path if inner else ())):
        m = _PYSET.match(part)
        if m and m[2]:
            python = f"{m[1]}.{m[2]}"
            break
    if named and python and named.python != python:
        notes.append(f"the name says Python {named.python}, the recipe builds with python{python.replace('.', '')}Packages")
    python = python or (named.python if named else None)

    # GPU target
    cuda_support = b.arg("cudaSupport")
    if cuda_support is UNKNOWN and inner is not None:
        cuda_support = inner.arg("cudaSupport")
    targets: list[str] = []
    for src in (b, inner):
        if src is None:
            continue
        t = _literal_list(src.arg("gpuTargets"))
        if t:
            targets = t
            break
    pre = _script(s, b) + (_script(s, inner) if inner else "")
    if not targets:
        m = _ARCH_LIST.search(pre)
        if m and _arch_key(m[1].split(";")[0]):
            targets = [t for t in re.split(r"[;\s]+", m[1]) if t]
    passthru = b.attr("passthru")
    pt_gpu = passthru.get("gpuArch") if isinstance(passthru, Attrs) else UNKNOWN
    pt_isa = passthru.get("cpuISA") if isinstance(passthru, Attrs) else UNKNOWN
    if not targets and isinstance(pt_gpu, str):
        targets = [pt_gpu]
    if not targets:
        for name in ("gpuArchSM", "gpuArchNum"):
            bound = (inner.scope if inner else b.scope).lookup(name)
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
        notes.append(f"builds several GPU targets ({', '.join(targets)}); listed under {gpu_arch}")
    if named and named.gpu_arch and gpu_arch and named.gpu_arch != gpu_arch:
        notes.append(f"the name says {named.gpu_arch}, the recipe builds {gpu_arch}")
    if gpu_arch is None and named and named.gpu_arch and cuda_support is not False and not targets:
        gpu_arch = named.gpu_arch
        notes.append(f"GPU target {gpu_arch} taken from the name (the recipe leaves it to nixpkgs)")

    # Platforms (read before the ISA: a darwin build lists only aarch64-darwin)
    meta = b.attr("meta")
    listed = meta.get("platforms") if isinstance(meta, Attrs) else UNKNOWN
    listed_platforms = _literal_list(listed)
    if listed_platforms == ["aarch64-darwin"]:
        darwin = True

    # CPU ISA: the compiler flags decide what CPU the build needs
    flags = _cpu_flags(s, b, inner, pre)
    isa_flags = isa_of_flags(catalog, flags)
    isa = isa_flags
    if isinstance(pt_isa, str) and pt_isa:
        if isa and pt_isa != isa:
            notes.append(f"passthru.cpuISA says {pt_isa}, the compiler flags build {isa}")
        isa = isa or (pt_isa if pt_isa in catalog.isas else None)
    if isa is None and named and named.cpu_isa and not darwin:
        isa = named.cpu_isa if named.cpu_isa in catalog.isas else None
        if isa:
            notes.append(f"CPU ISA {isa} taken from the name")
    if named and named.cpu_isa and isa and named.cpu_isa != isa:
        notes.append(f"the name says {named.cpu_isa}, the recipe builds {isa}")
    if darwin:
        isa, gpu_arch = None, None

    # CUDA
    cuda = None
    if gpu_arch:
        attr = nixpkgs.cuda_attr or (inner_pkgs.cuda_attr if inner_pkgs else None)
        override_cuda = _override_cuda(s, b) or (_override_cuda(s, inner) if inner else None)
        attr = override_cuda or attr
        cmake = _CMAKE_CUDA.search(" ".join(_strings_of(s, b, "cmakeFlags") + (_strings_of(s, inner, "cmakeFlags") if inner else [])))
        name_cuda = named.cuda if named else None
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
            notes.append(f"cudaPackages_{major} is an alias; CUDA {cuda} from "
                         + ("-DCUDA_VERSION" if cmake and cmake[1] == major else "the name"))
        elif cmake:
            cuda = f"{cmake[1]}.{cmake[2]}"
        elif name_cuda:
            cuda = name_cuda
            if torch_from is None or torch_from == "inline":
                notes.append(f"CUDA {cuda} taken from the name (the recipe uses nixpkgs' default cudaPackages)")
        if name_cuda and cuda and name_cuda != cuda:
            notes.append(f"the name says CUDA {name_cuda}, the recipe builds with CUDA {cuda}")

    platform = "aarch64-darwin" if darwin else (catalog.isas[isa].platform if isa in catalog.isas else None)
    if listed_platforms is not None:
        listed = tuple(listed_platforms)
        inherited = False
        platform = platform or (listed[0] if listed else "x86_64-linux")
        wrong = [p for p in listed if p != platform] if (isa or darwin) else []
        platforms = tuple(p for p in listed if p not in wrong) or (platform,)
        if wrong:
            notes.append(f"meta.platforms lists {', '.join(wrong)}, but a {isa or 'darwin'} build runs on {platform} only")
    else:
        platform = platform or "x86_64-linux"
        platforms, inherited, listed = (platform,), True, ()

    # Source override: in the package set's overlays, or in the build's own attributes
    source = (inner_pkgs.torch_source if inner_pkgs else None) or nixpkgs.torch_source
    if source is None and kind == "pytorch":
        r = b.attr_range("src")
        if r is not None and b.attr_range("version") is not None:
            source = _version_and_src(s, (b.attrsets[0].node.start, b.attrsets[0].node.end))
    patches = tuple(dict.fromkeys(nixpkgs.patches + (inner_pkgs.patches if inner_pkgs else ())))

    big = any("big-parallel" in t for t in _strings_of(s, b, "requiredSystemFeatures"))

    pin = nixpkgs.pin
    if pin == NONE_PIN and not nixpkgs.from_caller and pins:
        pin = pins[0]
        notes.append("nixpkgs pin read from the file (its import is not the build's base)")
    if pname and pname != package:
        notes.append(f"pname is {pname}; the package is the file name")
    if b.imported and kind is None:
        kind = named.kind if named else None
        torch_from = b.imported

    problem = None
    if kind is None:
        problem = "does not build PyTorch, torchvision or torchaudio"
    elif not gpu_arch and not isa and not darwin:
        problem = "no GPU or CPU target (no gpuTargets, GPU architecture, CPU flags, cpuISA or darwin platform)"
    return RecipeFacts(
        file=path, package=package, kind=kind, pname=pname, python=python, pin=pin, pins=pins, cuda=cuda,
        gpu_arch=gpu_arch, gpu_targets=tuple(targets), cpu_isa=isa, cpu_flags=flags, darwin=darwin,
        platform=platform, platforms=platforms, platforms_inherited=inherited, listed_platforms=listed,
        pytorch=source.version if source else None, torch_source=source, patches=patches, big_parallel=big,
        torch_from=torch_from, inner_pname=inner_pname, notes=tuple(notes), problem=problem,
    )


def _strings_of(s: Scan, b: _Build | None, name: str) -> list[str]:
    if b is None:
        return []
    r = b.attr_range(name)
    return [s.interpolate(t, b.scope) for t in s.strings_in(*r)] if r else []


def _script(s: Scan, b: _Build | None) -> str:
    """preConfigure / preBuild / configurePhase text of a build (interpolations as written)."""
    if b is None:
        return ""
    out = []
    for name in ("preConfigure", "preBuild", "configurePhase", "buildPhase"):
        r = b.attr_range(name)
        if r:
            out += s.strings_in(*r)
    return "\n".join(out)


def _cpu_flags(s: Scan, b: _Build, inner: _Build | None, script: str) -> tuple[str, ...]:
    """Compiler flags: the list a script interpolates (``concatStringsSep " " cpuFlags``), a
    ``cpuFlags`` binding, or flags written into the script."""
    scope = (inner or b).scope
    names = _CONCAT.findall(script) + ["cpuFlags"]
    for name in names:
        for sc in (b.scope, scope):
            bound = sc.lookup(name)
            if bound is not None:
                v = _literal_list(bound.value())
                if v:
                    return tuple(v)
    found = _FLAG.findall(script)
    return tuple(dict.fromkeys(found))


def _override_cuda(s: Scan, b: _Build) -> tuple[str, str | None] | None:
    node = b.arg_node("cudaPackages")
    if node is None:
        return None
    m = re.search(r"cudaPackages_(\d+)(?:_(\d+))?", s.code_of(node))
    return (m[1], m[2]) if m else None


def _fallback(catalog: Catalog, s: Scan, scope: Scope, path: str, package: str, named, pins, b: _Build) -> RecipeFacts:
    """A recipe whose final expression is not an override chain torchbot knows: facts from its
    bindings and its name, with a note; a problem when nothing says it builds PyTorch."""
    mentions = re.search(r"\.(torch|pytorch|torchvision|torchaudio)\s*\.\s*(override|overrideAttrs)\b", s.code)
    if not mentions:
        built = ".".join(((b.root,) if b.root else ()) + b.path) or "something else"
        return RecipeFacts(path, package, pins=pins,
                           problem=f"does not build PyTorch, torchvision or torchaudio (it builds {built})")
    kind = _KINDS[mentions[1]]
    notes = ["the recipe's shape is not one torchbot knows; facts read from its bindings and its name"]
    targets = []
    m = re.search(r"\bgpuTargets\s*=\s*\[", s.code)
    if m:
        vals = _literal_list(s.value(s.expr(m.end() - 1, s.close[m.end() - 1] + 1), scope))
        targets = vals or []
    gpu_arch = next((a for a in map(_arch_key, targets) if a and a != "mps"), None) or (named.gpu_arch if named else None)
    bound = scope.lookup("cpuFlags")
    flags = tuple(_literal_list(bound.value()) or ()) if bound else ()
    isa = isa_of_flags(catalog, flags) or (named.cpu_isa if named else None)
    darwin = bool(named and named.is_darwin)
    cm = _CUDA_ATTR.search(s.code)
    cuda = (f"{cm[1]}.{cm[2]}" if cm and cm[2] else (named.cuda if named else None)) if gpu_arch else None
    platform = "aarch64-darwin" if darwin else (catalog.isas[isa].platform if isa in catalog.isas else "x86_64-linux")
    problem = None if (gpu_arch or isa or darwin) else "no GPU or CPU target"
    return RecipeFacts(
        file=path, package=package, kind=kind, python=named.python if named else None,
        pin=pins[0] if pins else NONE_PIN, pins=pins, cuda=cuda, gpu_arch=gpu_arch, gpu_targets=tuple(targets),
        cpu_isa=isa, cpu_flags=flags, darwin=darwin, platform=platform, platforms=(platform,),
        platforms_inherited=True, notes=tuple(notes), problem=problem,
    )
