"""CPU model-number data (``config/data/cpu_models/*.toml``): families of model numbers, each
mapping to a microarchitecture of ``cpus.toml``, the lookup keys of their listed numbers, and
the words that name a masked CPU from its flags. The file format is described in
``config/data/cpu_models/README.md``.

Reading a thousand model numbers with tomllib costs more than the rest of an ``ask``, so the
data is also kept compiled in ``compiled.json`` (json is read in C) with a digest of the TOML it
came from: when the digest matches, the TOML is not parsed; when it does not (the TOML was
edited), the TOML is read as usual. ``python -m config.cpu_models`` writes ``compiled.json``;
a test keeps it current. Loaded once per data directory, when a question is first read."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from config.catalog import pickled_as_arguments
from config.catalog_cache import blake2b, cached
from config.errors import CatalogError
from config.regex_cache import rx

BARE = ("all", "suffixed", "none")
COMPILED = "compiled.json"
TOKEN_RE = rx(r"[a-z0-9]+\+?")  # a model number's tokens ("8480+", "w9", "3495x")
PREFIXED_RE = rx(r"([a-z]+\d{0,2})-(.+)")  # "w9-3495x", "e-2388g", "i3-n305", "a10-7850k"; not "6975p-c"


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class CpuFamily:
    """A family of CPU model numbers and the microarchitecture they share."""

    name: str  # "Intel Xeon Platinum": the answer says "<name> <model> (<generation>)"
    generation: str
    uarch: str
    words: frozenset[str]  # brand words that may stand before a number of this family
    bare: str  # all | suffixed | none: when the number alone names the part
    models: tuple[str, ...] = ()  # listed model numbers as written ("8480+", "w9-3495X")
    number: str | None = None  # or: a regular expression over one token
    prefixes: tuple[str, ...] = ()  # with `number`: tokens that may stand right before it ("i9")
    source: str = ""  # the data file, for error messages
    needs: frozenset[str] = frozenset()  # brand words of which one must be said ("gold" for "Xeon Gold 6330")


@pickled_as_arguments
@dataclass(frozen=True, slots=True)
class Telling:
    """A CPU flag that tells a masked CPU apart, and the words that name it."""

    flag: str
    words: str
    implies: tuple[str, ...] = ()


@dataclass(frozen=True)
class CpuModelData:
    """Every family of the model-number data, with its lookup keys."""

    families: tuple[CpuFamily, ...]
    telling: tuple[Telling, ...]
    # joined tokens of a listed number ("8480+", "w93495x", and "3495x" alone) ->
    # (family index, the model as written, whether the key includes its prefix)
    keys: dict[str, tuple[tuple[int, str, bool], ...]]
    firsts: frozenset[str]  # tokens a key can begin with
    max_tokens: int
    listed_prefixes: frozenset[str] = frozenset()  # prefixes of listed numbers ("a10" of "A10-7850K")


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
            needs=frozenset(raw.get("needs", ())),
        )
    except KeyError as err:
        raise CatalogError(f"A CPU model family in {source} lacks {err}.") from None
    label = f"CPU model family '{fam.name} ({fam.generation})' in {source}"
    if fam.bare not in BARE:
        raise CatalogError(f"{label}: bare must be one of {', '.join(BARE)}.")
    if bool(fam.models) == bool(fam.number):
        raise CatalogError(f"{label} needs either models or number.")
    if not fam.needs <= fam.words:
        raise CatalogError(f"{label}: needs must be among its words ({', '.join(sorted(fam.needs - fam.words))}).")
    if fam.number:
        try:
            rx(fam.number)
        except re.error as err:
            raise CatalogError(f"{label}: number {fam.number!r} is invalid: {err}.") from None
    return fam


def model_keys(model: str) -> list[tuple[list[str], bool]]:
    """The token forms a listed number is read in: all of it ("w9-3495X": w9 3495x, prefix
    included) and, for a prefixed one, the number alone (3495x)."""
    low = model.lower()
    pm = PREFIXED_RE.fullmatch(low)
    forms = [(TOKEN_RE.findall(low), pm is not None)]
    if pm:
        forms.append((TOKEN_RE.findall(pm.group(2)), False))
    return forms


def _sources(folder: Path) -> tuple[list[Path], str]:
    paths = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    digest = blake2b()
    for p in paths:
        digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return paths, digest.hexdigest()


def _from_toml(paths: list[Path]) -> CpuModelData:
    import tomllib  # only when compiled.json is stale: importing it costs `ask` ~3 ms

    families: list[CpuFamily] = []
    telling: list[Telling] = []
    for path in paths:
        try:
            with path.open("rb") as fh:
                raw = tomllib.load(fh)
        except tomllib.TOMLDecodeError as err:
            raise CatalogError(f"Catalog file {path} is not valid TOML: {err}.") from None
        families.extend(_family(f, path.name) for f in raw.get("family", ()))
        telling.extend(Telling(t["flag"], t["words"], tuple(t.get("implies", ()))) for t in raw.get("telling", ()))
    keys: dict[str, list[tuple[int, str, bool]]] = {}
    firsts: set[str] = set()
    max_tokens = 1
    for i, fam in enumerate(families):
        for model in fam.models:
            for toks, strong in model_keys(model):
                keys.setdefault("".join(toks), []).append((i, model, strong))
                firsts.add(toks[0])
                max_tokens = max(max_tokens, len(toks))
    return CpuModelData(tuple(families), tuple(telling), {k: tuple(v) for k, v in keys.items()}, frozenset(firsts),
                        max_tokens, _listed_prefixes(families))


def _listed_prefixes(families) -> frozenset[str]:
    """The prefixes listed numbers are written with ("w9" of "w9-3495X"): kept with the data, so a
    process does not match a thousand numbers to find them."""
    return frozenset(pm.group(1) for f in families for m in f.models if (pm := PREFIXED_RE.fullmatch(m.lower())))


def _to_json(data: CpuModelData, digest: str) -> dict:
    return {
        "digest": digest,
        "families": [{**asdict(f), "words": sorted(f.words), "needs": sorted(f.needs)} for f in data.families],
        "telling": [asdict(t) for t in data.telling],
        "keys": data.keys,
        "firsts": sorted(data.firsts),
        "max_tokens": data.max_tokens,
    }


def _from_json(raw: dict) -> CpuModelData:
    fams = tuple(
        CpuFamily(f["name"], f["generation"], f["uarch"], frozenset(f["words"]), f["bare"], tuple(f["models"]),
                  f["number"], tuple(f["prefixes"]), f["source"], frozenset(f["needs"]))
        for f in raw["families"]
    )
    return CpuModelData(
        fams,
        tuple(Telling(t["flag"], t["words"], tuple(t["implies"])) for t in raw["telling"]),
        {k: tuple((i, m, s) for i, m, s in v) for k, v in raw["keys"].items()},
        frozenset(raw["firsts"]),
        raw["max_tokens"],
        _listed_prefixes(fams),
    )


@lru_cache(maxsize=4)
def load_cpu_models(data_dir: Path) -> CpuModelData:
    """Every family of ``<data_dir>/cpu_models/*.toml`` in file-name order (empty when there is
    none): from ``compiled.json`` when it was compiled from exactly these files."""
    folder = data_dir / "cpu_models"
    paths, digest = _sources(folder)
    # pickled in torchbot's cache (config.catalog_cache): unpickling is cheaper than the json
    return cached("cpu-models", digest, lambda: _compiled_or_toml(folder, paths, digest), CpuModelData)


def _compiled_or_toml(folder: Path, paths: list[Path], digest: str) -> CpuModelData:
    import json  # only when the pickled form is missing: `ask` reads that

    try:
        raw = json.loads((folder / COMPILED).read_bytes())
        if raw.get("digest") == digest:
            return _from_json(raw)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or stale: the TOML says
    return _from_toml(paths)


def compiled_text(data_dir: Path) -> str:
    """What ``compiled.json`` must hold for the TOML files of ``data_dir``."""
    import json

    paths, digest = _sources(data_dir / "cpu_models")
    return json.dumps(_to_json(_from_toml(paths), digest), separators=(",", ":"), sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m config.cpu_models: rewrite compiled.json after editing the TOML
    from config.catalog import DATA_DIR

    out = DATA_DIR / "cpu_models" / COMPILED
    out.write_text(compiled_text(DATA_DIR))
    print(f"wrote {out}")
