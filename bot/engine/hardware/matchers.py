"""Model-name matchers compiled once per catalog: GPU and system names as token n-gram tables
(linear in the input, plurals read as singulars), one alternation for every CPU model pattern,
cloud instances and families, CPU brand words. Pure; may import config."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from bot.engine.hardware.facts import bounded
from config.catalog import Catalog
from config.catalog_data import check_patterns
from config.regex_cache import rx


@dataclass(frozen=True)
class Matchers:
    """The catalog's model names as lookup tables and patterns, compiled once per catalog."""

    gpu: dict[str, str]  # joined lower-case tokens ("rtx3080ti") -> model name
    system: dict[str, str]  # joined tokens -> system name
    starts: frozenset[str]  # prefixes of the keys: tokens an n-gram that matches can start with
    max_tokens: int
    foreign: re.Pattern | None
    cpu: re.Pattern | None  # every CPU model pattern, group "c<index into catalog.cpu_models>"
    instance_source: str | None  # compiled on first use: most questions name no instance
    instance_idx: tuple[int, ...]
    families: dict[str, tuple[int, bool]]  # bare family -> (instance index, needs the provider named)
    providers: dict[str, re.Pattern]
    brands: re.Pattern | None  # CPU brand words (group "brand") with an optional model number
    relevant_flags: frozenset[str]


_TOKEN_RE = rx(r"[a-z0-9]+")
_SPAN_RE = rx(r"[a-z0-9]+|[\u00a6\u00b6]")  # words, and the barriers no name is read across
_COUNT_PREFIX_RE = rx(r"(\d{1,2})x([a-z].*)")  # "8xh100"


def _name_keys(name: str) -> list[str]:
    """Lookup keys of a product name: its tokens joined ("rtx 3080 ti" -> "rtx3080ti");
    GeForce names also without the "rtx"/"gtx" prefix ("4090" names the card here)."""
    tokens = _TOKEN_RE.findall(name.lower())
    keys = ["".join(tokens)]
    if len(tokens) >= 2 and tokens[0] in ("rtx", "gtx") and tokens[1].isdigit():
        keys.append("".join(tokens[1:]))
    return keys


def token_spans(folded: str) -> list[tuple[str, int, int]]:
    """(token, start, end) of the folded text; "8xh100" is split into "8x" and "h100"; a cell or
    line barrier is a token of its own (no key contains it, so no n-gram spans it)."""
    out = []
    for tm in _SPAN_RE.finditer(folded):
        tok, start = tm.group(0), tm.start()
        cm = _COUNT_PREFIX_RE.fullmatch(tok) if "x" in tok else None
        if cm:
            cut = start + len(cm.group(1)) + 1
            out.append((tok[: cut - start], start, cut))
            out.append((cm.group(2), cut, tm.end()))
        else:
            out.append((tok, start, tm.end()))
    return out


def lookup(table: dict[str, str], spans: list[tuple[str, int, int]], m: Matchers):
    """Longest-first scan of token n-grams against a key table: linear in the input. A plural
    ("4090s", "L40Ss", "A6000s") is read as its singular when the singular is a model name.
    Yields (value, start, end) character spans."""
    i, n_spans = 0, len(spans)
    starts = m.starts
    while i < n_spans:
        first = spans[i][0]
        if first not in starts and not (first[-1] == "s" and first[:-1] in starts):
            i += 1
            continue
        best = None
        key = ""
        for n in range(min(m.max_tokens, n_spans - i)):
            key += spans[i + n][0]
            hit = table.get(key)
            if hit is None and len(key) > 2 and key[-1] == "s" and (len(key) >= 5 or any(c.isdigit() for c in key)):
                hit = table.get(key[:-1])
            if hit is not None:
                best = (hit, n + 1)
            if key not in starts:  # no key begins with these spans: longer n-grams cannot match
                break
        if best is not None:
            yield best[0], spans[i][1], spans[i + best[1] - 1][2]
            i += best[1]
        else:
            i += 1


def _compile(source: str, kind: str, parts: list[str]) -> re.Pattern:
    try:
        return rx(source)
    except re.error:
        check_patterns(kind, parts)  # names the bad one
        raise


@lru_cache(maxsize=8)
def instance_re(cat: Catalog) -> re.Pattern:
    return _compile(matchers(cat).instance_source, "Instance", [x.pattern for x in cat.instances])


@lru_cache(maxsize=8)
def matchers(cat: Catalog) -> Matchers:
    gpu: dict[str, str] = {}
    for n in cat.gpu_models:
        for k in _name_keys(n):
            gpu.setdefault(k, n)
    system = {k: n for n in cat.systems for k in _name_keys(n)[:1]}
    max_tokens = max(len(_TOKEN_RE.findall(n.lower())) for n in [*cat.gpu_models, *cat.systems])
    # An n-gram can only match when its first token begins a key ("rtx" or "rtx4090" for "rtx4090").
    starts = {k[:i] for k in [*gpu, *system] for i in range(1, len(k) + 1)}
    foreign = (
        rx(bounded("|".join(f"(?:{p})" for p in cat.foreign_patterns))) if cat.foreign_patterns else None
    )
    # One search for every CPU model: the first named wins; at one position, the first in the data.
    cpu = (
        _compile(bounded("|".join(f"(?P<c{i}>{m.pattern})" for i, m in enumerate(cat.cpu_models))), "CPU model",
                 [m.pattern for m in cat.cpu_models])
        if cat.cpu_models
        else None
    )
    inst = list(enumerate(cat.instances))
    instance = (
        # one boundary around the alternation: far faster than one per alternative
        r"(?<![a-z0-9.\-_])(?:"
        + "|".join(rf"(?P<i{n}>{x.pattern})" for n, (_, x) in enumerate(inst))
        + r")(?![a-z0-9])"
        if inst
        else None
    )
    taken = set(gpu) | set(system)
    families: dict[str, tuple[int, bool]] = {}
    for i, x in inst:
        for fam in x.families:
            key = fam.lower().replace("-", "")
            families.setdefault(key, (i, len(key) < 3 or key in taken))
    providers = {
        name: rx(bounded("|".join(re.escape(w) for w in words))) for name, words in cat.providers.items()
    }
    brand_words = sorted(cat.cpu_brands, key=len, reverse=True)
    brands = (
        rx(
            bounded(
                "(?P<brand>" + "|".join(re.escape(w) for w in brand_words) + ")"
                r"(?P<model>(?: (?:platinum|gold|silver|bronze|max|pro|ai|w|e[357]|v|n))*"
                r" ?[a-z]{0,2}\d[0-9a-z+]*)?"
            )
        )
        if brand_words
        else None
    )
    return Matchers(
        gpu,
        system,
        frozenset(starts),
        max_tokens,
        foreign,
        cpu,
        instance,
        tuple(i for i, _ in inst),
        families,
        providers,
        brands,
        cat.relevant_flags,
    )


# ---------------------------------------------------------------------------------------
