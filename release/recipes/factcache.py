"""A persistent cache of recipe facts, keyed by what they are computed from: the recipe's git
blob id and file name, the reader's own source, the tree-sitter grammar and the catalog's CPU
ISA flags. Blobs are content-addressed, so the cache is valid for any clone of any repository
and never goes stale; a new torchbot (different reader source or grammar) starts a new file.

It makes a ``torchbot ask`` / ``catalog --repo`` process read a repository it has seen before
without parsing its recipes again. Location: ``TORCHBOT_CACHE_DIR`` (``off`` disables it), else
the platform's cache directory (config.paths: ``$XDG_CACHE_HOME/torchbot``, else ``~/.cache/torchbot``).
Any I/O error disables it quietly:
the cache is an optimisation, never a source of truth.

May import: config, release.recipes.facts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path

from config.catalog import Catalog, TorchSource
from release.recipes.facts import RecipeFacts

_MAX_ENTRIES = 50_000


def cache_dir() -> Path | None:
    from config.paths import cache_dir

    return cache_dir()


def grammar_fingerprint() -> str:
    """The installed tree-sitter and tree-sitter-nix, by their dist-info names (which carry the
    versions), found without importing them."""
    out = []
    for module in ("tree_sitter", "tree_sitter_nix"):
        spec = importlib.util.find_spec(module)
        where = spec.submodule_search_locations if spec is not None else None
        if not where:
            out.append(f"{module}: not installed")
            continue
        package = Path(next(iter(where)))
        out.append(" ".join(sorted(p.name for p in package.parent.glob(f"{module}-*.dist-info"))) or str(package))
    return "; ".join(out)


def _reader_hash(catalog: Catalog) -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in ("facts.py", "buildchain.py", "cpuflags.py", "nixtree.py", "nixdups.py", "nixgrammar.py",
                 "nixstrings.py", "factcache.py"):
        try:
            h.update((here / name).read_bytes())
        except OSError:
            h.update(name.encode())
    h.update(grammar_fingerprint().encode())
    for isa in sorted(catalog.isas.values(), key=lambda i: i.key):
        h.update(f"{isa.key}:{' '.join(isa.flags)}:{isa.arch}\n".encode())
    return h.hexdigest()[:16]


# JSON gives lists back: every tuple field of RecipeFacts is made a tuple again, so a fact read
# from the cache equals the fact read from the recipe.
_TUPLE_FIELDS = tuple(k for k, f in RecipeFacts.__dataclass_fields__.items() if str(f.type).startswith("tuple"))


def _to_json(f: RecipeFacts) -> dict:
    d = {k: getattr(f, k) for k in RecipeFacts.__dataclass_fields__}
    d["torch_source"] = [f.torch_source.version, f.torch_source.hash] if f.torch_source else None
    return d


def _from_json(d: dict) -> RecipeFacts:
    d = dict(d)
    ts = d.get("torch_source")
    d["torch_source"] = TorchSource(ts[0], ts[1]) if ts else None
    for k in _TUPLE_FIELDS:
        d[k] = tuple(d.get(k) or ())
    return RecipeFacts(**d)


class FactCache:
    """Facts by (file name, blob id) for one catalog, loaded once and written back when it grew."""

    def __init__(self, catalog: Catalog):
        self.path: Path | None = None
        self.entries: dict[str, dict] = {}
        self.dirty = False
        base = cache_dir()
        if base is None:
            return
        self.path = base / f"recipe-facts-{_reader_hash(catalog)}.json"
        try:
            self.entries = json.loads(self.path.read_text())
            if not isinstance(self.entries, dict):
                self.entries = {}
        except (OSError, ValueError):
            self.entries = {}

    def get(self, filename: str, blob: str) -> RecipeFacts | None:
        d = self.entries.get(f"{filename}\0{blob}")
        if d is None:
            return None
        try:
            return _from_json(d)
        except (TypeError, ValueError, IndexError):
            return None

    def put(self, filename: str, blob: str, facts: RecipeFacts) -> None:
        if self.path is None:
            return
        self.entries[f"{filename}\0{blob}"] = _to_json(facts)
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        if len(self.entries) > _MAX_ENTRIES:
            self.entries = dict(list(self.entries.items())[-_MAX_ENTRIES // 2:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".facts-")
            with os.fdopen(fd, "w") as fh:
                json.dump(self.entries, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError:
            self.path = None
