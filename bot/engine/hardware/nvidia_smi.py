"""Pasted ``nvidia-smi`` output, read row by row and cell by cell: the table (Linux, WSL,
Windows WDDM/TCC; rows wrapped by a narrow terminal are joined again, names cut off with "..."
are read as what they can be), ``-L`` lines, ``-q`` "Product Name" lines and
``--query-gpu=... --format=csv`` rows (a GPU newer than the catalog is read by its compute
capability). Each GPU row gives one name cell; every line of that output is kept away from the
free-text reading, so a fan speed after an "N/A" never reads as an "A30". Also the table
header's driver version and the GPU UUIDs that must never be read as model names. Pure; may
import config."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.engine.hardware.facts import MAX_INPUT, SCAN, fold
from bot.engine.hardware.matchers import Matchers, lookup, token_spans
from config.catalog import Catalog
from config.regex_cache import rx

UUID_RE = rx(r"\(uuid: ?[^)\n]*\)|gpu-[0-9a-f]{8}-[0-9a-f-]{27}")
# "Driver Version: 566.36" first: under WSL (and Windows) the NVIDIA-SMI version is the Linux
# library's, the driver version is the Windows driver's, and that one decides what CUDA runs.
DRIVER_VERSION_RE = rx(r"driver version\s*:?\s*(\d{3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?")
SMI_VERSION_RE = rx(r"nvidia-smi\s+(\d{3})\.")
_CSV_DRIVER_RE = rx(r"\d{3}(?:\.\d+){0,2}")

_WRAPPED_TOP_RE = rx(r"[ \t]*\+-{8,}")  # a top border with no closing "+": cut by the terminal
# The first cell of a GPU row: index, name, then persistence mode (Linux) or driver model (Windows).
_GPU_CELL_RE = rx(r"\s*(\d{1,2})\s+(\S.*?)(?:\s+(?:on|off|wddm|tcc|mcdm|n/a))?\s*")
_TRUNCATED_RE = rx(r"\s*(?:\.\.\.|…)$")
_SIGNATURE_RE = rx(r"nvidia-smi|driver version|bus-id|persistence-m|driver-model|tcc/wddm|memory-usage"
                           r"|processes:|gpu\s+name|mig devices")
_LIST_RE = rx(r"^\s*gpu (\d{1,2}): *(\S[^\n]*?)\s*$")
_MIG_LIST_RE = rx(r"^\s*mig \S+\s+device\s+\d+:")
_QUERY_NAME_RE = rx(r"^\s*product name\s*:\s*(\S[^\n]*?)\s*$")
_QUERY_LINE_RE = rx(r"^\s+[a-z][\w ./()-]*?\s*:(?:\s|$)|^=+\s*nvsmi log\s*=+$|^gpu [0-9a-f]{4,8}:[0-9a-f]{2}:")
# The driver's /proc/driver/nvidia/gpus/*/information and `nvidia-container-cli info`: a "Model:"
# line per GPU, among keys only they print (lscpu's "Model:" is a number and has none of them).
_DRIVER_SIGNATURE_RE = rx(r"^\s*(?:irq|gpu uuid|video bios|device minor|nvrm version|gpu excluded|device index)\s*:",
                          re.M)
_DRIVER_MODEL_RE = rx(r"^\s*model\s*:\s*(\S[^\n]*?)\s*$")
_DRIVER_LINE_RE = rx(r"^\s*(?:irq|gpu uuid|video bios|bus type|dma size|dma mask|bus location|device minor"
                     r"|gpu excluded|nvrm version|cuda version|device index|brand|architecture\s*:\s*\d+\.\d)\s*:?")
_GPU_WORD_RE = rx(r"nvidia|geforce|tesla|quadro|titan|rtx|gtx|jetson|(?<![a-z])[abhlt]\d")


@dataclass(frozen=True)
class NameCell:
    """The name cell of one GPU row of pasted nvidia-smi output (lower case, as printed)."""

    line: int  # index of the row's first line in the text
    name: str
    truncated: bool = False  # cut off with "..." by nvidia-smi
    cc: str | None = None  # compute capability, from a CSV row that has one


@dataclass
class Pasted:
    """GPU rows of the pasted nvidia-smi output, and the text's lines with every line of that
    output blanked (what the free-text reading may look at)."""

    rows: list[NameCell] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def read_pasted(low: str) -> Pasted:
    """Every nvidia-smi row of the text (tables, -L, -q, CSV), in the order pasted."""
    lines = low[:MAX_INPUT].split("\n")
    out = Pasted(lines=list(lines))
    if "|" in low:
        _tables(lines, out)
    if "gpu " in low:
        for i, line in enumerate(lines):
            lm = _LIST_RE.match(line)
            if lm:
                out.rows.append(NameCell(i, *_name(lm.group(2))))
                out.lines[i] = ""
            elif _MIG_LIST_RE.match(line):
                out.lines[i] = ""
    if "product name" in low:
        _query(lines, out)
    if "model" in low and _DRIVER_SIGNATURE_RE.search(low):
        _driver(lines, out)
    if "name," in low or ", name" in low:
        for i, cols, row in _csv(lines):
            if "name" in cols:
                out.lines[i] = ""
            if row and row.get("name"):
                out.rows.append(NameCell(i, *_name(row["name"]), cc=row.get("compute_cap")))
    out.rows.sort(key=lambda r: r.line)
    return out


def _name(cell: str) -> tuple[str, bool]:
    name = cell.strip()
    cut = _TRUNCATED_RE.search(name)
    return (name[: cut.start()].strip(), True) if cut else (name, False)


def _is_table(s: str) -> bool:
    return s[:1] in ("|", "+")


def _tables(lines: list[str], out: Pasted) -> None:
    """Tables: consecutive lines that begin with a border; a block that looks like nvidia-smi's
    (a header word, or a GPU row) is kept from the free text and its GPU rows are read."""
    i, n = 0, len(lines)
    while i < n:
        if not _is_table(lines[i].strip()):
            i += 1
            continue
        start = i
        # A top border cut short says a terminal wrapped every line at that width.
        top = lines[i].rstrip("\r")
        wrap = len(top) if _WRAPPED_TOP_RE.fullmatch(top) else None
        logical: list[tuple[int, str]] = []
        while i < n and _is_table(lines[i].strip()):
            j, row = _join(lines, i, wrap)
            logical.append((i, row))
            i = j + 1
        rows = _gpu_rows(logical)
        if rows or any(_SIGNATURE_RE.search(row) for _, row in logical):
            out.rows.extend(rows)
            for k in range(start, i):
                out.lines[k] = ""


def _join(lines: list[str], i: int, wrap: int | None) -> tuple[int, str]:
    """A table row as printed, with the lines a narrow terminal wrapped it into joined again
    (every character kept: a wrap can fall inside a word or a run of spaces): (index of its last
    line, the row). A piece as wide as the terminal goes on in the next line; otherwise a piece
    that does not begin with a border continues a row that does not end with one (or a row
    wrapped right after a border)."""
    raw = lines[i].rstrip("\r")
    j = i
    while j + 1 < len(lines):
        row = raw.strip()
        nxt = lines[j + 1].strip()
        if wrap is not None and len(lines[j].rstrip("\r")) >= wrap:
            ok = True
        else:
            ok = bool(nxt) and not _is_table(nxt) and (not row.endswith(("|", "+")) or nxt.endswith(("|", "+")))
        if not ok:
            break
        raw += lines[j + 1].rstrip("\r")
        j += 1
    return j, raw.strip()


def _gpu_rows(logical: list[tuple[int, str]]) -> list[NameCell]:
    """GPU rows of one table: the first cell holds an index and a name (the processes and MIG
    sections, whose first cells also start with a GPU index, are skipped)."""
    rows: list[NameCell] = []
    section = None  # None: no header seen; "gpu"; "other" (processes, MIG devices)
    for i, row in logical:
        cells = row.split("|")
        if len(cells) < 2:
            continue
        first = cells[1]
        if "processes" in row or "process name" in row or "mig devices" in row:
            section = "other"
            continue
        if "name" in first and "gpu" in first:
            section = "gpu"
            continue
        if section == "other":
            continue
        cm = _GPU_CELL_RE.fullmatch(first)
        if cm is None or not re.search(r"[a-z]", cm.group(2)):
            continue
        name, truncated = _name(cm.group(2))
        if section == "gpu" or len(cells) >= 4 or truncated or _GPU_WORD_RE.search(name):
            rows.append(NameCell(i, name, truncated))
    return rows


def _query(lines: list[str], out: Pasted) -> None:
    """``nvidia-smi -q``: one "Product Name" per GPU; its other "key : value" lines are kept
    from the free text (a "Total : 4090 MiB" is memory, not an RTX 4090)."""
    for i, line in enumerate(lines):
        qm = _QUERY_NAME_RE.match(line)
        if qm:
            out.rows.append(NameCell(i, *_name(qm.group(1))))
            out.lines[i] = ""
        elif _QUERY_LINE_RE.match(line):
            out.lines[i] = ""


def _driver(lines: list[str], out: Pasted) -> None:
    """The driver's proc file or ``nvidia-container-cli info``: one "Model:" line per GPU; the
    other lines of that output are kept from the free text (its Architecture is a compute capability)."""
    for i, line in enumerate(lines):
        dm = _DRIVER_MODEL_RE.match(line)
        if dm and _GPU_WORD_RE.search(dm.group(1)):
            out.rows.append(NameCell(i, *_name(dm.group(1))))
            out.lines[i] = ""
        elif _DRIVER_LINE_RE.match(line):
            out.lines[i] = ""


def cc_key(cc: str) -> str | None:
    cm = re.fullmatch(r"\s*(\d{1,2})\.(\d)\s*", cc)
    return f"sm{cm.group(1)}{cm.group(2)}" if cm else None


_CSV_FIELD_RE = rx(r"[a-z_]+(?:\.[a-z_]+)*(?: \[[^\]]*\])?")


def _csv(lines: list[str]) -> list[tuple[int, list[str], dict[str, str] | None]]:
    """Lines of ``nvidia-smi --query-gpu=... --format=csv`` output: (index, the header's
    columns, the row; None for the header line). A header is two or more query fields, among
    them ``name``, ``compute_cap`` or ``driver_version``."""
    out: list[tuple[int, list[str], dict[str, str] | None]] = []
    cols: list[str] | None = None
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.split(",")]
        if cols is not None and len(cells) == len(cols):
            out.append((i, cols, dict(zip(cols, cells, strict=True))))
            continue
        cols = None
        keys = [c.split(" ")[0] for c in cells]
        if len(cells) >= 2 and all(_CSV_FIELD_RE.fullmatch(c) for c in cells) \
                and {"name", "compute_cap", "driver_version"} & set(keys):
            cols = keys
            out.append((i, cols, None))
    return out


def csv_rows(low: str) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=... --format=csv`` output."""
    if "compute_cap" not in low and "driver_version" not in low and "name," not in low and ", name" not in low:
        return []
    return [row for _, _, row in _csv(low[:SCAN].split("\n")) if row]


def csv_driver(low: str) -> str | None:
    """The driver version of the first CSV row that has one."""
    return next((r["driver_version"] for r in csv_rows(low) if _CSV_DRIVER_RE.fullmatch(r.get("driver_version", ""))),
                None)


# ---------------------------------------------------------------------------------------
# A name cell -> a GPU


@dataclass(frozen=True)
class RowGpu:
    """The GPU one row of pasted nvidia-smi output names."""

    name: str  # a catalog model name, or the name as printed when the catalog does not know it
    arch: str | None  # None: not known (the answer asks)
    note: str = ""
    system: str | None = None  # a system the name is (DGX Spark's "NVIDIA GB10"): its CPU is known


def resolve(cat: Catalog, m: Matchers, cell: NameCell) -> RowGpu | None:
    """The GPU one name cell names: the first model in the cell (never one spanning two cells
    or rows); a name nvidia-smi cut off is read as every model it can be, and is known only when
    they share one architecture; an unknown name with a compute capability is read by it.
    None when the cell is empty."""
    folded = fold(cell.name)
    if not folded:
        return None
    spans = token_spans(folded)
    system = next((s for s, _, _ in lookup(m.system, spans, m)), None)
    found = next(iter(lookup(m.gpu, spans, m)), None)
    if cell.truncated:
        first = next((k for k, sp in enumerate(spans) if found and sp[1] == found[1]), len(spans) - 1)
        hit = _truncated(cat, m, cell, [t for t, _, _ in spans], first)
        if hit is not None:
            return hit
    if found is not None:
        return RowGpu(found[0], cat.gpu_models[found[0]], system=system)
    key = cc_key(cell.cc) if cell.cc else None
    if key in cat.gpu_archs:
        return RowGpu(cell.name, key, f"'{cell.name}' is not in torchbot's GPU list; its compute capability "
                      f"{cell.cc.strip()} (from nvidia-smi) says {key.upper()}.")
    return RowGpu(cell.name + ("..." if cell.truncated else ""), None)


def _truncated(cat: Catalog, m: Matchers, cell: NameCell, tokens: list[str], last: int) -> RowGpu | None:
    """A cut-off name: the models whose name begins with what is left of it, from a token at or
    before the model it already names (a model number is read whole: the prefix has a digit)."""
    for i in range(last + 1):
        prefix = "".join(tokens[i:])
        if prefix not in m.starts or len(prefix) < 3 or not any(c.isdigit() for c in prefix):
            continue
        names = sorted({name for key, name in m.gpu.items() if key.startswith(prefix)}, key=len)
        if not names:
            continue
        archs = {cat.gpu_models[n] for n in names}
        printed = cell.name + "..."
        if len(archs) > 1:
            return RowGpu(printed, None, f"'{printed}' is cut off by nvidia-smi; it may be "
                          + ", ".join(f"the {n} ({cat.gpu_models[n].upper()})" for n in names[:6]) + ".")
        arch = archs.pop()
        if len(names) == 1:
            return RowGpu(names[0], arch)
        stem = _common_prefix(names)
        return RowGpu(f"{stem}…", arch, f"'{printed}' is cut off by nvidia-smi; every GPU it can be "
                      f"({', '.join(names[:6])}) is {arch.upper()}.")
    return None


def _common_prefix(names: list[str]) -> str:
    first, last = min(names), max(names)
    k = 0
    while k < min(len(first), len(last)) and first[k] == last[k]:
        k += 1
    return first[:k].strip() or names[0]
