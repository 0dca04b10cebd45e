"""Several repositories at once: the build-pytorch and build-torchvision repositories torchbot
manages, read together into the catalog the bot answers from.

- Each repository is read by the reader (release/recipes/reader.py) and its kind detected.
- Each build-torchvision branch is paired with the build-pytorch branch it matches: the same
  PyTorch (major.minor), then the same Python, the most shared nixpkgs pins, the most shared
  CUDA versions. ``Branch.pairs_with`` names it and ``Branch.pairing`` says how well it matches.
- The catalog is cached by the repositories' refs: while no branch moves (checked with a stat
  of the ref files, no git process) every call returns the same Catalog object, so the bot's
  per-catalog caches stay warm; when one moves, only the branches that moved are read again.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from config.catalog import Branch, Catalog, vtuple
from config.errors import CatalogError, RefusedError
from config.versions import Version
from release.recipes.reader import PYTORCH_REPO, VISION_REPO, RepoModel, read_repository


def major_minor(version: str | None) -> tuple[int, ...]:
    return Version(version or "").line


def pair(vision: Branch, candidates: list[Branch]) -> tuple[Branch | None, str]:
    """The build-pytorch branch a build-torchvision branch pairs with, and how it matches."""
    want = major_minor(vision.pytorch)
    vpins = set(vision.pins) | {v.pin for v in vision.variants}
    vcuda = set(vision.cuda_versions)
    best, best_key = None, None
    for b in candidates:
        if want and major_minor(b.pytorch) != want:
            continue
        bpins = set(b.pins) | {v.pin for v in b.variants}
        key = (b.python == vision.python, len(vpins & bpins), len(vcuda & set(b.cuda_versions)), -b.rank,
               b.name == vision.name)
        if best_key is None or key > best_key:
            best, best_key = b, key
    if best is None:
        offered = ", ".join(f"{b.name} (PyTorch {b.pytorch})" for b in candidates) or "none configured"
        return None, f"no build-pytorch branch builds PyTorch {vision.pytorch} (branches: {offered})"
    bpins = set(best.pins) | {v.pin for v in best.variants}
    shared_pins = sorted(p[:7] for p in vpins & bpins)
    only_here = sorted(p[:7] for p in vpins - bpins)
    shared_cuda = sorted(vcuda & set(best.cuda_versions), key=vtuple, reverse=True)
    parts = [f"PyTorch {best.pytorch}"]
    if shared_cuda:
        parts.append(f"CUDA {' / '.join(shared_cuda)}")
    missing_cuda = sorted(vcuda - set(best.cuda_versions), key=vtuple, reverse=True)
    if shared_pins:
        parts.append(f"nixpkgs {', '.join(shared_pins)}")
    text = f"pairs with {best.name}: " + ", ".join(parts)
    if only_here:
        text += (
            f"; nixpkgs {', '.join(only_here)} is not on {best.name} (it uses {', '.join(p[:7] for p in best.pins)})"
        )
    if missing_cuda:
        text += f"; CUDA {' / '.join(missing_cuda)} is not built on {best.name}"
    if best.python != vision.python:
        text += f"; Python {vision.python} here, {best.python} there"
    return best, text


# ---------------------------------------------------------------------------------------
# Reading and caching


@dataclass
class _Watch:
    git_dir: Path
    common_dir: Path


_DIRS: dict[str, _Watch] = {}
_STATE: dict[tuple, tuple[tuple, RepoSet, float]] = {}
RECHECK_SECONDS = 0.25  # how often (at most) the ref files are looked at again; 0: on every call


def _watch(path: str | os.PathLike) -> _Watch:
    key = str(path)
    w = _DIRS.get(key)
    if w is None:
        p = Path(path)
        if not p.exists():
            raise CatalogError(f"The repository path {path} does not exist.")
        r = subprocess.run(["git", "-C", str(p), "rev-parse", "--absolute-git-dir", "--git-common-dir"],
                           check=False, capture_output=True, text=True)
        lines = r.stdout.split()
        if r.returncode or len(lines) < 2:
            from release.adapters.git import not_a_repository  # the failure path only: ask stays light

            refusal: RefusedError = not_a_repository(path, r.stderr)  # git's ownership check named as such
            raise refusal
        gd = Path(lines[0])
        common = Path(lines[1]) if os.path.isabs(lines[1]) else (p / lines[1]).resolve()
        w = _DIRS[key] = _Watch(gd, common)
    return w


def _fingerprint(w: _Watch) -> tuple:
    """What changes when a branch moves: the ref files and packed-refs (stat only)."""
    out: list = []
    for f in (w.common_dir / "packed-refs",):
        try:
            st = os.stat(f)
            out.append((st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            out.append(None)
    stack = [w.common_dir / "refs" / "heads", w.common_dir / "refs" / "remotes"]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(Path(e.path))
                    else:
                        st = e.stat(follow_symlinks=False)
                        out.append((e.path, st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            continue
    return tuple(out)


@dataclass
class RepoSet:
    """The repositories read together, and the catalog they make."""

    models: list[RepoModel]
    catalog: Catalog

    @property
    def pytorch(self) -> list[RepoModel]:
        return [m for m in self.models if m.kind == PYTORCH_REPO]

    @property
    def vision(self) -> list[RepoModel]:
        return [m for m in self.models if m.kind == VISION_REPO]

    @property
    def problems(self) -> list[str]:
        out = []
        for m in self.models:
            out += [f"{m.path}: {p}" if len(self.models) > 1 else p for p in m.all_problems]
        return out


def read_repositories(paths: list[str | os.PathLike], embedded: Catalog, prefer_remote: str | None = None) -> RepoSet:
    """The repositories at ``paths`` (cached until a branch of one of them moves); ``prefer_remote``:
    each branch as that remote has it (the dashboard), else the local branch where there is one."""
    if not paths:
        raise CatalogError("No repository configured.")
    key = (tuple(str(p) for p in paths), id(embedded), prefer_remote)
    hit = _STATE.get(key)
    now = time.monotonic()
    if hit is not None and now - hit[2] < RECHECK_SECONDS:
        return hit[1]
    watches = [_watch(p) for p in paths]
    fp = tuple(_fingerprint(w) for w in watches)
    if hit is not None and hit[0] == fp:
        _STATE[key] = (fp, hit[1], now)
        return hit[1]
    models = [read_repository(p, embedded, git_dir=w.git_dir, prefer_remote=prefer_remote)
              for p, w in zip(paths, watches, strict=True)]
    rs = RepoSet(models, _catalog(models, embedded))
    if len(_STATE) > 16:
        _STATE.clear()
    _STATE[key] = (fp, rs, now)
    return rs


def _catalog(models: list[RepoModel], embedded: Catalog) -> Catalog:
    pytorch: dict[str, Branch] = {}
    vision: dict[str, Branch] = {}
    for m in models:
        target = pytorch if m.kind == PYTORCH_REPO else vision
        for b in m.branches.values():
            if b.branch is None:
                continue
            key = b.name if b.name not in target else f"{Path(m.path).name}:{b.name}"
            target[key] = b.branch
    if not pytorch and not vision:
        where = ", ".join(m.path for m in models)
        raise CatalogError(f"The repository at {where} has no branch with recipes under .flox/pkgs/.")
    source = ("repository " if len(models) == 1 else "repositories ") + ", ".join(m.path for m in models)
    branches = list(pytorch.values()) if pytorch else list(embedded.branches.values())
    cat = replace(embedded.with_branches(branches, source))
    if pytorch:
        cat = replace(cat, branches=pytorch)
    candidates = list(pytorch.values())
    paired = {}
    for key, found in vision.items():
        vb = found
        best, text = pair(vb, candidates) if candidates else (None, "no build-pytorch repository configured")
        if best is not None and vb.pytorch == "unknown" and best.torch_source is None and set(vb.pins) & set(best.pins):
            # the same nixpkgs pin has the same torch
            vb = replace(vb, pytorch=best.pytorch)
            text += f" (PyTorch {best.pytorch}: nixpkgs' torch at the shared pin)"
        paired[key] = replace(vb, pairs_with=best.name if best else None, pairing=text)
    cat = replace(cat, vision=paired)
    if cat.recommended not in cat.branches and cat.branches:
        best = min(cat.branches.values(), key=lambda b: (b.rank, tuple(-x for x in vtuple(b.pytorch)), b.name))
        cat = replace(cat, recommended=best.name)
    return cat


# Catalogs of the compiled cache (config.catalog_cache), by (paths, embedded): (tips, catalog, checked at)
_STORED: dict[tuple, tuple[str, Catalog, float]] = {}


def catalog_from_repositories(paths: list[str | os.PathLike], embedded: Catalog) -> Catalog:
    """The embedded catalog with its branches replaced by the repositories' real ones
    (build-torchvision branches in ``Catalog.vision``). A process's first read comes from the
    compiled cache when every branch tip, the record of created branches, the data and the
    code are what the cached catalog was built from; it is read again when a branch moves."""
    key = (tuple(str(p) for p in paths), id(embedded))
    if key in _STATE:
        return read_repositories(paths, embedded).catalog
    hit = _STORED.get(key)
    now = time.monotonic()
    if hit is not None and now - hit[2] < RECHECK_SECONDS:
        return hit[1]
    tips = branch_tips(paths)
    if tips is None:  # not readable without git: the reader says what is wrong
        return read_repositories(paths, embedded).catalog
    if hit is not None and hit[0] == tips:
        _STORED[key] = (tips, hit[1], now)
        return hit[1]
    from config.catalog_cache import cached, files_key

    cat = cached("repo-catalog", f"{tips}\n{files_key(embedded.data_dir)}",
                 lambda: read_repositories(paths, embedded).catalog, Catalog)
    if len(_STORED) > 16:
        _STORED.clear()
    _STORED[key] = (tips, cat, now)
    return cat


def branch_tips(paths: list[str | os.PathLike]) -> str | None:
    """What a repository catalog is read from, as text: each repository's git directories and
    the content of its HEAD, packed-refs and every loose branch ref (heads and remotes), and the
    record of created branches. Files only, no git process; None when a path is no repository."""
    from config.branch_records import git_dir_of, repository_key
    from config.paths import branches_file

    out: list[str] = []
    try:
        for p in paths:
            gd = git_dir_of(p)
            common = Path(repository_key(gd))
            out.append(f"repository {Path(p).expanduser().resolve()} {gd} {common}")
            for f in (gd / "HEAD", common / "packed-refs"):
                out.append(f"{f.name}: {_text(f)}")
            stack = [common / "refs" / "heads", common / "refs" / "remotes"]
            while stack:
                d = stack.pop()
                try:
                    entries = sorted(os.scandir(d), key=lambda e: e.name)
                except FileNotFoundError:
                    continue
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(Path(e.path))
                    else:
                        out.append(f"{e.path}: {_text(Path(e.path))}")
        records = branches_file()
        out.append(f"records {records}: {_text(records)}")
    except (OSError, CatalogError, RefusedError):
        return None
    return "\n".join(out)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return "-"


def catalog_from_repository(path: str | os.PathLike, embedded: Catalog) -> Catalog:
    """The embedded catalog with its branches replaced by one repository's real ones."""
    return catalog_from_repositories([path], embedded)
