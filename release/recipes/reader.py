"""The repository reader: a build-pytorch or build-torchvision git repository -> the branch
model, read from the git objects (no checkout; read-only; bare repositories and fresh clones
with only remote-tracking branches work too).

Every ``.nix`` file under ``.flox/pkgs/`` of every branch is read (release/recipes/facts.py) and
becomes a variant named by its file, unless it is genuinely unusable (a syntax error, not a
PyTorch / torchvision / torchaudio build, no GPU or CPU target): then it is a problem naming its
file, and the rest of the branch is still read. A branch's facts come from its recipes and its
README (release/recipes/branchmodel.py).

The repository kind (build-pytorch / build-torchvision) is what its recipes build. Models are
cached by commit: a branch is read again only when its tip moves, and a recipe blob once.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from config.branch_records import with_recorded_branches
from config.catalog import Branch, Catalog, Variant
from config.errors import CatalogError, ExternalError, RefusedError
from release.recipes.branchmodel import PYTORCH_REPO, VISION_REPO, build_branch, readme_record, resolve_companions
from release.recipes.branchmodel import readme_row as readme_row  # read from here by release.pins.promise
from release.recipes.factcache import FactCache
from release.recipes.facts import RECIPES_DIR, RecipeFacts, read_recipe

README = "README.md"


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
    r = subprocess.run(
        ["git", "-C", str(p), "rev-parse", "--absolute-git-dir"], check=False, capture_output=True, text=True
    )
    if r.returncode or not r.stdout.strip():
        from release.adapters.git import not_a_repository  # the failure path only: ask stays light

        refusal: RefusedError = not_a_repository(path, r.stderr)  # git's ownership check named as such
        raise refusal
    return Path(r.stdout.strip())


def _git(gd: Path, *args: str, input: bytes | None = None) -> bytes:
    r = subprocess.run(["git", f"--git-dir={gd}", *args], check=False, input=input, capture_output=True)
    if r.returncode:
        raise ExternalError(f"git {args[0]} failed in {gd}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def branch_refs(gd: Path, prefer_remote: str | None = None) -> dict[str, tuple[str, str]]:
    """Branch name -> (ref, commit): local branches, plus remote-tracking ones with no local
    branch of that name (a fresh clone). ``prefer_remote``: that remote's tip wins wherever it
    has the branch (what the remote says, not a clone's stale local branch)."""
    out: dict[str, tuple[str, str]] = {}
    remote: dict[str, tuple[str, str]] = {}
    listing = _git(
        gd, "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", "refs/heads/", "refs/remotes/"
    )
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
        if prefer_remote and value[0].startswith(f"refs/remotes/{prefer_remote}/"):
            out[name] = value
        else:
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


def _facts(catalog: Catalog, filename: str, blob: str, text: bytes | None) -> RecipeFacts:
    got = _known(catalog, filename, blob)
    if got is None:
        got = _FACTS[(filename, blob, id(catalog))] = read_recipe(catalog, filename, text or b"")
        _disk(catalog).put(filename, blob, got)
    return got


def repo_kind(recipes: list[RecipeFacts], path: Path) -> str:
    """build-pytorch when the repository builds PyTorch packages; build-torchvision when it builds
    only torchvision/torchaudio over a PyTorch of their own; by its name when it has no recipes."""
    kinds = Counter(f.kind for f in recipes if f.kind)
    if kinds.get("pytorch"):
        return PYTORCH_REPO
    if kinds.get("torchvision") or kinds.get("torchaudio"):
        return VISION_REPO
    return VISION_REPO if "vision" in path.name.lower() else PYTORCH_REPO


def read_repository(path: str | os.PathLike, embedded: Catalog, *, git_dir: Path | None = None,
                    prefer_remote: str | None = None) -> RepoModel:
    """Every branch of the repository at ``path`` as the branch model (cached by commit).
    ``git_dir``: its git directory when the caller knows it already (saves a git process);
    ``prefer_remote``: read each branch at that remote's tip where it has one."""
    gd = git_dir or find_git_dir(path)
    embedded = with_recorded_branches(embedded, gd)  # branches created in this repository (and only here)
    refs = branch_refs(gd, prefer_remote)
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
        texts = {s: c for s, (t, c) in _batch(gd, list(dict.fromkeys(wanted))).items()}
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
    recipes = resolve_companions(recipes, bm.problems)
    bm.recipes = recipes
    meta = readme_record(readme)
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

