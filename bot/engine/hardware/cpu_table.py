"""CPU model numbers read as tokens: the families of ``config/data/cpu_models`` become one dict
from normalised model number ("8480+", "w93495x", "e2388g") to its candidate parts, and a few
token rules for regular numbering ("13900k": 13th gen Core). Thousands of numbers cost one dict
lookup per token, not one giant regular expression per process.

A number is read with the brand words before it ("Xeon Gold 6248", "Ryzen 9 7945HX"): only the
families of that brand count. Without one, a family reads it only when its numbers stand alone
(``bare``); a number several vendors' parts share ("7900X") gives every candidate, and the
caller asks which. Listed numbers come before rules. Pure; may import config."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from config.catalog import Catalog
from config.cpu_models import CpuFamily, load_cpu_models
from config.errors import CatalogError

TOKEN_RE = re.compile(r"[a-z0-9]+\+?")
_PREFIXED_RE = re.compile(r"([a-z]+\d?)-(.+)")  # "w9-3495x", "e-2388g", "i3-n305"; not "6975p-c"
LOOKBACK = 5  # tokens searched for brand words before a number
_SKIPPED = frozenset({"cpu", "processor", "pro", "r", "tm", "extreme"})  # between a brand and its number


@dataclass(frozen=True)
class Part:
    family: CpuFamily
    display: str  # "Intel Xeon Platinum 8480+ (4th gen Xeon Scalable, Sapphire Rapids)"


@dataclass(frozen=True)
class CpuHit:
    start: int  # character span in the folded text
    end: int
    typed: str  # the number as typed ("7900x")
    parts: tuple[Part, ...]  # one: the CPU; several: the candidates to ask about


@dataclass(frozen=True)
class CpuTable:
    keys: dict[str, tuple[tuple[int, str, bool], ...]]  # joined tokens -> (family, model, prefix included)
    firsts: frozenset[str]  # tokens a key can begin with
    max_tokens: int
    any_rule: re.Pattern | None  # every `number` rule at once (a quick pre-check)
    rules: tuple[tuple[int, re.Pattern], ...]
    prefixes: frozenset[str]  # tokens that stand before a rule's number ("i9")
    prefix_starts: frozenset[str]  # their first letters: tokens a glued "i913900k" can begin with
    brand_words: frozenset[str]
    families: tuple[CpuFamily, ...]


@lru_cache(maxsize=8)
def cpu_table(cat: Catalog) -> CpuTable:
    data = load_cpu_models(cat.data_dir)
    keys: dict[str, list[tuple[int, str, bool]]] = {}
    firsts: set[str] = set()
    max_tokens = 1
    rules = []
    for i, fam in enumerate(data.families):
        if fam.uarch not in cat.uarchs:
            raise CatalogError(
                f"CPU model family '{fam.name} ({fam.generation})' in {fam.source} names unknown microarchitecture '{fam.uarch}'."
            )
        if fam.number:
            rules.append((i, re.compile(fam.number)))
        for model in fam.models:
            low = model.lower()
            tokens = TOKEN_RE.findall(low)
            pm = _PREFIXED_RE.fullmatch(low)
            forms = [(tokens, pm is not None)]
            if pm:
                forms.append((TOKEN_RE.findall(pm.group(2)), False))
            for toks, strong in forms:
                keys.setdefault("".join(toks), []).append((i, model, strong))
                firsts.add(toks[0])
                max_tokens = max(max_tokens, len(toks))
    any_rule = re.compile("|".join(f"(?:{f.number})" for f in data.families if f.number)) if rules else None
    return CpuTable(
        {k: tuple(v) for k, v in keys.items()}, frozenset(firsts), max_tokens, any_rule, tuple(rules),
        frozenset(p for f in data.families for p in f.prefixes),
        frozenset(p[0] for f in data.families for p in f.prefixes),
        frozenset(w for f in data.families for w in f.words), data.families,
    )


def _display(fam: CpuFamily, model: str) -> str:
    return f"{fam.name} {model} ({fam.generation})"


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
    return fam.bare == "all" or (fam.bare == "suffixed" and not typed.isdigit())


def _decimal(folded: str, start: int, end: int) -> bool:
    """A number inside a decimal ("4800.00", "3.9654"): never a model number."""
    return (end + 1 < len(folded) and folded[end] == "." and folded[end + 1].isdigit()) or (
        start >= 2 and folded[start - 1] == "." and folded[start - 2].isdigit()
    )


def _choose(t: CpuTable, cands: list[tuple[int, str, bool]], brands: frozenset[str], typed: str, gpu_keys) -> list[tuple[int, str]]:
    """The candidates the context allows: with the prefix typed or brand words, those of that
    brand; alone, those whose numbers stand alone (never a GPU's number: "4090s")."""
    out = []
    for fi, model, strong in cands:
        fam = t.families[fi]
        if brands:
            if brands <= fam.words:
                out.append((fi, model))
        elif strong or (_stands_alone(fam, typed) and typed not in gpu_keys and typed[:-1] not in gpu_keys):
            out.append((fi, model))
    return out


def _rule_candidates(t: CpuTable, toks: list[tuple[str, int, int]], i: int) -> list[tuple[int, str, bool]]:
    tok = toks[i][0]
    prev = toks[i - 1][0] if i else ""
    number, strong = tok, prev in t.prefixes
    if t.any_rule is None:
        return []
    if not t.any_rule.fullmatch(number):
        glued = next((p for p in t.prefixes if tok.startswith(p) and len(tok) > len(p) + 2), None)
        if glued is None or not t.any_rule.fullmatch(tok[len(glued):]):
            return []
        prev, number, strong = glued, tok[len(glued):], True
    out = []
    for fi, rx in t.rules:
        fam = t.families[fi]
        if rx.fullmatch(number):
            s = strong and prev in fam.prefixes
            shown = (prev.upper() if len(prev) == 1 else prev) + "-" if s else ""
            out.append((fi, shown + number.upper(), s))
    return out


def find_cpus(cat: Catalog, folded: str, gpu_keys, limit: int) -> list[CpuHit]:
    """Every CPU model number of the data in ``folded[:limit]``, in order."""
    t = cpu_table(cat)
    toks = [(m.group(0), m.start(), m.end()) for m in TOKEN_RE.finditer(folded, 0, limit)]
    hits: list[CpuHit] = []
    i = 0
    while i < len(toks):
        tok = toks[i][0]
        n_used, cands = 0, []
        if tok in t.firsts:
            key = ""
            for n in range(min(t.max_tokens, len(toks) - i)):
                key += toks[i + n][0]
                if key in t.keys:
                    n_used, cands = n + 1, list(t.keys[key])
        start, end = toks[i][1], toks[i + max(n_used, 1) - 1][2]
        typed = folded[start:end]
        brands, named_at = _brands(t, toks, i - 1 if i and toks[i - 1][0] in t.prefixes else i)
        chosen = _choose(t, cands, brands, typed.replace(" ", ""), gpu_keys) if cands else []
        if not chosen and len(tok) >= 3 and (tok[0].isdigit() or tok[0] in t.prefix_starts):
            rule = _rule_candidates(t, toks, i)
            if rule:
                n_used = 1
                if rule[0][2]:  # the prefix typed before it ("i9 13900k"): part of the name
                    start, typed = toks[i - 1][1], folded[toks[i - 1][1]:toks[i][2]]
                    brands, named_at = _brands(t, toks, i - 1)
                end = toks[i][2]
                chosen = _choose(t, rule, brands, tok, gpu_keys)
        if chosen and typed.replace(" ", "").isdigit() and _decimal(folded, start, end):
            chosen = []
        if chosen:
            parts = tuple(dict.fromkeys(Part(t.families[fi], _display(t.families[fi], model)) for fi, model in chosen))
            hits.append(CpuHit(named_at if chosen and brands and named_at >= 0 else start, end, typed, parts))
            i += max(n_used, 1)
        else:
            i += 1
    return hits
