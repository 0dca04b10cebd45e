"""CPU model numbers read as tokens: the families of ``config/data/cpu_models`` become one dict
from normalised model number ("8480+", "w93495x", "e2388g") to its candidate parts, and a few
token rules for regular numbering ("13900k": 13th gen Core). Thousands of numbers cost one dict
lookup per token, not one giant regular expression per process.

A number is read with the brand words before it ("Xeon Gold 6248", "Ryzen 9 7945HX"): only the
families of that brand count. Without one, a family reads it only when its numbers stand alone
(``bare``); a number several vendors' parts share ("7900X") gives every candidate, and the
caller asks which. A number of digits alone ("6144", "7742") is a quantity far more often than
a CPU ("6144 MiB", "batch size 6144", "7742 images"): without a brand word it names a CPU only
with "CPU" or "processor" right beside it, "dual" before it, or as a phrase of its own in a list
of hardware ("9654, no GPU"), never with a unit after it; no token right after a GPU word
("Quadro M5000", "RTX 6000") is read. Listed numbers come before
rules. Pure; may import config."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from config.catalog import Catalog
from config.cpu_models import TOKEN_RE, CpuFamily, CpuModelData, load_cpu_models
from config.errors import CatalogError
from config.regex_cache import rx

LOOKBACK = 5  # tokens searched for brand words before a number
_NAME_PARTS = frozenset({"pro", "hx"})  # said between a brand and its number, part of the part's name
_SKIPPED = frozenset({"cpu", "processor", "pro", "r", "tm", "extreme"})  # between a brand and its number
_CPU_WORDS = frozenset({"cpu", "cpus", "processor", "processors"})  # beside a bare number: it is a CPU's
_SOCKET_WORDS = frozenset({"dual", "quad", "socket", "sockets"})  # before one: "dual 7763" are two CPUs
_OPENERS = frozenset({"a", "an", "with", "and", "plus"})  # before a number that is a phrase of its own
_CLOSERS = frozenset({"and", "with", "plus", "no", "host", "box", "server", "node", "machine", "system"})
_GPU_WORDS = frozenset({"rtx", "gtx", "quadro", "tesla", "geforce", "titan", "radeon", "rx", "arc"})
# A quantity's unit after a number ("6144 MiB", "6400 MT/s", "7742 images", "4800%"): no model number.
_UNIT_AFTER_RE = rx(
    r" ?(?:%|[kmgtp]i?b(?:ps|/s)?|[kmgt]?hz|[mg]t ?s|[mg]t|w|watts?|rpm|images?|samples?|steps?|tokens?"
    r"|batch(?:es)?|epochs?|iter(?:ation)?s?|rows?|records?|files?|items?|users?|requests?|ms|s|secs?|seconds?"
    r"|minutes?|hours?|days?|dollars?|usd|eur|words?|params?|parameters?)(?![a-z0-9])"
)


@dataclass(frozen=True)
class Part:
    """One CPU a model number names: its family and how the answer names it."""

    family: CpuFamily
    display: str  # "Intel Xeon Platinum 8480+ (4th gen Xeon Scalable, Sapphire Rapids)"


@dataclass(frozen=True)
class CpuHit:
    """A model number found in the text, and the parts it may be."""

    start: int  # character span in the folded text
    end: int
    typed: str  # the number as typed ("7900x")
    parts: tuple[Part, ...]  # one: the CPU; several: the candidates to ask about


@dataclass(frozen=True, eq=False)  # identity hash: its compiled rules are cached per table
class CpuTable:
    """The model-number data as lookup tables, built once per catalog."""

    data: CpuModelData
    rule_families: tuple[int, ...]  # families with a `number` rule, in data order
    prefixes: frozenset[str]  # tokens that stand before a rule's number ("i9")
    prefix_starts: frozenset[str]  # their first letters: tokens a glued "i913900k" can begin with
    brand_words: frozenset[str]
    other_prefixes: frozenset[str]  # prefixes of listed numbers no rule has ("a10" of "A10-7850K")

    @property
    def families(self) -> tuple[CpuFamily, ...]:
        return self.data.families


@lru_cache(maxsize=8)
def cpu_table(cat: Catalog) -> CpuTable:
    data = load_cpu_models(cat.data_dir)
    for fam in data.families:
        if fam.uarch not in cat.uarchs:
            raise CatalogError(
                f"CPU model family '{fam.name} ({fam.generation})' in {fam.source} "
                f"names unknown microarchitecture '{fam.uarch}'."
            )
    fams = data.families
    prefixes = frozenset(p for f in fams for p in f.prefixes)
    listed = data.listed_prefixes
    return CpuTable(
        data, tuple(i for i, f in enumerate(fams) if f.number), prefixes, frozenset(p[0] for p in prefixes),
        frozenset(w for f in fams for w in f.words), frozenset(listed - prefixes),
    )


@lru_cache(maxsize=64)
def _rules(t: CpuTable, families: tuple[int, ...]) -> re.Pattern:
    """One alternation of the rules a context allows (compiled when a question first needs it):
    its first matching group, in data order, is the family."""
    return rx("|".join(f"(?P<r{i}>{t.families[i].number})" for i in families))


def _display(fam: CpuFamily, model: str, said: list[str] = ()) -> str:
    """ "<name> <model> (<generation>)", with the brand words the question gave that the
    family's name lacks ("Intel" + "celeron" -> "Intel Celeron N5105")."""
    name = fam.name.lower().split()
    kept = [w.upper() if w in _NAME_PARTS else w.title() for i, w in enumerate(said)
            if (w in fam.words and w.rstrip("+") not in name)
            or (len(w) == 1 and w.isdigit() and i and said[i - 1] in fam.words)  # the tier: "Ryzen 9"
            or (w in _NAME_PARTS and i)]  # "Threadripper PRO", "Ryzen AI 9 HX"
    extra = " ".join(kept)
    return f"{fam.name}{' ' + extra if extra else ''} {model} ({fam.generation})"


def _brands(t: CpuTable, toks: list[tuple[str, int, int]], i: int) -> tuple[frozenset[str], int]:
    """Brand words right before token i ("intel xeon gold", "amd ryzen 9", "ryzen ai 9 hx"),
    and where the first of them starts (the name begins there), or -1."""
    found: set[str] = set()
    first = -1
    for j in range(i - 1, max(-1, i - 1 - LOOKBACK), -1):
        tok = toks[j][0]
        if tok in t.brand_words:
            found.add(tok)
            first = toks[j][1]
        elif not (len(tok) <= 2 or tok in _SKIPPED):
            break
    return frozenset(found), first


def _stands_alone(fam: CpuFamily, typed: str) -> bool:
    """A number said without brand or prefix names this family's part. For a family named by
    its suffixed numbers, a lone "s" is no suffix: "2102s" is as often 2102 seconds, or the
    plural of a number, as a Core i3-2102S (which "i3-2102S" or "Core 2102S" still name)."""
    lone_s = typed[-1:] == "s" and typed[:-1].isdigit()
    return not fam.needs and (fam.bare == "all" or (fam.bare == "suffixed" and not typed.isdigit() and not lone_s))


def _branded(fam: CpuFamily, brands: frozenset[str]) -> bool:
    """The brand words said name this family: all of them are its words, and one is a word it
    needs ("Xeon Gold 6330": Ice Lake-SP's numbering needs the tier; "Xeon 6349P" lacks it)."""
    return brands <= fam.words and (not fam.needs or not brands.isdisjoint(fam.needs))


def _gpu_number(typed: str, gpu_keys) -> bool:
    """A GPU's number, or its plural ("4090s", "2080s"): never read as a bare CPU number."""
    return typed in gpu_keys or (typed.endswith("s") and typed[:-1] in gpu_keys)


def _decimal(folded: str, start: int, end: int) -> bool:
    """A number inside a decimal ("4800.00", "3.9654"): never a model number."""
    return (end + 1 < len(folded) and folded[end] == "." and folded[end + 1].isdigit()) or (
        start >= 2 and folded[start - 1] == "." and folded[start - 2].isdigit()
    )


def _quantity(folded: str, toks: list[tuple[str, int, int]], i: int, n_used: int, brands: frozenset[str]) -> bool:
    """A number of digits that is no model number here: a unit after it, or (with no brand word
    before it) no "CPU"/"processor" beside it, no "dual" before it and not a phrase of its own."""
    end = toks[i + n_used - 1][2]
    if _UNIT_AFTER_RE.match(folded, end):
        return True
    after = toks[i + n_used][0] if i + n_used < len(toks) else ""
    before = toks[i - 1][0] if i else ""
    if brands or before in _CPU_WORDS or before in _SOCKET_WORDS or after in _CPU_WORDS:
        return False
    return not _own_phrase(folded, toks, i, n_used)


def _own_phrase(folded: str, toks: list[tuple[str, int, int]], i: int, n_used: int) -> bool:
    """A number that is a phrase of its own in a hardware list: "9654, no GPU", "H100 with a
    9654", "A100 host + 7763 and 8 GPUs". Opened by the start, a comma or "+", or by "a",
    "with", "and"; closed by the end, a comma, "+", or "and"/"with"/"no" or a machine word."""
    start, end = toks[i][1], toks[i + n_used - 1][2]
    gap_before = folded[toks[i - 1][2]:start] if i else ""
    opened = not i or any(c in gap_before for c in ",;+(") or toks[i - 1][0] in _OPENERS
    j = i + n_used
    gap_after = folded[end:toks[j][1]] if j < len(toks) else ""
    closed = j >= len(toks) or any(c in gap_after for c in ",;+)") or toks[j][0] in _CLOSERS
    return opened and closed


def _choose(t: CpuTable, cands: list[tuple[int, str, bool]], brands: frozenset[str], typed: str,
            gpu_keys) -> list[tuple[int, str]]:
    """The candidates the context allows: with the prefix typed or brand words, those of that
    brand; alone, those whose numbers stand alone (never a GPU's number: "4090s")."""
    out = []
    for fi, model, strong in cands:
        fam = t.families[fi]
        if fam.prefixes and not strong and not _stands_alone(fam, typed):
            continue  # "Xeon E5-1650": "1650" is no Xeon D-1650 without its "D-"
        if brands:
            if _branded(fam, brands) or (strong and brands <= fam.words):  # "AMD A8-7600": its prefix said
                out.append((fi, model))
        elif strong or (_stands_alone(fam, typed) and not _gpu_number(typed, gpu_keys)):
            out.append((fi, model))
    return out


def _rule_candidates(t: CpuTable, toks: list[tuple[str, int, int]], i: int,
                     brands: frozenset[str]) -> tuple[list[tuple[int, str, bool]], bool]:
    """The family whose numbering rule reads token i, among those the context allows: its
    prefix typed before it (or glued: "i913900k"), its brand words, or a number that stands alone.
    Also says whether the prefix is the token before (then the name starts there)."""
    tok = toks[i][0]
    prev = toks[i - 1][0] if i and toks[i - 1][0] in t.prefixes else ""
    forms = [(prev, tok)]
    if tok[0] in t.prefix_starts:
        forms += [(p, tok[len(p):]) for p in t.prefixes if tok.startswith(p) and tok[len(p):len(p) + 1].isdigit()]
    for prefix, number in forms:
        allowed = tuple(
            fi for fi in t.rule_families
            if (prefix and prefix in t.families[fi].prefixes)
            or (brands and _branded(t.families[fi], brands))
            or (not brands and _stands_alone(t.families[fi], number))
        )
        rm = _rules(t, allowed).fullmatch(number) if allowed else None
        if rm:
            fi = int(rm.lastgroup[1:])
            strong = bool(prefix) and prefix in t.families[fi].prefixes
            shown = (prefix.upper() if len(prefix) == 1 else prefix) + "-" if strong else ""
            return [(fi, shown + number.upper(), strong)], prefix == prev and strong
    return [], False


def find_cpus(cat: Catalog, folded: str, gpu_keys, limit: int) -> list[CpuHit]:
    """Every CPU model number of the data in ``folded[:limit]``, in order."""
    t = cpu_table(cat)
    toks = [(m.group(0), m.start(), m.end()) for m in TOKEN_RE.finditer(folded, 0, limit)]
    hits: list[CpuHit] = []
    i = 0
    while i < len(toks):
        tok = toks[i][0]
        if i and toks[i - 1][0] in _GPU_WORDS:  # "Quadro M5000", "RTX 6000": part of a GPU's name
            i += 1
            continue
        n_used, cands = 0, []
        if tok in t.data.firsts:
            key = ""
            for n in range(min(t.data.max_tokens, len(toks) - i)):
                key += toks[i + n][0]
                if key in t.data.keys:
                    n_used, cands = n + 1, list(t.data.keys[key])
        start, end = toks[i][1], toks[i + max(n_used, 1) - 1][2]
        typed = folded[start:end]
        brands, named_at = _brands(t, toks, i - 1 if i and toks[i - 1][0] in t.prefixes else i)
        chosen = _choose(t, cands, brands, typed.replace(" ", ""), gpu_keys) if cands else []
        if not chosen and len(tok) >= 3 and not tok.isalpha() and (tok[0].isdigit() or tok[0] in t.prefix_starts) and (
            brands or not tok.isdigit() or (i and toks[i - 1][0] in t.prefixes)  # a plain number needs a name
        ) and not (not brands and i and toks[i - 1][0] in t.other_prefixes):  # "A10-9999K" is no Core 9999K
            rule, prefix_before = _rule_candidates(t, toks, i, brands)
            if rule:
                n_used = 1
                if prefix_before:  # the prefix typed before it ("i9 13900k"): part of the name
                    start, typed = toks[i - 1][1], folded[toks[i - 1][1]:toks[i][2]]
                    brands, named_at = _brands(t, toks, i - 1)
                end = toks[i][2]
                chosen = _choose(t, rule, brands, tok, gpu_keys)
        if chosen and typed.replace(" ", "").isdigit() and (
            _decimal(folded, start, end) or _quantity(folded, toks, i, max(n_used, 1), brands)
        ):
            chosen = []
        if chosen:
            said = folded[named_at:start].split() if brands and named_at >= 0 else []
            parts = tuple(dict.fromkeys(
                Part(t.families[fi], _display(t.families[fi], model, said)) for fi, model in chosen
            ))
            hits.append(CpuHit(named_at if chosen and brands and named_at >= 0 else start, end, typed, parts))
            i += max(n_used, 1)
        else:
            i += 1
    return hits
