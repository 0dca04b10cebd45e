"""The repository reader: any build-pytorch-shaped git repository -> the catalog's branch
model, read from the git objects (no checkout; read-only).

Per branch: the recipes under ``.flox/pkgs/`` parsed into variants (name convention plus
the recipe text: ``pname`` and the nixpkgs pin of the ``fetchTarball`` URL), the pins found,
the PyTorch source override if any, and the branch facts torchbot wrote into the README
(``<!-- torchbot:branch {...} -->``). Unknown or malformed files are reported, not fatal.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from config.errors import CatalogError, ExternalError
from config.catalog import Branch, Catalog, Companion, CudaGroup, TorchSource, Variant, vtuple
from config.naming import parse_package_name

RECIPES_DIR = ".flox/pkgs"
README = "README.md"

_PIN_RE = re.compile(r"nixpkgs/archive/([0-9a-f]{40})\.tar\.gz")
_PNAME_RE = re.compile(r'^\s*pname\s*=\s*"([^"]*)"\s*;', re.M)
_SOURCE_RE = re.compile(
    r'version\s*=\s*"([0-9][0-9.]*)"\s*;\s*src\s*=\s*[\w.]*fetchFromGitHub\s*\{.{0,400}?hash\s*=\s*"(sha256-[A-Za-z0-9+/=]+)"',
    re.S,
)
_META_RE = re.compile(r"<!--\s*torchbot:branch\s+(\{.*?\})\s*-->", re.S)
_BRANCH_VERSION_RE = re.compile(r"pytorch-?(\d+\.\d+)")


@dataclass
class BranchModel:
    name: str
    tip: str
    ref: str
    variants: tuple[Variant, ...] = ()
    pins: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)
    branch: Branch | None = None  # the catalog model; None when the branch has no recipes

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "tip": self.tip,
            "ref": self.ref,
            "pins": list(self.pins),
            "packages": [v.package for v in self.variants],
            "problems": list(self.problems),
            "pytorch": self.branch.pytorch if self.branch else None,
            "python": self.branch.python if self.branch else None,
            "cuda": list(self.branch.cuda_versions) if self.branch else [],
        }


@dataclass
class RepoModel:
    path: str
    branches: dict[str, BranchModel]
    problems: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> BranchModel:
        return self.branches[name]

    @property
    def all_problems(self) -> list[str]:
        out = list(self.problems)
        for b in self.branches.values():
            out.extend(f"{b.name}: {p}" for p in b.problems)
        return out

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "branches": {n: b.to_dict() for n, b in self.branches.items()},
            "problems": self.all_problems,
        }

    def text(self) -> str:
        lines = [f"Repository {self.path}: {len(self.branches)} branches"]
        for b in self.branches.values():
            if b.branch:
                lines.append(
                    f"  {b.name}: PyTorch {b.branch.pytorch}, Python {b.branch.python}, "
                    f"CUDA {' / '.join(b.branch.cuda_versions) or 'none'}, {len(b.variants)} packages, "
                    f"nixpkgs {', '.join(p[:7] for p in b.pins)}"
                )
            else:
                lines.append(f"  {b.name}: no recipes")
        problems = self.all_problems
        if problems:
            lines.append(f"Problems ({len(problems)}):")
            lines.extend(f"  - {p}" for p in problems)
        return "\n".join(lines)


def _branch_refs(repo) -> dict[str, tuple[str, str]]:
    """Branch name -> (ref, sha): local branches, plus remote-tracking ones with no local
    branch of that name (a fresh clone)."""
    out: dict[str, tuple[str, str]] = {}
    listing = _git(repo, "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", "refs/heads/", "refs/remotes/")
    remote: dict[str, tuple[str, str]] = {}
    for line in listing.splitlines():
        ref, sha, kind = line.split(" ")
        if kind != "commit":
            continue
        if ref.startswith("refs/heads/"):
            out[ref[len("refs/heads/"):]] = (ref, sha)
        else:
            name = ref.split("/", 3)[3] if ref.count("/") >= 3 else ""
            if name and name != "HEAD":
                remote.setdefault(name, (ref, sha))
    for name, value in remote.items():
        out.setdefault(name, value)
    return out


def _git(repo, *args: str) -> str:
    """Run git against the repository's git directory (works for bare repositories too)."""
    import subprocess

    r = subprocess.run(["git", f"--git-dir={repo.git_dir}", *args], capture_output=True, text=True, errors="replace")
    if r.returncode:
        raise ExternalError(f"git {args[0]} failed in {repo.git_dir}: {r.stderr.strip()}")
    return r.stdout


def _read_blobs(repo, shas: list[str]) -> dict[str, bytes]:
    """Contents of many blobs through one ``git cat-file --batch`` process."""
    import subprocess

    unique = list(dict.fromkeys(shas))
    if not unique:
        return {}
    r = subprocess.run(
        ["git", f"--git-dir={repo.git_dir}", "cat-file", "--batch"],
        input=("\n".join(unique) + "\n").encode(),
        capture_output=True,
    )
    if r.returncode:
        raise ExternalError(f"git could not read the recipes of {repo.git_dir}: {r.stderr.decode(errors='replace').strip()}")
    out: dict[str, bytes] = {}
    data = r.stdout
    pos = 0
    for sha in unique:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if len(header) < 3:  # "<sha> missing"
            continue
        size = int(header[2])
        out[sha] = data[pos : pos + size]
        pos += size + 1
    return out


def parse_recipe(catalog: Catalog, filename: str, text: str) -> tuple[Variant | None, dict, list[str]]:
    """One recipe -> (variant or None, facts {pins, torch_source}, problems)."""
    problems: list[str] = []
    stem = filename[:-4] if filename.endswith(".nix") else filename
    parsed = parse_package_name(stem)
    if parsed is None:
        return None, {}, [f"{RECIPES_DIR}/{filename}: not a package name torchbot knows"]
    pins = list(dict.fromkeys(_PIN_RE.findall(text)))
    if not pins:
        problems.append(f"{RECIPES_DIR}/{filename}: malformed recipe (no nixpkgs pin found)")
    elif len(pins) > 1:
        problems.append(f"{RECIPES_DIR}/{filename}: more than one nixpkgs pin ({', '.join(p[:7] for p in pins)})")
    pnames = _PNAME_RE.findall(text)
    if not pnames:
        problems.append(f"{RECIPES_DIR}/{filename}: malformed recipe (no pname)")
    elif pnames[0] != stem:
        problems.append(f"{RECIPES_DIR}/{filename}: pname is '{pnames[0]}', not the file's name")
    if parsed.gpu_arch and parsed.gpu_arch not in catalog.gpu_archs:
        problems.append(f"{RECIPES_DIR}/{filename}: unknown GPU architecture '{parsed.gpu_arch}'")
    isa = parsed.cpu_isa
    if isa and isa not in catalog.isas:
        problems.append(f"{RECIPES_DIR}/{filename}: unknown CPU ISA '{isa}'")
    if parsed.cuda and parsed.cuda not in catalog.cuda:
        problems.append(f"{RECIPES_DIR}/{filename}: unknown CUDA toolkit {parsed.cuda}")
    if parsed.kind != "pytorch" and not parsed.gpu_arch:
        problems.append(f"{RECIPES_DIR}/{filename}: a {parsed.kind} recipe without a GPU build is not supported")
    if problems:
        return None, {"pins": pins}, problems
    source = _SOURCE_RE.search(text)
    variant = Variant(
        package=stem,
        kind=parsed.kind,
        python=parsed.python,
        cuda=parsed.cuda,
        gpu_arch=parsed.gpu_arch,
        cpu_isa=isa,
        platform=catalog.variant_platform(parsed.gpu_arch, isa, parsed.is_darwin),
        darwin=parsed.is_darwin,
        pin=pins[0],
    )
    facts = {"pins": pins, "torch_source": TorchSource(source[1], source[2]) if source else None}
    return variant, facts, []


def _ordered(items, hint: list) -> list:
    """Items in the order of ``hint`` first, the rest in their given order."""
    pos = {h: i for i, h in enumerate(hint)}
    return sorted(items, key=lambda x: (pos.get(x, len(pos)),))


def _meta(text: str | None) -> dict:
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


def build_branch(
    catalog: Catalog, name: str, found: list[tuple[Variant, dict]], meta: dict, embedded: Branch | None
) -> tuple[Branch, list[str]]:
    """The catalog Branch a set of parsed recipes describes."""
    problems: list[str] = []
    variants = [v for v, _ in found]
    pythons = Counter(v.python for v in variants)
    python = pythons.most_common(1)[0][0]
    if len(pythons) > 1:
        problems.append(f"recipes for several Pythons ({', '.join(sorted(pythons))}); using {python}")
    order = meta.get("order") or {}
    fallback = embedded

    # pins: the CPU-only/darwin builds carry the branch pin; else the most common one
    base_pins = Counter(v.pin for v in variants if not v.cuda) or Counter(v.pin for v in variants if v.kind == "pytorch")
    base_pins = base_pins or Counter(v.pin for v in variants)
    pin = base_pins.most_common(1)[0][0]

    # CUDA groups
    by_cuda: dict[str, list[Variant]] = {}
    for v in variants:
        if v.cuda and v.kind == "pytorch":
            by_cuda.setdefault(v.cuda, []).append(v)
    hint_cuda = [g.get("version") for g in order.get("cuda", [])] or (
        [g.version for g in fallback.cuda_groups] if fallback else []
    )
    hint_archs = {g.get("version"): g.get("archs", []) for g in order.get("cuda", [])} or (
        {g.version: list(g.archs) for g in fallback.cuda_groups} if fallback else {}
    )
    cuda_versions = _ordered(sorted(by_cuda, key=vtuple, reverse=True), hint_cuda)
    groups = []
    for ver in cuda_versions:
        members = by_cuda[ver]
        archs = sorted({v.gpu_arch for v in members}, key=lambda a: vtuple(catalog.gpu_archs[a].cc))
        archs = _ordered(archs, hint_archs.get(ver, []))
        group_pins = Counter(v.pin for v in members)
        gpin = group_pins.most_common(1)[0][0]
        if len(group_pins) > 1:
            problems.append(f"CUDA {ver} recipes use several nixpkgs pins ({', '.join(p[:7] for p in group_pins)})")
        groups.append(CudaGroup(ver, tuple(archs), None if gpin == pin else gpin))

    # CPU-only ISAs
    isas = [v.cpu_isa for v in variants if v.kind == "pytorch" and not v.cuda and not v.darwin]
    isas = sorted(dict.fromkeys(isas), key=lambda i: catalog.all_isas.index(i) if i in catalog.all_isas else 99)
    isas = _ordered(isas, order.get("cpu_isas") or (list(fallback.cpu_isas) if fallback else []))

    # companions
    comps = [f"{v.kind}:{v.cuda}:{v.gpu_arch}:{v.cpu_isa}" for v in variants if v.is_companion]
    comps = _ordered(list(dict.fromkeys(comps)), order.get("companions") or (
        [f"{c.kind}:{c.cuda}:{c.arch}:{c.isa}" for c in fallback.companions] if fallback else []
    ))
    companions = tuple(Companion(*c.split(":")) for c in comps)
    for c in companions:
        if not any(
            v.kind == "pytorch" and v.cuda == c.cuda and v.gpu_arch == c.arch and v.cpu_isa == c.isa for v in variants
        ):
            problems.append(f"{c.kind} for {c.arch}-{c.isa} (CUDA {c.cuda}) has no matching pytorch recipe")

    sources = {f["torch_source"] for _, f in found if f.get("torch_source")}
    torch_source = None
    if sources:
        torch_source = sorted(sources, key=lambda s: s.version)[-1]
        if len(sources) > 1:
            problems.append("recipes build different PyTorch sources")

    def fact(key: str, default):
        if key in meta and meta[key] is not None:
            return str(meta[key])
        if fallback is not None and getattr(fallback, key) is not None:
            return getattr(fallback, key)
        return default

    m = _BRANCH_VERSION_RE.search(name)
    pytorch_default = torch_source.version if torch_source else (m[1] if m else "unknown")
    branch = Branch(
        name=name,
        pytorch=fact("pytorch", pytorch_default),
        python=python,
        cudnn=fact("cudnn", "9.x"),
        min_driver=fact("min_driver", ""),
        purpose=fact("purpose", "python-variant"),
        summary=fact("summary", ""),
        pin=pin,
        cpu_isas=tuple(isas),
        darwin_mps=any(v.darwin for v in variants),
        cuda_groups=tuple(groups),
        companions=companions,
        vllm=meta.get("vllm") if "vllm" in meta else (fallback.vllm if fallback else None),
        torch_source=torch_source,
    )
    # variants in the catalog's expansion order; recipes the matrix does not predict last
    try:
        expected = [v.package for v in catalog.expand(branch)]
    except KeyError:
        expected = []
    pos = {p: i for i, p in enumerate(expected)}
    variants.sort(key=lambda v: pos.get(v.package, len(pos)))
    return replace(branch, variants=tuple(variants)), problems


def read_repository(path: str | os.PathLike, embedded: Catalog) -> RepoModel:
    """Every branch of the repository at ``path`` as the catalog's branch model."""
    from release.adapters import git as gitops

    repo = gitops.open_repo(path)
    refs = _branch_refs(repo)
    listings: dict[str, list[tuple[str, str]]] = {}
    wanted: list[str] = []
    for name, (ref, sha) in refs.items():
        out = _git(repo, "ls-tree", "-r", sha, "--", RECIPES_DIR + "/", README)
        files = []
        for line in out.splitlines():
            meta, _, fpath = line.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                files.append((fpath, parts[2]))
                wanted.append(parts[2])
        listings[name] = files
    blobs = _read_blobs(repo, wanted)

    model = RepoModel(str(path), {})
    for name, (ref, sha) in refs.items():
        bm = BranchModel(name, sha, ref)
        found: list[tuple[Variant, dict]] = []
        pins: dict[str, None] = {}
        readme = None
        for fpath, blob in listings[name]:
            text = blobs.get(blob, b"").decode("utf-8", errors="replace")
            if fpath == README:
                readme = text
                continue
            rel = fpath[len(RECIPES_DIR) + 1 :]
            if "/" in rel:
                bm.problems.append(f"{fpath}: unexpected file in a subfolder of {RECIPES_DIR}")
                continue
            if not rel.endswith(".nix"):
                bm.problems.append(f"{fpath}: not a Nix recipe")
                continue
            variant, facts, problems = parse_recipe(embedded, rel, text)
            for p in facts.get("pins", []):
                pins.setdefault(p, None)
            bm.problems.extend(problems)
            if variant is not None:
                found.append((variant, facts))
        bm.pins = tuple(pins)
        meta = _meta(readme)
        if meta.get("_bad"):
            bm.problems.append(f"{README}: the torchbot branch record is not valid JSON")
            meta = {}
        if found:
            branch, problems = build_branch(embedded, name, found, meta, embedded.branches.get(name))
            bm.branch = branch
            bm.variants = branch.variants
            bm.problems.extend(problems)
        model.branches[name] = bm
    return model


def catalog_from_repository(path: str | os.PathLike, embedded: Catalog) -> Catalog:
    """The embedded catalog with its branches replaced by the repository's real ones."""
    if not Path(path).exists():
        raise CatalogError(f"The repository path {path} does not exist.")
    model = read_repository(path, embedded)
    branches = [b.branch for b in model.branches.values() if b.branch is not None]
    if not branches:
        raise CatalogError(f"The repository at {path} has no branch with recipes under {RECIPES_DIR}/.")
    cat = embedded.with_branches(branches, f"repository {path}")
    if cat.recommended not in cat.branches:
        best = min(branches, key=lambda b: (b.rank, b.name))
        cat = replace(cat, recommended=best.name)
    return cat
