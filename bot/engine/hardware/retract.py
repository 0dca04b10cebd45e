"""A message that corrects itself ("an A100, no wait, an H100", "scratch that", "I meant", "not
an A100 but an H100"): the GPU, CPU or instance it takes back is blanked out of the text before
anything is read, so the part named instead replaces it rather than joining it, and the answer
says which one it read. A genuine mixed box ("an H100 and an A100") has no such phrase and is
read as before. The phrases are data (``config/data/words.toml`` [corrections]). Pure; may
import config."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from bot.engine.hardware.cpu_table import find_cpus
from bot.engine.hardware.facts import SCAN, Hardware, bounded
from bot.engine.hardware.instances import find_instance
from bot.engine.hardware.matchers import Matchers, lookup, token_spans
from config.catalog import DATA_DIR, Catalog
from config.regex_cache import rx

_SEPARATORS = rx(r"\((?:r|tm|c)\)|[®™\-_/,;|()\[\]\"'`×]")
# What may stand between a `forward` phrase and the part it takes back: "not [an] [8x] A100".
WINDOW = 40  # characters between a `back` phrase and the part meant instead, at most
_PYTHON_RE = rx(r"(?<![a-z0-9])(?:python|py) ?v?(3)\.?(1\d)(?![0-9])")
_COUNT_RE = rx(r"(?<![\d.])(\d{1,2}) ?[x×]? ?$")
_FORWARD_GAP = rx(r"\s*(?:(?:a|an|the|my|our|one|two|\d{1,2} ?x?|x?\d{1,2})\s+)*")


@dataclass(frozen=True)
class Named:
    """A GPU, CPU or instance named in the question, and where."""

    kind: str  # gpu | cpu | instance
    shown: str  # as the answer says it
    start: int  # span in the question's lower-cased text
    end: int


@lru_cache(maxsize=1)
def phrases() -> tuple[tuple[str, ...], ...]:
    """(back, forward, keep, keep_after) phrases of the data (from the compiled cache)."""
    from config.catalog_cache import cached, files_key

    path = DATA_DIR / "words.toml"
    return cached("corrections", files_key(path), lambda: _phrases(path), tuple)


def _phrases(path) -> tuple[tuple[str, ...], ...]:
    import tomllib

    with path.open("rb") as fh:
        raw = tomllib.load(fh).get("corrections", {})
    return tuple(tuple(str(p).lower() for p in raw.get(k, ())) for k in ("back", "forward", "keep", "keep_after"))


@lru_cache(maxsize=1)
def _markers() -> re.Pattern | None:
    back, forward = phrases()[:2]
    alts = [f"(?P<f{i}>{_phrase(p)})" for i, p in enumerate(forward)]
    alts += [f"(?P<b{i}>{_phrase(p)})" for i, p in enumerate(back)]
    if not alts:
        return None
    # longest first, so "actually it's" wins over "actually" and "rather than" over "rather"
    alts.sort(key=len, reverse=True)
    return rx(bounded("|".join(alts)))


@lru_cache(maxsize=2)
def _keep(after: bool = False) -> re.Pattern | None:
    """Words that make a `back` phrase an addition: right after it, or right after the part named."""
    keep = phrases()[3 if after else 2]
    return rx(r"[\s,:.!-]*" + bounded("|".join(_phrase(p) for p in keep))) if keep else None


def _phrase(p: str) -> str:
    """A phrase as a pattern: any run of spaces or punctuation between its words."""
    return r"[\s,.:;!-]+".join(re.escape(w) for w in re.split(r"[\s,]+", p.strip()) if w)


def retract(cat: Catalog, m: Matchers, hw: Hardware, low: str) -> str:
    """``low`` with every part the question takes back blanked out (same length, so every
    offset stays); ``hw.notes`` says what was read instead."""
    markers = _markers()
    if markers is None or markers.search(low, 0, SCAN) is None:
        return low
    named = names(cat, m, low[:SCAN])
    cut: list[tuple[Named, Named]] = []
    for mk in markers.finditer(low, 0, SCAN):
        pair = _forward(named, cut, low, mk) if mk.lastgroup[0] == "f" else _back(named, cut, low, mk)
        if pair is not None:
            cut.append(pair)
    for gone, meant in cut:
        low = low[: gone.start] + " " * (gone.end - gone.start) + low[gone.end :]
        was, now = _as_typed(hw.query, gone.shown), _as_typed(hw.query, meant.shown)
        hw.notes.append(f"Read as the {now}: you corrected the {was}.")
        hw.retracted.append((gone.kind, was, now))
    return low


def _as_typed(query: str, shown: str) -> str:
    """An instance name as the question wrote it ("BM.GPU4.8", not "bm.gpu4.8")."""
    if shown != shown.lower():
        return shown  # a catalog name, already as the vendor writes it
    at = query.lower().find(shown)
    return query[at : at + len(shown)] if at >= 0 else shown


def _taken(n: Named, cut: list[tuple[Named, Named]]) -> bool:
    return any(n is gone for gone, _ in cut)


def _back(named: list[Named], cut: list, low: str, mk: re.Match) -> tuple[Named, Named] | None:
    """"X, no wait, Y": the last part before the phrase of the kind named first after it."""
    after = [n for n in named if n.start >= mk.end()]
    if not after:
        return None
    meant = after[0]
    gap = low[mk.end() : meant.start]
    keep = _keep()
    if keep is not None and keep.search(gap):
        return None  # "actually also an A100", "but now I also have an H100": an addition
    if len(gap) > WINDOW or "?" in gap or "\n" in gap:
        return None  # "sorry for the basic question, ... an H100": a courtesy, not a correction
    keep_after = _keep(after=True)
    if keep_after is not None and keep_after.match(low, meant.end):
        return None  # "actually an H100 too": an addition
    before = [n for n in named if n.end <= mk.start() and n.kind == meant.kind and not _taken(n, cut)]
    if not before:
        return None
    if before[-1].shown == meant.shown:  # "4x H100, sorry, 8x H100": the count is corrected
        was, now = _COUNT_RE.search(low[max(0, before[-1].start - 6) : before[-1].start]), \
            _COUNT_RE.search(low[max(0, meant.start - 6) : meant.start])
        if meant.kind != "gpu" or not was or not now or was.group(1) == now.group(1):
            return None
        return Named("gpu", f"{was.group(1)}x {before[-1].shown}", before[-1].start - len(was.group(0)),
                     before[-1].end), Named("gpu", f"{now.group(1)}x {meant.shown}", meant.start, meant.end)
    return before[-1], meant


def _forward(named: list[Named], cut: list, low: str, mk: re.Match) -> tuple[Named, Named] | None:
    """"not X but Y", "Y, not X", "Y instead of X": the part right after the phrase, when the
    question names another of its kind."""
    gap = _FORWARD_GAP.match(low, mk.end())
    at = gap.end() if gap else mk.end()
    gone = next((n for n in named if n.start == at), None)
    if gone is None or _taken(gone, cut):
        return None
    others = [n for n in named if n.kind == gone.kind and n is not gone and n.shown != gone.shown]
    if not others:
        return None
    before = [n for n in others if n.end <= mk.start()]
    meant = before[-1] if before else next((n for n in others if n.start > gone.end), None)
    if meant is None:
        return None
    return gone, meant


def names(cat: Catalog, m: Matchers, low: str) -> list[Named]:
    """Every GPU (model, system, other accelerator), CPU and instance named in ``low``, by start."""
    soft = _SEPARATORS.sub(lambda x: " " * len(x.group(0)), low)  # folded, but every offset kept
    out: list[Named] = []
    spans = token_spans(soft)
    for name, s, e in lookup(m.system, spans, m):
        out.append(Named("gpu", name, s, e))
    for name, s, e in lookup(m.gpu, spans, m):
        out.append(Named("gpu", name, s, e))
    if m.foreign is not None:
        out += [Named("gpu", fm.group(0).strip(), *fm.span()) for fm in m.foreign.finditer(soft)]
    cpus = [Named("cpu", cat.cpu_models[int(cm.lastgroup[1:])].name, *cm.span()) for cm in m.cpu.finditer(soft)] \
        if m.cpu is not None else []
    cpus += [Named("cpu", h.parts[0].display.split(" (")[0] if len(h.parts) == 1 else h.typed, h.start, h.end)
             for h in find_cpus(cat, soft, m.gpu, SCAN)]
    out += cpus
    out += [Named("python", f"Python {pm.group(1)}.{pm.group(2)}", *pm.span()) for pm in _PYTHON_RE.finditer(low)]
    rest = low
    while (hit := find_instance(cat, m, rest)) is not None:
        _, s, e = hit
        out.append(Named("instance", low[s:e], s, e))
        rest = rest[:s] + " " * (e - s) + rest[e:]
    # A GPU-like number inside a CPU's name ("Xeon E5-2698 v4") or an instance is not a GPU.
    wide = [n for n in out if n.kind != "gpu"]
    out = [n for n in out if n.kind != "gpu" or not any(w.start <= n.start and n.end <= w.end for w in wide)]
    out.sort(key=lambda n: (n.start, -n.end))
    kept: list[Named] = []
    for n in out:  # one name per span: the longest at each position, nothing inside it
        if kept and n.start < kept[-1].end:
            continue
        kept.append(n)
    return kept
