"""The repository reader: a build-pytorch or build-torchvision git repository -> the branch
model, read from the git objects (no checkout; read-only; bare repositories and fresh clones
with only remote-tracking branches work too).

Every ``.nix`` file under ``.flox/pkgs/`` of every branch is read (release/recipes/facts.py) and
becomes a variant named by its file, unless it is genuinely unusable (unparsable, not a PyTorch /
torchvision / torchaudio build, no GPU or CPU target): then it is a problem naming its file, and
the rest of the branch is still read. A branch's facts come from its recipes: CUDA groups per
(CUDA version, nixpkgs pin), CPU-only ISAs, darwin, companions, the PyTorch a source override
builds. What the recipes cannot say (the PyTorch version nixpkgs' own torch has at a pin, cuDNN,
the driver floor, the purpose) comes from the torchbot record in the README
(``<!-- torchbot:branch {...} -->``), else the embedded catalog's branch of that name when it is
on the same pin, else the branch's own row in the README's branch table, else the branch name.

The repository kind (build-pytorch / build-torchvision) is what its recipes build. Models are
cached by commit: a branch is read again only when its tip moves, and a recipe blob once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from config.branch_records import with_recorded_branches
from config.catalog import Branch, Catalog, Companion, CudaGroup, TorchSource, Variant, vtuple
from config.errors import CatalogError, ExternalError, RefusedError
from release.recipes.factcache import FactCache
from release.recipes.facts import NONE_PIN, RECIPES_DIR, RecipeFacts, read_recipe

README = "README.md"
PYTORCH_REPO = "build-pytorch"
VISION_REPO = "build-torchvision"

_META_RE = re.compile(r"<!--\s*torchbot:branch\s+(\{.*?\})\s*-->", re.S)
_BRANCH_VERSION_RE = re.compile(r"pytorch-?(\d+\.\d+(?:\.\d+)?)")
_VLLM_RE = re.compile(r"vllm-(\d+\.\d+(?:\.\d+)?)")


@dataclass
class BranchModel:
    name: str
    tip: str
    ref: str
    variants: tuple[Variant, ...] = ()
    pins: tuple[str, ...] = ()  # every nixpkgs pin the branch's packages use, most used first
    problems: list[str] = field(default_factory=list)  # "<file>: <what is wrong>"
    branch: Branch | None = None  # the catalog model; None when no recipe is usable
    recipes: dict[str, RecipeFacts] = field(default_factory=dict)  # package -> facts (every .nix file)
    kind: str = PYTORCH_REPO
    repository: str = ""
    readme: str | None = None
    pytorch_from: str = ""  # where the branch's PyTorch version comes from

    @property
    def packages(self) -> list[str]:
        return [v.package for v in self.variants]

    @property
    def gpu_archs(self) -> list[str]:
        return sorted({v.gpu_arch for v in self.variants if v.gpu_arch}, key=lambda a: int(a[2:]))

    @property
    def notes(self) -> list[str]:
        return [f"{r.file}: {n}" for r in self.recipes.values() for n in r.notes]

    def to_dict(self) -> dict:
        b = self.branch
        return {
            "branch": self.name,
            "name": self.name,
            "kind": self.kind,
            "repository": self.repository,
            "tip": self.tip,
            "ref": self.ref,
            "pytorch": b.pytorch if b else None,
            "python": b.python if b else None,
            "cuda": list(b.cuda_versions) if b else [],
            "pins": list(self.pins),
            "variants": len(self.variants),
            "gpu_archs": self.gpu_archs,
            "packages": self.packages,
            "pairs_with": b.pairs_with if b else None,
            "problems": list(self.problems),
        }


@dataclass
class RepoModel:
    path: str
    branches: dict[str, BranchModel]
    problems: list[str] = field(default_factory=list)
    kind: str = PYTORCH_REPO

    @property
    def all_problems(self) -> list[str]:
        out = list(self.problems)
        for b in self.branches.values():
            out.extend(f"{b.name}: {p}" for p in b.problems)
        return out

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "kind": self.kind,
            "branches": {n: b.to_dict() for n, b in self.branches.items()},
            "problems": self.all_problems,
        }

    def text(self) -> str:
        lines = [f"Repository {self.path} ({self.kind}): {len(self.branches)} branches"]
        for b in self.branches.values():
            if b.branch:
                lines.append(
                    f"  {b.name}: PyTorch {b.branch.pytorch}, Python {b.branch.python}, "
                    f"CUDA {' / '.join(b.branch.cuda_versions) or 'none'}, {len(b.variants)} packages, "
                    f"nixpkgs {', '.join(p[:7] for p in b.pins)}"
                )
            else:
                lines.append(f"  {b.name}: no usable recipes")
        problems = self.all_problems
        if problems:
            lines.append(f"Problems ({len(problems)}):")
            lines.extend(f"  - {p}" for p in problems)
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# git (plain subprocess: fast, and works on bare repositories)


def find_git_dir(path: str | os.PathLike) -> Path:
    """The git directory of a work tree or bare repository; RefusedError when there is none."""
    p = Path(path)
    if not p.exists():
        raise CatalogError(f"The repository path {path} does not exist.")
    r = subprocess.run(["git", "-C", str(p), "rev-parse", "--absolute-git-dir"], capture_output=True, text=True)
    if r.returncode or not r.stdout.strip():
        from release.adapters.git import not_a_repository  # the failure path only: ask stays light

        refusal: RefusedError = not_a_repository(path, r.stderr)  # git's ownership check named as such
        raise refusal
    return Path(r.stdout.strip())


def _git(gd: Path, *args: str, input: bytes | None = None) -> bytes:
    r = subprocess.run(["git", f"--git-dir={gd}", *args], input=input, capture_output=True)
    if r.returncode:
        raise ExternalError(f"git {args[0]} failed in {gd}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def branch_refs(gd: Path) -> dict[str, tuple[str, str]]:
    """Branch name -> (ref, commit): local branches, plus remote-tracking ones with no local
    branch of that name (a fresh clone)."""
    out: dict[str, tuple[str, str]] = {}
    remote: dict[str, tuple[str, str]] = {}
    listing = _git(gd, "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", "refs/heads/", "refs/remotes/")
    for line in listing.decode().splitlines():
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


def _batch(gd: Path, specs: list[str]) -> dict[str, tuple[str, bytes]]:
    """``git cat-file --batch`` for many objects: spec -> (type, content); missing ones left out."""
    if not specs:
        return {}
    data = _git(gd, "cat-file", "--batch", input=("\n".join(specs) + "\n").encode())
    out: dict[str, tuple[str, bytes]] = {}
    pos = 0
    for spec in specs:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        pos = nl + 1
        if len(header) < 3 or header[-1] == b"missing":
            continue
        size = int(header[2])
        out[spec] = (header[1].decode(), data[pos : pos + size])
        pos += size + 1
    return out


def _tree_entries(raw: bytes) -> list[tuple[str, str, str]]:
    """(mode, name, sha) of a binary tree object."""
    out = []
    pos = 0
    while pos < len(raw):
        sp = raw.index(b" ", pos)
        nul = raw.index(b"\0", sp)
        out.append((raw[pos:sp].decode(), raw[sp + 1 : nul].decode(errors="replace"), raw[nul + 1 : nul + 21].hex()))
        pos = nul + 21
    return out


# ---------------------------------------------------------------------------------------
# caches: recipe facts by blob, branch models by commit

_FACTS: dict[tuple[str, str, int], RecipeFacts] = {}
_BRANCHES: dict[tuple[str, str, str, int], BranchModel] = {}
_DISK: dict[int, FactCache] = {}


def _disk(catalog: Catalog) -> FactCache:
    fc = _DISK.get(id(catalog))
    if fc is None:
        fc = _DISK[id(catalog)] = FactCache(catalog)
    return fc


def _known(catalog: Catalog, filename: str, blob: str) -> RecipeFacts | None:
    """Facts already read: in this process, else in the persistent cache."""
    key = (filename, blob, id(catalog))
    got = _FACTS.get(key)
    if got is None:
        got = _disk(catalog).get(filename, blob)
        if got is not None:
            _FACTS[key] = got
    return got


def _facts(catalog: Catalog, filename: str, blob: str, text: str | None) -> RecipeFacts:
    got = _known(catalog, filename, blob)
    if got is None:
        got = _FACTS[(filename, blob, id(catalog))] = read_recipe(catalog, filename, text or "")
        _disk(catalog).put(filename, blob, got)
    return got


# ---------------------------------------------------------------------------------------


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


def _ordered(items, hint: list) -> list:
    pos = {h: i for i, h in enumerate(hint)}
    return sorted(items, key=lambda x: (pos.get(x, len(pos)),))


def _variant(f: RecipeFacts, python: str) -> Variant:
    return Variant(
        package=f.package, kind=f.kind or "pytorch", python=f.python or python, cuda=f.cuda, gpu_arch=f.gpu_arch,
        cpu_isa=f.cpu_isa, platform=f.platform, darwin=f.darwin, pin=f.pin, pname=f.pname, platforms=f.platforms,
        pytorch=f.pytorch, torch_from=f.torch_from, big_parallel=f.big_parallel,
    )


def _resolve_companions(recipes: dict[str, RecipeFacts], problems: list[str]) -> dict[str, RecipeFacts]:
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

    main_kind = "pytorch" if kind == PYTORCH_REPO else None
    core = [v for v in variants if (v.kind == main_kind if main_kind else True)]
    base_pins = Counter(v.pin for v in core if not v.cuda) or Counter(v.pin for v in core) or Counter(v.pin for v in variants)
    pin = base_pins.most_common(1)[0][0]
    fallback = embedded if embedded is not None and embedded.pin in {v.pin for v in variants} else None

    # CUDA groups: one per (CUDA version, pin)
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

    isas = [v.cpu_isa for v in core if not v.cuda and not v.darwin and not v.gpu_arch and v.cpu_isa]
    isas = sorted(dict.fromkeys(isas), key=lambda i: catalog.all_isas.index(i) if i in catalog.all_isas else 99)
    isas = _ordered(isas, order.get("cpu_isas") or (list(fallback.cpu_isas) if fallback else []))

    companions: tuple[Companion, ...] = ()
    if kind == PYTORCH_REPO:
        comps = [f"{v.kind}:{v.cuda}:{v.gpu_arch}:{v.cpu_isa}" for v in variants
                 if v.is_companion and v.cuda and v.gpu_arch and v.cpu_isa]
        comps = _ordered(list(dict.fromkeys(comps)), order.get("companions") or (
            [f"{c.kind}:{c.cuda}:{c.arch}:{c.isa}" for c in fallback.companions] if fallback else []))
        companions = tuple(Companion(*c.split(":")) for c in comps)

    sources = Counter(f.torch_source for f in usable if f.torch_source)
    torch_source: TorchSource | None = sources.most_common(1)[0][0] if sources else None
    if len(sources) > 1:
        problems.append(
            "recipes build different PyTorch sources ("
            + ", ".join(sorted({s.version for s in sources})) + f"); the branch is read as {torch_source.version}"
        )

    def fact(key: str, default):
        """README record, else the embedded branch of this name (what the maintainers meant the
        branch for does not change with a pin), else the default."""
        if key in meta and meta[key] is not None:
            return str(meta[key])
        if embedded is not None and getattr(embedded, key):
            return getattr(embedded, key)
        return default

    if torch_source:
        pytorch, pytorch_from = torch_source.version, "recipes (source override)"
    elif meta.get("pytorch"):
        pytorch, pytorch_from = str(meta["pytorch"]), "README torchbot record"
    elif fallback is not None:
        pytorch, pytorch_from = fallback.pytorch, "embedded catalog (same pin)"
    elif said := readme_row(readme, name, "PyTorch"):
        pytorch, pytorch_from = said, "README branch table"
    elif named := _BRANCH_VERSION_RE.search(name):
        pytorch, pytorch_from = named[1], "branch name"
    else:
        pytorch, pytorch_from = "unknown", "nothing (nixpkgs' torch, unpinned)" if pin == NONE_PIN else "nothing"

    vllm = meta.get("vllm") if "vllm" in meta else (embedded.vllm if embedded else None)
    if vllm is None and (named := _VLLM_RE.search(name)):
        vllm = named[1]
    purpose_default = "vllm-certified" if vllm else ("staging" if "staging" in name else "python-variant")
    branch = Branch(
        name=name,
        pytorch=pytorch,
        python=python,
        cudnn=fact("cudnn", "9.x"),
        min_driver=fact("min_driver", ""),
        purpose=fact("purpose", purpose_default),
        summary=fact("summary", ""),
        pin=pin,
        cpu_isas=tuple(isas),
        darwin_mps=any(v.darwin for v in core),
        cuda_groups=tuple(groups),
        companions=companions,
        vllm=vllm,
        torch_source=torch_source,
        kind=kind,
    )
    expected: list[str] = []
    if kind == PYTORCH_REPO:
        try:
            expected = [v.package for v in catalog.expand(branch)]
        except KeyError:
            expected = []
    pos = {p: i for i, p in enumerate(expected)}
    variants.sort(key=lambda v: (pos.get(v.package, len(pos)), v.package if v.package not in pos else ""))
    return replace(branch, variants=tuple(variants)), problems, pytorch_from


def repo_kind(recipes: list[RecipeFacts], path: Path) -> str:
    """build-pytorch when the repository builds PyTorch packages; build-torchvision when it builds
    only torchvision/torchaudio over a PyTorch of their own; by its name when it has no recipes."""
    kinds = Counter(f.kind for f in recipes if f.kind)
    if kinds.get("pytorch"):
        return PYTORCH_REPO
    if kinds.get("torchvision") or kinds.get("torchaudio"):
        return VISION_REPO
    return VISION_REPO if "vision" in path.name.lower() else PYTORCH_REPO


def read_repository(path: str | os.PathLike, embedded: Catalog, *, git_dir: Path | None = None) -> RepoModel:
    """Every branch of the repository at ``path`` as the branch model (cached by commit).
    ``git_dir``: its git directory when the caller knows it already (saves a git process)."""
    gd = git_dir or find_git_dir(path)
    embedded = with_recorded_branches(embedded, gd)  # branches created in this repository (and only here)
    refs = branch_refs(gd)
    key = str(gd)
    cached = {n: _BRANCHES.get((key, n, sha, id(embedded))) for n, (_, sha) in refs.items()}
    todo = [n for n, m in cached.items() if m is None]

    listings: dict[str, list[tuple[str, str, str]]] = {}
    readmes: dict[str, str | None] = {}
    if todo:
        specs = []
        for n in todo:
            sha = refs[n][1]
            specs += [f"{sha}:{RECIPES_DIR}", f"{sha}:{README}"]
        objs = _batch(gd, specs)
        wanted: list[str] = []
        for n in todo:
            sha = refs[n][1]
            tree = objs.get(f"{sha}:{RECIPES_DIR}")
            entries = _tree_entries(tree[1]) if tree and tree[0] == "tree" else []
            listings[n] = entries
            readme = objs.get(f"{sha}:{README}")
            readmes[n] = readme[1].decode("utf-8", errors="replace") if readme and readme[0] == "blob" else None
            for mode, fname, blob in entries:
                if not mode.startswith("40") and fname.endswith(".nix") and _known(embedded, fname, blob) is None:
                    wanted.append(blob)
        texts = {s: c.decode("utf-8", errors="replace") for s, (t, c) in _batch(gd, list(dict.fromkeys(wanted))).items()}
        all_facts = {}
        for n in todo:
            facts = {}
            for mode, fname, blob in listings[n]:
                if not mode.startswith("40") and fname.endswith(".nix"):
                    facts[fname] = _facts(embedded, fname, blob, texts.get(blob))
            all_facts[n] = facts
        _disk(embedded).save()
    else:
        all_facts = {}

    # the repository's kind, from every branch's recipes: those just read and the cached ones alike
    # (from the moved branches alone, one branch of companions would turn a build-pytorch repository
    # into a build-torchvision one and empty every unmoved branch)
    sample = [f for facts in all_facts.values() for f in facts.values()]
    sample += [f for m in cached.values() if m is not None for f in m.recipes.values()]
    kind = repo_kind(sample, Path(path))

    model = RepoModel(str(path), {}, kind=kind)
    for name, (ref, sha) in refs.items():
        bm = cached[name]
        if bm is None or bm.kind != kind:
            bm = _read_branch(embedded, str(path), name, ref, sha, listings.get(name, []), all_facts.get(name, {}),
                              readmes.get(name), kind)
            _BRANCHES[(key, name, sha, id(embedded))] = bm
        model.branches[name] = bm
    if len(_BRANCHES) > 512:
        _BRANCHES.clear()
    if len(_FACTS) > 20000:
        _FACTS.clear()
    return model


def _read_branch(embedded: Catalog, path: str, name: str, ref: str, sha: str, entries, facts: dict[str, RecipeFacts],
                 readme: str | None, kind: str) -> BranchModel:
    bm = BranchModel(name, sha, ref, kind=kind, repository=path, readme=readme)
    for mode, fname, _ in entries:
        if mode.startswith("40"):
            bm.problems.append(f"{RECIPES_DIR}/{fname}/: a subfolder of {RECIPES_DIR} (not read)")
        elif not fname.endswith(".nix"):
            bm.problems.append(f"{RECIPES_DIR}/{fname}: not a Nix recipe")
    recipes = {f.package: f for f in facts.values()}
    for f in recipes.values():
        if f.problem:
            bm.problems.append(f"{f.file}: {f.problem}")
    recipes = _resolve_companions(recipes, bm.problems)
    bm.recipes = recipes
    meta = _meta(readme)
    if meta.get("_bad"):
        bm.problems.append(f"{README}: the torchbot branch record is not valid JSON")
        meta = {}
    if any(f.usable for f in recipes.values()):
        embedded_branch = embedded.branches.get(name) if kind == PYTORCH_REPO else None
        branch, problems, bm.pytorch_from = build_branch(embedded, name, recipes, meta, embedded_branch, readme, kind)
        bm.branch = replace(branch, repository=path)
        bm.variants = branch.variants
        bm.problems.extend(problems)
        pins = Counter(v.pin for v in bm.variants)
        bm.pins = tuple(sorted(pins, key=lambda p: (-pins[p], p)))
    return bm

