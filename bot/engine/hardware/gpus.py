"""GPUs named in free text: catalog models and systems (with plurals and counts: "8x H100",
"a pair of 3090s"), non-NVIDIA accelerators, a compute capability or SM number, GPU-like names
the catalog does not know (kept, so the answer asks), and a GPU mentioned without a name.
Pure; may import config."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.engine.hardware import nvidia_smi
from bot.engine.hardware.cpus import CPU_LIKE_RE
from bot.engine.hardware.facts import SCAN, GpuSeen, Hardware
from bot.engine.hardware.matchers import Matchers, lookup, token_spans
from config.catalog import Catalog

_SM_RE = re.compile(r"(?<![a-z0-9])sm ?(\d{2,3})(?![0-9])")
_CC_RE = re.compile(r"(?:compute capability|compute cap|capability|\bcc)\s*(?:is|of|=|:)?\s*(\d{1,2})\.(\d)(?![\d.])")
_BARE_CC_RE = re.compile(r"(?<![\w.])(\d{1,2})\.(\d)(?![\w.])")
_VERSIONISH_BEFORE = re.compile(r"(?:python|py|cuda|torch|pytorch|vllm|driver|cudnn|version|macos|ubuntu|v|nvcc|release)\s*[:=v]?\s*$")
# GPU counts next to a model name: "8x H100", "8 x H100", "H100 x8", "a pair of 3090s", "dual 4090".
_COUNT_WORDS = {
    "one": 1, "single": 1, "two": 2, "dual": 2, "twin": 2, "pair of": 2, "couple of": 2, "three": 3, "four": 4,
    "quad": 4, "five": 5, "six": 6, "eight": 8, "ten": 10, "twelve": 12, "sixteen": 16,
}
_COUNT_BEFORE_RE = re.compile(
    r"(?:(?<![\d.])(?P<n>\d{1,2}) ?(?P<x>x|way)? ?|(?<![a-z])(?P<w>"
    + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True))
    + r") )(?:nvidia |geforce |tesla |quadro |rtx |gtx )*$"
)
_COUNT_AFTER_RE = re.compile(r"s? ?x ?(\d{1,2})(?![0-9_])")
# Names that look like hardware: reported when the catalog does not know them.
_GPU_LIKE_RE = re.compile(
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
_GPU_WORD_RE = re.compile(r"(?<![a-z0-9])(?:([a-z0-9][a-z0-9-]{1,15}) )?(?:gpus?|graphics cards?|video cards?)(?![a-z0-9])")
_COUNT_RE = re.compile(r"\d+x?|x\d+|[a-z]+")  # "8x gpus", "4 gpus", "nvidia gpu": no model number


@dataclass
class _Named:
    """GPU names found so far, in the order named, with their counts and text spans."""

    order: list[str] = field(default_factory=list)
    counts: dict[str, int | None] = field(default_factory=dict)
    arch_of: dict[str, str] = field(default_factory=dict)
    spans: list[tuple[int, int]] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)  # folded names read by compute capability
    system_cpu: str | None = None


def read_gpus(cat: Catalog, m: Matchers, hw: Hardware, folded: str, low: str, inst_gpu: str | None) -> None:
    named = _Named(arch_of=dict(cat.gpu_models))
    if inst_gpu:
        named.order, named.counts = [inst_gpu], {inst_gpu: None}
    else:
        _models_in_text(cat, m, named, folded, table="|" in low or "gpu 0:" in low)
        _csv_by_cc(cat, m, hw, named, low)
    _record(hw, named)
    _foreign(m, hw, named, folded)
    if hw.gpu_arch is None and hw.gpu_foreign is None:
        _arch_by_number(cat, hw, folded)
    hw.system_cpu = named.system_cpu
    if not inst_gpu:
        _unknown_like(m, hw, named, folded)


def _models_in_text(cat: Catalog, m: Matchers, named: _Named, folded: str, table: bool) -> None:
    """Systems (the first one) and GPU models, with the counts said next to them."""
    spans = token_spans(folded)
    occurrences: dict[str, int] = {}
    explicit: dict[str, int] = {}
    for sysname, s, e in lookup(m.system, spans, m):
        gname, named.system_cpu = cat.systems[sysname]
        named.spans.append((s, e))
        if gname not in named.order:
            named.order.append(gname)
        break
    for name, s, e in lookup(m.gpu, spans, m):
        named.spans.append((s, e))
        if name not in named.order:
            named.order.append(name)
        occurrences[name] = occurrences.get(name, 0) + 1
        n = count_near(folded, s, e, table, folded[e - 1 : e] == "s" and not name.lower().endswith("s"))
        if n is not None:
            explicit[name] = explicit.get(name, 0) + n
    for name in named.order:
        seen = occurrences.get(name, 0)
        named.counts[name] = explicit.get(name) or (seen if seen > 1 else None)


def _csv_by_cc(cat: Catalog, m: Matchers, hw: Hardware, named: _Named, low: str) -> None:
    """nvidia-smi CSV rows: a name torchbot does not know is still read by its compute_cap."""
    for label, fname, key, cc in nvidia_smi.csv_gpus_by_cc(cat, m, low):
        named.resolved.append(fname)
        if label not in named.order:
            named.order.append(label)
            named.counts[label] = None
            named.arch_of[label] = key
            hw.notes.append(
                f"'{label}' is not in torchbot's GPU list; its compute capability {cc} (from nvidia-smi) says {key.upper()}."
            )
        else:
            named.counts[label] = (named.counts[label] or 1) + 1


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


def _unknown_like(m: Matchers, hw: Hardware, named: _Named, folded: str) -> None:
    """GPU-like names no catalog entry covers are kept, so the answer can ask about them."""
    for gm in _GPU_LIKE_RE.finditer(folded, 0, SCAN):
        s, e = gm.span()
        if any(s < b and a < e for a, b in named.spans) or any(gm.group(0) in r for r in named.resolved):
            continue
        if gm.group(0) not in hw.unknown_gpu:
            hw.unknown_gpu.append(gm.group(0))
            # A letter O or l typed for a digit is suggested, never assumed.
            typed = gm.group(0).replace(" ", "")
            guess = m.gpu.get(typed[0] + typed[1:].translate(_DIGIT_LOOKALIKES))
            if guess:
                hw.gpu_suggestions[gm.group(0)] = guess


def count_near(folded: str, start: int, end: int, table: bool, plural: bool) -> int | None:
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
    if before.group("x") or (not table and (plural or n <= 16)):
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


def unnamed_gpu(hw: Hardware, prose: str) -> None:
    """A model-number-like word before "gpu" is an unknown GPU name; a bare mention of a GPU is
    remembered, so the answer asks which one instead of answering CPU-only."""
    for gm in _GPU_WORD_RE.finditer(prose):
        word = gm.group(1)
        if word and not _COUNT_RE.fullmatch(word) and not CPU_LIKE_RE.fullmatch(word):
            hw.unknown_gpu.append(word)
            return
        hw.gpu_unnamed = True
