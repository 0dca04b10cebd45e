"""The CPU of a question: a model named in free text (or the CPU of a named instance or system),
pasted flags (``cpuinfo``), ARM's CPU part, flags stated in prose ("it has AVX-512", "no avx512"),
and CPU-like names the catalog does not know (kept, so the answer asks). Pure; may import config."""

from __future__ import annotations

from bot.engine.hardware import cpuinfo
from bot.engine.hardware.cpu_table import find_cpus
from bot.engine.hardware.facts import SCAN, Hardware, fold
from bot.engine.hardware.matchers import Matchers
from config.catalog import Catalog
from config.cpu_models import load_cpu_models
from config.regex_cache import rx

_ARM_WORD_RE = rx(r"(?<![a-z0-9])(?:aarch64|arm64|armv[89](?:\.\d)?(?: ?a)?|arm)(?![a-z0-9])")
# A CPU-like model number torchbot does not know: Core ("i7 13700k"), AMD A-series ("AMD A10-9990",
# "A10-9999K": an APU, never an A10 GPU), a number with a desktop or mobile suffix ("9999K").
CPU_LIKE_RE = rx(
    r"(?<![a-z0-9])(?:i[3579] ?\d{4,5}[a-z]{0,3}\d?[a-z]?"
    r"|amd a(?:4|6|8|9|10|12) [3-9]\d{3}[a-z]{0,2}|a(?:4|6|8|9|10|12) [3-9]\d{3}(?:k|m|mx|p|b|e|t|c)"
    r"|\d{4,5}(?:k|kf|ks|x3d|hx|hs|hk|xe))(?![a-z0-9])"
)
# Flags stated in prose ("it has AVX-512", "no avx512", "avx512 is masked"): canonical flag names.
_STATED_RE = rx(
    r"(?P<neg>\b(?:no|not|without|lacks?|lacking|missing)\s+(?:the\s+)?)?"
    r"(?<![a-z0-9])(?P<flag>avx ?512 ?_?bf16|avx ?512 ?_?vnni|avx ?512 ?f|avx ?512|avx ?_?vnni|avx ?2|avx"
    r"|sve ?2|sve|fma|f16c|asimddp|dotprod)(?![a-z0-9])"
    r"(?P<post>\s+(?:is\s+|are\s+)?(?:disabled|masked|hidden|unavailable|not\s+(?:available|exposed|supported|enabled)))?"
)
# Flags that tell microarchitectures apart beyond the named ones (Xeon Phi's avx512er).
_TELLING_SUBSETS = frozenset({"amx_int8", "avx512bw", "avx512dq", "avx512vl", "avx512er", "avx512pf"})
_STATED_CANON = {
    "avx512bf16": "avx512_bf16",
    "avx512vnni": "avx512_vnni",
    "avx512f": "avx512f",
    "avx512": "avx512",
    "avxvnni": "avx_vnni",
    "avx2": "avx2",
    "avx": "avx",
    "sve2": "sve2",
    "sve": "sve",
    "fma": "fma",
    "f16c": "f16c",
    "asimddp": "asimddp",
    "dotprod": "asimddp",
}


def read_cpu(cat: Catalog, m: Matchers, hw: Hardware, low: str, folded: str, prose: str, inst_cpu: str | None) -> None:
    # Pasted flags (lscpu "Flags:", /proc/cpuinfo "flags"/"Features") are the machine's own word.
    pasted = cpuinfo.pasted_flags(low)
    hw.cpu_arch = cpuinfo.pasted_arch(low) or hw.cpu_arch
    cpu_name = inst_cpu or hw.system_cpu
    uarch_key, matched, shared = _named_model(cat, m, hw, fold(cpu_name) if cpu_name else folded[:SCAN])
    if matched is not None and cpu_name:
        matched = None  # the instance's or system's CPU, not a span of the question
    if uarch_key is None:
        part = cpuinfo.arm_part(low)
        if part in cat.arm_parts:
            uarch_key = cat.arm_parts[part]
            hw.cpu = cat.uarchs[uarch_key].name
    if uarch_key is None and shared is None and pasted:
        _named_from_flags(cat, hw, low, pasted)
    _set_flags(cat, m, hw, low, uarch_key, pasted, shared)
    if uarch_key is None and shared is None and not pasted and not cpu_name:
        _unknown_cpu(cat, m, hw, folded)
    elif matched is not None and m.brands is not None:
        # A second, unknown CPU next to a known one ("Xeon 9999 or EPYC 9654?") is still said.
        for bm in m.brands.finditer(folded, 0, SCAN):
            overlaps = bm.start() < matched[1] and matched[0] < bm.end()
            if bm.group("model") and not overlaps and not _known(cat, m, bm.group(0)):
                hw.unknown_cpu.append(bm.group(0))
    _stated_flags(cat, hw, prose)


def _named_model(cat: Catalog, m: Matchers, hw: Hardware, text: str):
    """The first CPU named in ``text``, by model number (the tables) or by name (the patterns):
    (microarchitecture key, span, None); for a number several vendors' parts share, (None, span,
    the flags every candidate has) with the candidates in ``hw.cpu_candidates``."""
    cm = m.cpu.search(text) if m.cpu is not None else None
    hits = find_cpus(cat, text, m.gpu, SCAN)
    hit = hits[0] if hits else None
    if hit is not None and (cm is None or hit.start < cm.start()):  # a tie: the pattern is the more specific
        uarchs = {p.family.uarch for p in hit.parts}
        if len(uarchs) == 1:
            hw.cpu = hit.parts[0].display
            return hit.parts[0].family.uarch, (hit.start, hit.end), None
        hw.cpu = " or ".join(p.display for p in hit.parts)
        hw.cpu_candidates = [p.display for p in hit.parts]
        hw.cpu_ambiguous = hit.typed.upper()
        archs = {cat.uarchs[u].arch for u in uarchs}
        if len(archs) == 1:
            hw.cpu_arch = hw.cpu_arch or archs.pop()
        return None, (hit.start, hit.end), frozenset.intersection(*(cat.uarchs[u].flags for u in uarchs))
    if not cm:
        return None, None, None
    model = cat.cpu_models[int(cm.lastgroup[1:])]
    hw.cpu = model.name
    return model.uarch, cm.span(), None


def _known(cat: Catalog, m: Matchers, text: str) -> bool:
    return bool((m.cpu is not None and m.cpu.search(text)) or find_cpus(cat, text, m.gpu, len(text)))


def _named_from_flags(cat: Catalog, hw: Hardware, low: str, pasted: set[str]) -> None:
    """No model number: name the CPU from its pasted flags as a range, "a CPU with AMX and
    AVX-512 BF16 (Sapphire Rapids or newer)", never as one generation (a cloud VM's "Intel(R)
    Xeon(R) Processor" may be any generation with those instructions). The flags decide the build."""
    vendor = cpuinfo.vendor(low)
    if vendor is None or "avx" not in pasted:
        return
    named = _flag_range(cat, vendor, pasted)
    if named is None:
        return
    model = cpuinfo.model_line(low)
    hw.cpu = named
    hw.notes.append(
        f"The CPU's model string{f' ({model!r})' if model else ''} names no model number; from its flags it is {named}."
    )


def _flag_range(cat: Catalog, vendor: str, pasted: set[str]) -> str | None:
    """ "a CPU with <the most telling instructions> (<the oldest microarchitecture with them> or newer)"."""
    telling = load_cpu_models(cat.data_dir).telling
    chosen, said = [], set()
    for t in telling:
        if t.flag in pasted and t.flag not in said:
            chosen.append(t)
            said |= _closure(cat, {t.flag, *t.implies})
            if len(chosen) == 2:
                break
    if not chosen:
        return None
    need = {t.flag for t in chosen}
    # Every instruction a microarchitecture has among these, the CPU must report too.
    checked = {t.flag for t in telling} | _TELLING_SUBSETS
    oldest = next(
        (u for u in cat.uarchs.values()  # in the data's order: oldest first per vendor
         if u.vendor == vendor and u.arch == "x86_64" and need <= u.flags and (u.flags & checked) <= pasted),
        None,
    )
    words = " and ".join(t.words for t in chosen)
    return f"a CPU with {words}" + (f" ({oldest.name.split(' (')[0]} or newer)" if oldest else "")


def _set_flags(cat: Catalog, m: Matchers, hw: Hardware, low: str, uarch_key: str | None, pasted: set[str],
               shared: frozenset[str] | None = None) -> None:
    """The flags that decide the build: pasted ones first, else the model's (for a number
    several parts share, the flags all of them have)."""
    if uarch_key is not None:
        u = cat.uarchs[uarch_key]
        hw.cpu_uarch = uarch_key
        hw.cpu_arch = hw.cpu_arch or u.arch
    if pasted:
        hw.cpu_flags = frozenset(f for f in pasted if f in m.relevant_flags)
        hw.flags_source = "pasted"
        if hw.cpu_arch is None:
            hw.cpu_arch = "aarch64" if ("asimd" in pasted or "fphp" in pasted) else "x86_64"
    elif uarch_key is not None:
        hw.cpu_flags = cat.uarchs[uarch_key].flags
        hw.flags_source = "model"
    elif shared is not None:
        hw.cpu_flags = shared
        hw.flags_source = "model"
    elif hw.cpu_arch is None and cpuinfo.arm_vendor(low):
        hw.cpu_arch = "aarch64"


def _stated_flags(cat: Catalog, hw: Hardware, prose: str) -> None:
    """Flags said in words: used when nothing else says. A known model's flags are never added
    to from words, but a flag the question denies is taken away (a hypervisor or the firmware
    can hide AVX-512 from a VM), and said."""
    stated: set[str] = set()
    denied: set[str] = set()
    for sm in _STATED_RE.finditer(prose):
        flag = _STATED_CANON.get(sm.group("flag").replace(" ", "").replace("_", ""))
        if flag is None:
            continue
        (denied if sm.group("neg") or sm.group("post") else stated).add(flag)
    if not (stated or denied):
        return
    absent = _absent(cat, denied)
    claimed = _closure(cat, stated - denied) - absent
    hw.stated_flags = claimed | (stated & {"avx512"})
    hw.denied_flags = absent
    if hw.cpu_flags is None:
        if claimed:
            hw.cpu_flags = claimed
            hw.flags_source = "stated"
            if hw.cpu_arch is None:
                hw.cpu_arch = "aarch64" if ({"sve", "sve2", "asimddp"} & claimed) else "x86_64"
            hw.unknown_cpu.clear()  # the flags say what matters
    elif hw.flags_source == "model":
        said = {"avx512f" if f == "avx512" else f for f in stated - denied}
        missing = sorted(f for f in said if f not in hw.cpu_flags)
        if missing:
            hw.notes.append(
                f"The question says the CPU has {', '.join(missing)}, but {hw.cpu} does not implement "
                f"{'it' if len(missing) == 1 else 'them'}; this answer follows the hardware."
            )
        hidden = hw.cpu_flags & absent
        if hidden:
            hw.cpu_flags = hw.cpu_flags - absent
            names = ", ".join(sorted(denied))
            hw.notes.append(
                f"The question says the CPU has no {names}; {hw.cpu} implements "
                f"{'it' if len(denied) == 1 else 'them'}, but a hypervisor or the firmware can hide "
                f"{'it' if len(denied) == 1 else 'them'}, so this answer does not count on {', '.join(sorted(hidden))}."
            )


def _absent(cat: Catalog, denied: set[str]) -> frozenset[str]:
    """The flags a CPU cannot have when it lacks ``denied``: those and every flag that needs one
    of them ("no avx512": every AVX-512 subset and extension; "no avx": AVX2, FMA, AVX-512 too)."""
    if not denied:
        return frozenset()
    base = {"avx512f" if d == "avx512" else d for d in denied}
    return frozenset(f for f in cat.relevant_flags | base if f in base or _closure(cat, {f}) & base)


def _closure(cat: Catalog, flags: set[str]) -> frozenset[str]:
    out = set(flags)
    todo = list(flags)
    while todo:
        f = todo.pop()
        for g in cat.implies.get(f, ()):
            if g not in out:
                out.add(g)
                todo.append(g)
    out.discard("avx512")  # a word, not a cpuinfo flag
    return frozenset(out)


def _unknown_cpu(cat: Catalog, m: Matchers, hw: Hardware, folded: str) -> None:
    """No CPU model recognised: a brand with a model number torchbot does not know is kept (and
    its architecture taken from the brand); ARM words make the answer ARM, never x86."""
    if m.brands is not None:
        for bm in m.brands.finditer(folded, 0, SCAN):
            arch = cat.cpu_brands.get(bm.group("brand"))
            if arch and hw.cpu_arch is None:
                hw.cpu_arch = arch
            if bm.group("model") and bm.group(0) not in hw.unknown_cpu:
                hw.unknown_cpu.append(bm.group(0))
    for cm in CPU_LIKE_RE.finditer(folded, 0, SCAN):
        if cm.group(0) not in hw.unknown_cpu:
            hw.unknown_cpu.append(cm.group(0))
            hw.cpu_arch = hw.cpu_arch or "x86_64"
    if hw.cpu_arch is None and _ARM_WORD_RE.search(folded, 0, SCAN):
        hw.cpu_arch = "aarch64"
