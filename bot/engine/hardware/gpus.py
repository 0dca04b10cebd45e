"""GPUs named in free text: catalog models and systems (with plurals and counts: "8x H100",
"a pair of 3090s"), non-NVIDIA accelerators, a compute capability or SM number, GPU-like names
the catalog does not know (kept, so the answer asks), and a GPU mentioned without a name.
Pure; may import config."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.engine.hardware import nvidia_smi
from bot.engine.hardware.cpu_table import find_cpus
from bot.engine.hardware.cpus import CPU_LIKE_RE
from bot.engine.hardware.facts import CELL, LINE, SCAN, GpuSeen, Hardware, fold
from bot.engine.hardware.matchers import Matchers, lookup, token_spans
from config.catalog import Catalog
from config.regex_cache import rx

_SM_RE = rx(r"(?<![a-z0-9])sm ?(\d{2,3})(?![0-9])")
_CC_RE = rx(r"(?:compute capability|compute cap|capability|\bcc)\s*(?:is|of|=|:)?\s*(\d{1,2})\.(\d)(?![\d.])")
_BARE_CC_RE = rx(r"(?<![\w.])(\d{1,2})\.(\d)(?![\w.])")
_VERSIONISH_BEFORE = rx(
    r"(?:python|py|cuda|torch|pytorch|vllm|driver|cudnn|version|macos|ubuntu|v|nvcc|release)\s*[:=v]?\s*$"
)
# GPU counts next to a model name: "8x H100", "8 x H100", "H100 x8", "a pair of 3090s", "dual 4090".
_COUNT_WORDS = {
    "one": 1, "single": 1, "two": 2, "dual": 2, "twin": 2, "pair of": 2, "couple of": 2, "three": 3, "four": 4,
    "quad": 4, "five": 5, "six": 6, "eight": 8, "ten": 10, "twelve": 12, "sixteen": 16,
}
_COUNT_BEFORE_RE = rx(
    r"(?:(?<![\d.])(?P<n>\d{1,2}) ?(?P<x>x|way)? ?|(?<![a-z])(?P<w>"
    + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True))
    + r") )(?:nvidia |geforce |tesla |quadro |rtx |gtx )*$"
)
_COUNT_AFTER_RE = rx(r"s? ?x ?(\d{1,2})(?![0-9_])")
# Names that look like hardware: reported when the catalog does not know them.
_GPU_LIKE_RE = rx(
    r"(?<![a-z0-9])(?:"
    r"(?:geforce |nvidia |quadro |tesla |titan )*(?:rtx|gtx|gt) ?(?:a|pro )?\d{3,4}(?: ?(?:ti|super|ada))*"
    r"|(?:nvidia|tesla|quadro) [a-z]{1,2} ?\d{2,4}[a-z]{0,3}"
    r"|(?!h26[45])[abh]\d{3}[a-z]{0,2}"
    r"|[abhlt]\d[\do]*o[\do]*[a-z]?"  # "A1OO": a letter O for a zero
    r"|g[bh]\d{2,3}"
    r")s?(?![a-z0-9])"
)
_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "l": "1", "i": "1"})
# "a GPU", "XYZ9000 gpus", "graphics card": a GPU the question mentions without naming one torchbot knows
_GPU_WORD_RE = rx(
    r"(?<![a-z0-9])(?:([a-z0-9][a-z0-9-]{1,15}) )?(?:gpus?|graphics cards?|video cards?)(?![a-z0-9])"
)
_COUNT_RE = rx(r"\d+x?|x\d+|[a-z]+")  # "8x gpus", "4 gpus", "nvidia gpu": no model number
LINE_MARK = LINE.strip()
_UNIT_AFTER_RE = rx(r" ?(?:[kmgt]i?b|[kmg]hz|w|watts?|rpm)(?![a-z0-9])")


@dataclass
class _Named:
    """GPU names found so far, in the order named, with their counts and text spans."""

    order: list[str] = field(default_factory=list)
    counts: dict[str, int | None] = field(default_factory=dict)
    arch_of: dict[str, str] = field(default_factory=dict)
    spans: list[tuple[int, int]] = field(default_factory=list)
    system_cpu: str | None = None
    system_note: str = ""
    cpu_spans: list[tuple[int, int]] | None = None  # CPU model strings of the text, found when needed


def gpu_text(lines: list[str]) -> str:
    """The free text GPU names are read from: the question's lines (pasted nvidia-smi and lscpu
    output already blanked), folded, with every table cell and line kept apart by a barrier
    (``CELL``, ``LINE``) that no name is read across."""
    return fold(LINE.join(lines).replace("|", CELL))


def read_gpus(cat: Catalog, m: Matchers, hw: Hardware, text: str, rows: list[nvidia_smi.NameCell],
              inst_gpu: str | None) -> None:
    """GPUs from the rows of pasted nvidia-smi output (one per row) and from the free ``text``
    (``gpu_text``), in the order they come."""
    named = _Named(arch_of=dict(cat.gpu_models))
    if inst_gpu:
        named.order, named.counts = [inst_gpu], {inst_gpu: None}
    else:
        _merge(named, _from_rows(cat, m, hw, named, rows), _models_in_text(cat, m, named, text))
    _record(hw, named)
    _foreign(m, hw, named, text)
    if hw.gpu_arch is None and hw.gpu_foreign is None:
        _arch_by_number(cat, hw, text)
    hw.system_cpu = named.system_cpu
    if named.system_note and named.system_note not in hw.notes:
        hw.notes.append(named.system_note)
    if not inst_gpu:
        _unknown_like(cat, m, hw, named, text)


def _from_rows(cat: Catalog, m: Matchers, hw: Hardware, named: _Named,
               rows: list[nvidia_smi.NameCell]) -> list[tuple[int, str]]:
    """One GPU per nvidia-smi row: (line, name) of each row a known GPU fills; names the catalog
    does not know are kept, so the answer asks about them."""
    out: list[tuple[int, str]] = []
    for row in rows:
        gpu = nvidia_smi.resolve(cat, m, row)
        if gpu is None:
            continue
        if gpu.note and gpu.note not in hw.notes:
            hw.notes.append(gpu.note)
        if gpu.arch is None:
            if gpu.name not in hw.unknown_gpu:
                hw.unknown_gpu.append(gpu.name)
            continue
        named.arch_of.setdefault(gpu.name, gpu.arch)
        if gpu.system and named.system_cpu is None:
            named.system_cpu = cat.systems[gpu.system][1]
        out.append((row.line, gpu.name))
    return out


def _merge(named: _Named, rows: list[tuple[int, str]], said: list[tuple[int, str, int | None]]) -> None:
    """Rows and names said in words, in the order they come (by line). A name with nvidia-smi
    rows is counted by its rows (the machine's own word); else by the count said next to it, or
    by how often it is named."""
    per_row: dict[str, int] = {}
    for _, name in rows:
        per_row[name] = per_row.get(name, 0) + 1
    occurrences: dict[str, int] = {}
    explicit: dict[str, int] = {}
    for _, name, n in said:
        occurrences[name] = occurrences.get(name, 0) + 1
        if n is not None:
            explicit[name] = explicit.get(name, 0) + n
    events = sorted([(line, 1, k, name) for k, (line, name) in enumerate(rows)]
                    + [(line, 0, k, name) for k, (line, name, _) in enumerate(said)])
    for *_, name in events:
        if name not in named.order:
            named.order.append(name)
    for name in named.order:
        if name in per_row:
            named.counts[name] = per_row[name] if per_row[name] > 1 else None
        else:
            seen = occurrences.get(name, 0)
            named.counts[name] = explicit.get(name) or (seen if seen > 1 else None)


def _models_in_text(cat: Catalog, m: Matchers, named: _Named, text: str) -> list[tuple[int, str, int | None]]:
    """Systems (the first one) and GPU models named in words: (line, name, count said next to
    it). A number inside a CPU's model string ("Xeon E5-1650 v4") names no GPU."""
    spans = token_spans(text)
    out: list[tuple[int, str, int | None]] = []
    for sysname, s, e in lookup(m.system, spans, m):
        gname, named.system_cpu = cat.systems[sysname]
        named.system_note = cat.system_notes.get(sysname, "")
        named.spans.append((s, e))
        out.append((text.count(LINE_MARK, 0, s), gname, None))
        break
    # a GPU name inside the system's ("H100" of "DGX H100") is that system's GPU, not one more
    hits = [h for h in lookup(m.gpu, spans, m) if not any(a <= h[1] and h[2] <= b for a, b in named.spans)]
    if hits:
        hits = _outside_cpus(m, spans, hits, _cpu_spans(cat, m, named, text))
    for name, s, e in hits:
        if text[s:e].isdigit() and _UNIT_AFTER_RE.match(text, e):
            continue  # "4090 MiB", "3090 MHz": a quantity, not a GeForce
        named.spans.append((s, e))
        n = count_near(text, s, e, text[e - 1 : e] == "s" and not name.lower().endswith("s"))
        out.append((text.count(LINE_MARK, 0, s), name, n))
    return out


def _outside_cpus(m: Matchers, spans: list[tuple[str, int, int]], hits: list[tuple[str, int, int]],
                  cpu_spans: list[tuple[int, int]]) -> list[tuple[str, int, int]]:
    """GPU names read only from tokens no CPU model string holds: a name inside one is dropped
    ("Xeon E5-1650 v4"), a name reaching into one is read again without its tokens ("RTX 4090
    + D-2100" is an RTX 4090 and a Xeon D-2100, not an RTX 4090 D)."""
    out = []
    for name, s, e in hits:
        cpus = [(a, b) for a, b in cpu_spans if a < e and s < b and (a, b) != (s, e)]
        if not cpus:
            out.append((name, s, e))
            continue
        own = [t for t in spans if s <= t[1] and t[2] <= e]
        rest = [t for t in own if not any(a <= t[1] and t[2] <= b for a, b in cpus)]
        if len(rest) == len(own):
            out.append((name, s, e))
        else:
            out.extend(lookup(m.gpu, rest, m))
    return out


def _cpu_spans(cat: Catalog, m: Matchers, named: _Named, text: str) -> list[tuple[int, int]]:
    """Where CPU model strings are named: a model of the data (its name patterns and its model
    number tables), a CPU brand with a model number, a CPU-like model number (searched once per
    question, and only when a GPU-like name is)."""
    if named.cpu_spans is None:
        out = [cm.span() for cm in m.cpu.finditer(text)] if m.cpu is not None else []
        out += [(h.start, h.end) for h in find_cpus(cat, text, m.gpu, SCAN)]
        if m.brands is not None:
            for bm in m.brands.finditer(text):
                model = bm.group("model")
                # "Xeon W-1650" is a CPU; a brand word before a GPU name with its letters
                # ("grace h100", "altra max h100") is not
                last = model.split()[-1] if model and model.strip() else ""
                if last and not (last[0].isalpha() and last in m.gpu):
                    out.append(bm.span())
        out += [cm.span() for cm in CPU_LIKE_RE.finditer(text)]
        named.cpu_spans = out
    return named.cpu_spans


def _record(hw: Hardware, named: _Named) -> None:
    """Every GPU named goes in ``hw.gpus``; the first one is the GPU of the answer."""
    for name in named.order:
        hw.gpus.append(GpuSeen(name, named.arch_of.get(name), named.counts.get(name)))
    archs = {g.arch for g in hw.gpus if g.arch}
    if len(archs) > 1:
        hw.notes.append(
            "The question names GPUs of different architectures ("
            + ", ".join(f"{g.name}: {g.arch.upper()}" for g in hw.gpus if g.arch)
            + ")."
        )
    name = named.order[0] if named.order else None
    if name is not None and name in named.arch_of:
        hw.gpu = name
        hw.gpu_arch = named.arch_of[name]
        hw.gpu_count = named.counts.get(name)
    elif name is not None:
        hw.gpu_foreign = name


def _foreign(m: Matchers, hw: Hardware, named: _Named, folded: str) -> None:
    """Non-NVIDIA accelerators (no variant serves them; the answer says so)."""
    if m.foreign is None:
        return
    for fm in m.foreign.finditer(folded, 0, SCAN):
        named.spans.append(fm.span())
        if hw.gpu_arch is None and hw.gpu_foreign is None:
            hw.gpu_foreign = fm.group(0)


def _arch_by_number(cat: Catalog, hw: Hardware, folded: str) -> None:
    """No model named: an SM number or a compute capability names the architecture."""
    smm = _SM_RE.search(folded)
    if smm:
        key = "sm" + smm.group(1)
    else:
        ccm = _CC_RE.search(folded)
        key = f"sm{ccm.group(1)}{ccm.group(2)}" if ccm else bare_cc(cat, folded)
    if key:
        if key in cat.gpu_archs:
            hw.gpu_arch = key
        else:
            hw.gpu_unknown_cc = key


def _unknown_like(cat: Catalog, m: Matchers, hw: Hardware, named: _Named, folded: str) -> None:
    """GPU-like names no catalog entry covers are kept, so the answer can ask about them."""
    for gm in _GPU_LIKE_RE.finditer(folded, 0, SCAN):
        s, e = gm.span()
        if any(s < b and a < e for a, b in named.spans):
            continue
        if any(a <= s and e <= b for a, b in _cpu_spans(cat, m, named, folded)):
            continue  # "Cortex-A725" is a CPU
        if gm.group(0) not in hw.unknown_gpu:
            hw.unknown_gpu.append(gm.group(0))
            # A letter O or l typed for a digit is suggested, never assumed.
            typed = gm.group(0).replace(" ", "")
            guess = m.gpu.get(typed[0] + typed[1:].translate(_DIGIT_LOOKALIKES))
            if guess:
                hw.gpu_suggestions[gm.group(0)] = guess


def count_near(folded: str, start: int, end: int, plural: bool) -> int | None:
    after = _COUNT_AFTER_RE.match(folded, end)
    if after and 1 <= int(after.group(1)) <= 16:
        return int(after.group(1))
    before = _COUNT_BEFORE_RE.search(folded[max(0, start - 24) : start])
    if before is None:
        return None
    if before.group("w"):
        return _COUNT_WORDS[before.group("w")]
    n = int(before.group("n"))
    if not 1 <= n <= 64:
        return None
    if before.group("x") or plural or n <= 16:
        head = folded[max(0, start - 24) : start][: before.start()]
        if not before.group("x") and _VERSIONISH_BEFORE.search(head):
            return None  # "python 3.12 H100", "driver 535 A100"
        return n
    return None


def bare_cc(cat: Catalog, folded: str) -> str | None:
    """A lone "8.6" is a compute capability only if it is one and nothing says it is a
    Python, CUDA, driver or PyTorch version."""
    known = {a.cc: k for k, a in cat.gpu_archs.items()}
    for bm in _BARE_CC_RE.finditer(folded):
        cc = f"{bm.group(1)}.{bm.group(2)}"
        if cc not in known:
            continue
        if _VERSIONISH_BEFORE.search(folded[max(0, bm.start() - 16) : bm.start()]):
            continue
        return known[cc]
    return None


_BRAND_RE = rx(r"(?<![a-z0-9])(?:geforce|titan|quadro|rtx|gtx)(?![a-z0-9])")


def unnamed_gpu(hw: Hardware, prose: str) -> None:
    """A model-number-like word before "gpu" is an unknown GPU name; a bare mention of a GPU (or
    of an NVIDIA GPU brand: "Titan", "GeForce", "RTX") is remembered, so the answer asks which one
    instead of answering CPU-only."""
    if _BRAND_RE.search(prose):
        hw.gpu_unnamed = True
    for gm in _GPU_WORD_RE.finditer(prose):
        word = gm.group(1)
        if word and not _COUNT_RE.fullmatch(word) and not CPU_LIKE_RE.fullmatch(word):
            hw.unknown_gpu.append(word)
            return
        hw.gpu_unnamed = True
