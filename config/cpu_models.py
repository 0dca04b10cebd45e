"""CPU model-number data (``config/data/cpu_models/*.toml``): families of model numbers, each
mapping to a microarchitecture of ``cpus.toml``, and the words that name a masked CPU from its
flags. Loaded once per data directory, when a question is first read (not with the catalog:
commands that never read a question do not pay for it). The file format is described in
``config/data/cpu_models/README.md``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from config.errors import CatalogError

BARE = ("all", "suffixed", "none")


@dataclass(frozen=True, slots=True)
class CpuFamily:
    name: str  # "Intel Xeon Platinum": the answer says "<name> <model> (<generation>)"
    generation: str
    uarch: str
    words: frozenset[str]  # brand words that may stand before a number of this family
    bare: str  # all | suffixed | none: when the number alone names the part
    models: tuple[str, ...] = ()  # listed model numbers as written ("8480+", "w9-3495X")
    number: str | None = None  # or: a regular expression over one token
    prefixes: tuple[str, ...] = ()  # with `number`: tokens that may stand right before it ("i9")
    source: str = ""  # the data file, for error messages


@dataclass(frozen=True, slots=True)
class Telling:
    flag: str
    words: str
    implies: tuple[str, ...] = ()


@dataclass(frozen=True)
class CpuModelData:
    families: tuple[CpuFamily, ...]
    telling: tuple[Telling, ...]


def _family(raw: dict, source: str) -> CpuFamily:
    try:
        fam = CpuFamily(
            name=raw["name"],
            generation=raw["generation"],
            uarch=raw["uarch"],
            words=frozenset(raw.get("words", ())),
            bare=raw.get("bare", "none"),
            models=tuple(raw.get("models", "").split()),
            number=raw.get("number"),
            prefixes=tuple(raw.get("prefixes", ())),
            source=source,
        )
    except KeyError as err:
        raise CatalogError(f"A CPU model family in {source} lacks {err}.") from None
    if fam.bare not in BARE:
        raise CatalogError(f"CPU model family '{fam.name} ({fam.generation})' in {source}: bare must be one of {', '.join(BARE)}.")
    if bool(fam.models) == bool(fam.number):
        raise CatalogError(f"CPU model family '{fam.name} ({fam.generation})' in {source} needs either models or number.")
    if fam.number:
        try:
            re.compile(fam.number)
        except re.error as err:
            raise CatalogError(f"CPU model family '{fam.name} ({fam.generation})' in {source}: number {fam.number!r} is invalid: {err}.") from None
    return fam


@lru_cache(maxsize=4)
def load_cpu_models(data_dir: Path) -> CpuModelData:
    """Every family of ``<data_dir>/cpu_models/*.toml`` in file-name order (empty when there is none)."""
    folder = data_dir / "cpu_models"
    families: list[CpuFamily] = []
    telling: list[Telling] = []
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
        try:
            with path.open("rb") as fh:
                raw = tomllib.load(fh)
        except tomllib.TOMLDecodeError as err:
            raise CatalogError(f"Catalog file {path} is not valid TOML: {err}.") from None
        families.extend(_family(f, path.name) for f in raw.get("family", ()))
        telling.extend(Telling(t["flag"], t["words"], tuple(t.get("implies", ()))) for t in raw.get("telling", ()))
    return CpuModelData(tuple(families), tuple(telling))
