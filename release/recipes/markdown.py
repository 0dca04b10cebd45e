"""Markdown tables of the repositories' READMEs, read and edited line by line (pure).

The real READMEs are hand-written: tables with a ``Branch`` first column (``| `main` |``,
``| **`main`** ⬅️ |``, and continuation rows ``| | | 12.8 |`` that belong to the row above),
tables whose columns are headed by branches (``| Property | `build-vllm/main` | `x` |``), and
prose. Everything here keeps a line byte for byte unless a cell of it is rewritten, and a
rewritten cell keeps its padding and emphasis.

May import: nothing of torchbot (plain string functions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SEP_RE = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_TICK_RE = re.compile(r"`([^`]+)`")
MARKERS = ("⬅️", "⬅")


def is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def split_row(line: str) -> list[str]:
    """The raw cells of a table row (text between unescaped pipes, padding kept)."""
    body = line.rstrip("\n").rstrip()
    lead = body.index("|")
    body = body[lead + 1 :]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return re.split(r"(?<!\\)\|", body)


def join_row(line: str, cells: list[str]) -> str:
    """``line`` with its cells replaced (its indentation and line ending kept)."""
    lead = line[: line.index("|")]
    end = "\n" if line.endswith("\n") else ""
    return lead + "|" + "|".join(cells) + "|" + end


def plain(cell: str) -> str:
    """A cell's text without emphasis, markers and padding: ' **`main`** ⬅️ ' -> '`main`'."""
    text = cell
    for m in MARKERS:
        text = text.replace(m, "")
    return text.replace("**", "").strip()


def ticked(cell: str) -> list[str]:
    return _TICK_RE.findall(cell)


def first_ticked(cell: str) -> str | None:
    found = ticked(cell)
    return found[0] if found else None


def replace_text(cell: str, new: str) -> str:
    """A cell with its text replaced, keeping padding and ``**`` emphasis: ' **2.10** ' -> ' **2.10.0** '."""
    lead = cell[: len(cell) - len(cell.lstrip())]
    trail = cell[len(cell.rstrip()) :]
    inner = cell.strip()
    if not inner:
        return f" {new} "
    if inner.startswith("**") and inner.endswith("**") and len(inner) > 4 and new:
        return f"{lead}**{new}**{trail}"
    return f"{lead}{new}{trail}"


@dataclass
class Table:
    """A table: its header line index, header cells (plain, lower case), body row line
    indices, and the nearest heading above it."""

    header_line: int
    header: list[str]
    rows: list[int] = field(default_factory=list)
    heading: str = ""

    def column(self, *names: str) -> int | None:
        for i, h in enumerate(self.header):
            if h in names:
                return i
        return None

    @property
    def end(self) -> int:
        """Line index after the last row."""
        return (self.rows[-1] if self.rows else self.header_line + 1) + 1


def find_tables(lines: list[str]) -> list[Table]:
    tables: list[Table] = []
    heading = ""
    i = 0
    n = len(lines)
    fence = False
    while i < n:
        line = lines[i]
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif not fence and is_row(line) and i + 1 < n and _SEP_RE.match(lines[i + 1].strip()):
            t = Table(i, [plain(c).lower() for c in split_row(line)], heading=heading)
            j = i + 2
            while j < n and is_row(lines[j]):
                t.rows.append(j)
                j += 1
            tables.append(t)
            i = j
            continue
        i += 1
    return tables


def is_branch_table(t: Table) -> bool:
    return bool(t.header) and t.header[0] == "branch"


def row_branches(t: Table, lines: list[str]) -> list[tuple[int, str | None]]:
    """(line index, branch) for each body row of a Branch-first table: the branch named in
    the first cell, the previous row's for a continuation row (empty first cell), None when
    the first cell names no branch."""
    out: list[tuple[int, str | None]] = []
    current: str | None = None
    for i in t.rows:
        cells = split_row(lines[i])
        first = cells[0] if cells else ""
        if not plain(first):
            out.append((i, current))
            continue
        current = first_ticked(first)
        out.append((i, current))
    return out


def header_refs(header_line: str) -> dict[int, str]:
    """Column index -> the ref a header cell names in backticks (``| Property | `build-vllm/main` | `x` |``)."""
    out = {}
    for i, cell in enumerate(split_row(header_line)):
        name = first_ticked(cell)
        if name:
            out[i] = name
    return out
