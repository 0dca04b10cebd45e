"""A compiled cache of catalogs, so a one-shot ``torchbot ask`` process does not build them: the
embedded catalog (TOML, archspec, every branch's variant matrix) and the catalog read from the
managed repositories are pickled in torchbot's cache directory (``config.paths.cache_dir``:
``TORCHBOT_CACHE_DIR``, else ``$XDG_CACHE_HOME/torchbot``; never the working directory).

An entry is keyed by everything its catalog is computed from: the content of the data files,
torchbot's version and source files (their size and modification time), the Python and archspec
versions, the tree-sitter and tree-sitter-nix versions (the grammar the recipes are read with),
and for a repository catalog the tips of every branch and the record of created branches. A key
that differs is a miss; an entry that cannot be read, or holds anything but what its key says,
is rebuilt and written again. So a stale or corrupt entry never changes an answer: the worst it
costs is the time to build the catalog. Writes are atomic (a temporary file renamed into place);
any I/O error leaves the cache aside quietly. Imports nothing of torchbot
but config.paths.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

try:  # BLAKE2 from CPython's own module: `import hashlib` loads OpenSSL, ~3 ms of every `ask`
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

T = TypeVar("T")
KEEP = 8  # entries of one kind kept (other checkouts, other data); older ones are removed
# The code that defines and builds what is cached: the catalog's classes and loaders (config),
# the repository reader (release/recipes), the words of the typo reader (bot/engine/fuzzy.py).
_SOURCES = ("config", "release/recipes", "bot/engine")
# The parser and grammar the repository reader reads recipes with: a new grammar may read them otherwise.
_GRAMMAR = ("tree-sitter", "tree-sitter-nix")


def _version(dist: str) -> str:
    """``dist``'s installed version, as importlib.metadata finds it (the first ``*.dist-info`` for
    it on ``sys.path``), from the directory's name (``tree_sitter_nix-0.1.0.dist-info``), which
    pip writes with the version: importing importlib.metadata would cost ``ask`` ~15 ms."""
    prefix = dist.replace("-", "_").lower() + "-"
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                for e in it:
                    name = e.name.lower()
                    if name.startswith(prefix) and name.endswith(".dist-info"):
                        return e.name[len(prefix) : -len(".dist-info")]
        except OSError:
            continue
    return "not installed"


@lru_cache(maxsize=1)
def code_key() -> str:
    """The size and mtime of the source files that define and build the cached objects (a new
    version, or an edited checkout, has others), the Python version and archspec's files (its
    microarchitecture database) and the versions of the Nix grammar the repository reader parses
    with: what a cached object depends on besides its key. No import of archspec or tree-sitter."""
    from importlib.util import find_spec

    h = blake2b()
    h.update(sys.version.encode())
    for dist in _GRAMMAR:
        h.update(f"{dist} {_version(dist)}\n".encode())
    root = Path(__file__).resolve().parents[1]
    spec = find_spec("archspec")
    dirs = [root / package for package in _SOURCES]
    if spec is not None and spec.submodule_search_locations:
        pkg = Path(next(iter(spec.submodule_search_locations)))
        dirs += [pkg, pkg / "cpu", pkg / "json" / "cpu"]
    for top in dirs:  # each directory's own files (the data files are keyed by content)
        try:
            with os.scandir(top) as it:
                for e in sorted(it, key=lambda e: e.name):
                    if e.name.endswith((".py", ".json")) and e.is_file():
                        st = e.stat()
                        h.update(f"{e.path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{top}: unreadable\n".encode())
    return h.hexdigest()


def files_key(*roots: Path) -> str:
    """The names and content of every file under ``roots`` (a file or a directory each)."""
    h = blake2b()
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for p in paths:
            try:
                data = p.read_bytes()
            except OSError:
                data = b"\0missing"
            h.update(f"{p}:{len(data)}\n".encode())
            h.update(data)
        if not paths:
            h.update(f"{root}:absent\n".encode())
    return h.hexdigest()


def _directory() -> Path | None:
    from config.paths import cache_dir

    return cache_dir()


def cached(kind: str, key: str, build: Callable[[], T], expect: type) -> T:
    """The ``kind`` object for ``key`` from the cache, else ``build()`` (then stored)."""
    directory = _directory()
    if directory is None:
        return build()
    digest = blake2b(f"{code_key()}\n{key}".encode()).hexdigest()
    path = directory / f"{kind}-{digest[:32]}.pickle"
    try:
        with path.open("rb") as fh:
            stored = pickle.load(fh)
        if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == digest and isinstance(stored[1], expect):
            return stored[1]
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - deliberate: any unreadable entry (truncated, foreign, old) is rebuilt
        pass
    obj = build()
    _store(directory, kind, path, (digest, obj))
    return obj


def _store(directory: Path, kind: str, path: Path, value: tuple) -> None:
    import tempfile

    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{kind}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        entries = sorted(directory.glob(f"{kind}-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, RecursionError):
        pass  # the cache is an optimisation: a read-only or full disk just means building next time
