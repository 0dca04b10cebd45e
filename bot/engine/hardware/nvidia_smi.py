"""Pasted ``nvidia-smi`` output: ``--query-gpu=... --format=csv`` rows (a GPU newer than the
catalog is read by its compute capability), the table header's driver version and the GPU
UUIDs that must never be read as model names. Pure; may import config."""

from __future__ import annotations

import re

from bot.engine.hardware.facts import SCAN, fold
from bot.engine.hardware.matchers import Matchers, lookup, token_spans
from config.catalog import Catalog

UUID_RE = re.compile(r"\(uuid: ?[^)\n]*\)|gpu-[0-9a-f]{8}-[0-9a-f-]{27}")
# "Driver Version: 566.36" first: under WSL (and Windows) the NVIDIA-SMI version is the Linux
# library's, the driver version is the Windows driver's, and that one decides what CUDA runs.
DRIVER_VERSION_RE = re.compile(r"driver version\s*:?\s*(\d{3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?")
SMI_VERSION_RE = re.compile(r"nvidia-smi\s+(\d{3})\.")
_CSV_DRIVER_RE = re.compile(r"\d{3}(?:\.\d+){0,2}")


def cc_key(cc: str) -> str | None:
    cm = re.fullmatch(r"\s*(\d{1,2})\.(\d)\s*", cc)
    return f"sm{cm.group(1)}{cm.group(2)}" if cm else None


def csv_rows(low: str) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=... --format=csv`` output (header line first)."""
    if "compute_cap" not in low and "driver_version" not in low:
        return []
    rows: list[dict[str, str]] = []
    cols: list[str] | None = None
    for line in low[:SCAN].splitlines():
        cells = [c.strip() for c in line.split(",")]
        if cols is None:
            if len(cells) >= 2 and ("compute_cap" in cells or "driver_version" in cells):
                cols = [c.split(" ")[0] for c in cells]
            continue
        if len(cells) != len(cols):
            cols = None
            continue
        rows.append(dict(zip(cols, cells, strict=True)))
    return rows


def csv_driver(low: str) -> str | None:
    """The driver version of the first CSV row that has one."""
    return next((r["driver_version"] for r in csv_rows(low) if _CSV_DRIVER_RE.fullmatch(r.get("driver_version", ""))),
                None)


def csv_gpus_by_cc(cat: Catalog, m: Matchers, low: str) -> list[tuple[str, str, str, str]]:
    """CSV rows naming a GPU the catalog does not know, read by compute capability instead:
    (label as printed, folded label, architecture key, compute capability), one per row."""
    out = []
    for row in csv_rows(low):
        fname = fold(row.get("name", ""))
        key = cc_key(row.get("compute_cap", ""))
        if not fname or any(True for _ in lookup(m.gpu, token_spans(fname), m)) or key not in cat.gpu_archs:
            continue
        out.append((row["name"].strip(), fname, key, row["compute_cap"].strip()))
    return out
