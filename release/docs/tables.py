"""The cross-branch tables of a README, checked and brought in line with the facts (pure).

A cross-branch table is a Markdown table whose first column is ``Branch`` and that states at
least one maintained fact: PyTorch, CUDA, Python, Variants, Nixpkgs Pin. Its rows are grouped
by branch (a continuation row ``| | | 12.8 |`` belongs to the row above). For every branch of
the repository (less the skipped ones, e.g. ``main-staging``) a table must have rows that say:

- PyTorch: a version consistent with the branch's ("2.10" and "2.10.0" agree, "TBD" does not);
- Python: the branch's;
- CUDA: together, exactly the branch's CUDA versions ("12.9.1" agrees with 12.9);
- Nixpkgs Pin: per row, the pin of the CUDA versions of that row (a multi-pin branch gets one
  row per pin group where the README has a single row); a branch whose recipes take nixpkgs from
  callPackage is said to be unpinned, with where its nixpkgs comes from (never a link to a
  ``tree/none``); short pins in backticks elsewhere in the row (``(nixpkgs `46336d4`)``) must be
  one of the branch's pins;
- Variants (a branch with one row): the number of recipes.

Rows naming a branch the repository does not have are dropped; a branch with no row gets one
(a "Variants on Other Branches" table may leave out the README's own branch). Everything
else -- other columns, other tables, prose, emphasis, padding -- is kept byte for byte.

May import: config, release.recipes.markdown, release.recipes.facts (NONE_PIN), release.docs.facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.catalog import vtuple
from release.docs.facts import BranchDoc, skipped
from release.recipes.facts import NONE_PIN  # the pin of a recipe that takes nixpkgs from callPackage
from release.recipes.markdown import (
    Table,
    find_tables,
    is_branch_table,
    join_row,
    plain,
    replace_text,
    row_branches,
    split_row,
)

PIN_URL = "https://github.com/NixOS/nixpkgs/tree/{pin}"
UNPINNED = "unpinned (nixpkgs from `flox build`)"
_UNPINNED_RE = re.compile(r"\bunpinned\b", re.I)
_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)*")
_HEX_RE = re.compile(r"\b[0-9a-f]{7,40}\b")
_NIXPKGS_SHORT_RE = re.compile(r"(nixpkgs\s+\**`)([0-9a-f]{7,40})(`)")
MAINTAINED = ("pytorch", "cuda", "python", "variants", "nixpkgs pin", "pin")


@dataclass
class Stale:
    readme: str  # the branch whose README.md it is
    table: str  # the table's heading
    row: str  # the branch the row is about
    says: str
    true: str
    line: int = 0  # 1-based line of the (first) row; 0 for a missing row

    def to_dict(self) -> dict:
        return {"readme": self.readme, "table": self.table, "row": self.row, "says": self.says,
                "true": self.true, "line": self.line}

    def text(self) -> str:
        where = f"{self.readme}:README.md" + (f":{self.line}" if self.line else "")
        return f"{where} [{self.table}] {self.row}: says {self.says}; true: {self.true}"


@dataclass
class Checked:
    readme: str
    stale: list[Stale] = field(default_factory=list)
    text: str = ""  # the README with its tables brought in line
    rows_changed: int = 0


@dataclass
class _Cols:
    pytorch: int | None
    cuda: int | None
    python: int | None
    variants: int | None
    pin: int | None
    archs: int | None

    @classmethod
    def of(cls, t: Table) -> _Cols:
        return cls(t.column("pytorch"), t.column("cuda"), t.column("python"), t.column("variants"),
                   t.column("nixpkgs pin", "pin", "nixpkgs"), t.column("architectures"))


def is_cross_branch(t: Table) -> bool:
    return is_branch_table(t) and any(h in MAINTAINED for h in t.header[1:])


def _mm(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _cuda_said(cell: str) -> list[str]:
    return _VERSION_RE.findall(plain(cell))


def _agrees(said: str, true: str) -> bool:
    a, b = vtuple(said), vtuple(true)
    n = min(len(a), len(b))
    return n >= 2 and a[:n] == b[:n]


def _cell(cells: list[str], i: int | None) -> str:
    return cells[i] if i is not None and i < len(cells) else ""


def _pins_said(cell: str) -> list[str]:
    said = _HEX_RE.findall(cell)
    return [*said, NONE_PIN] if _UNPINNED_RE.search(cell) else said


def _pin_text(pin: str) -> str:
    """A new row's pin cell: a link to the nixpkgs tree, or where an unpinned branch's nixpkgs comes from."""
    return UNPINNED if pin == NONE_PIN else f"[`{pin[:7]}`]({PIN_URL.format(pin=pin)})"


def _pin_cell(old: str, pin: str, bold: bool) -> str:
    if pin == NONE_PIN:
        return f" {UNPINNED} "
    s = pin[:7]
    inner = f"**`{s}`**" if ("**`" in old or (bold and "`" not in old)) else f"`{s}`"
    if "](" in old or "`" not in old:
        return f" [{inner}]({PIN_URL.format(pin=pin)}) "
    return f" {inner} "


def _cuda_text(old: str, versions: list[str]) -> str:
    """The CUDA cell's text for ``versions`` (major.minor), keeping the cell's own spelling
    ("12.9.1") and separator."""
    said = {_mm(v): v for v in _cuda_said(old)}
    sep = " / " if " / " in old or "/" not in old else "/"
    return sep.join(said.get(v, v) for v in versions)


def _is_bold_row(cells: list[str]) -> bool:
    return any("**" in c for c in cells[1:3]) or "**" in (cells[0] if cells else "")


def _render(line: str, doc: BranchDoc, cols: _Cols, cuda: list[str] | None, pins: list[str] | None,
            count: bool) -> str:
    cells = split_row(line)
    bold = _is_bold_row(cells)
    if cols.pytorch is not None and cols.pytorch < len(cells):
        said = plain(cells[cols.pytorch])
        if said and not (_VERSION_RE.fullmatch(said) and _agrees(said, doc.pytorch)):
            cells[cols.pytorch] = replace_text(cells[cols.pytorch], doc.pytorch)
    if cols.python is not None and cols.python < len(cells):
        said = plain(cells[cols.python])
        if said and said != doc.python:
            cells[cols.python] = replace_text(cells[cols.python], doc.python)
    if cols.cuda is not None and cols.cuda < len(cells) and cuda is not None:
        said = [_mm(v) for v in _cuda_said(cells[cols.cuda])]
        if sorted(said) != sorted(cuda):  # the order is the maintainers' choice
            cells[cols.cuda] = replace_text(cells[cols.cuda], _cuda_text(cells[cols.cuda], cuda) or "-")
    if cols.pin is not None and cols.pin < len(cells) and pins is not None:
        said = _pins_said(cells[cols.pin])
        if len(said) != len(pins) or any(not p.startswith(s) for s, p in zip(said, pins, strict=True)):
            cells[cols.pin] = " / ".join(_pin_cell(cells[cols.pin], p, bold).strip() for p in pins)
            cells[cols.pin] = f" {cells[cols.pin]} "
    if count and cols.variants is not None and cols.variants < len(cells):
        cell = cells[cols.variants]
        m = re.search(r"\d+", cell)
        if m and int(m[0]) != doc.variants:
            cells[cols.variants] = cell[: m.start()] + str(doc.variants) + cell[m.end():]
    # short pins quoted in other cells ("vLLM 0.14.0 pin-certified (nixpkgs `46336d4`)")
    row_pins = pins if pins else list(doc.pins)
    for i, cell in enumerate(cells):
        if i in (0, cols.pin):
            continue

        def fix(m):
            s = m[2]
            if any(p.startswith(s) for p in doc.pins) or len(row_pins) != 1:
                return m[0]
            return m[1] + row_pins[0][: len(s)] + m[3]

        cells[i] = _NIXPKGS_SHORT_RE.sub(fix, cell)
    return join_row(line, cells)


def _blank_unmaintained(line: str, cols: _Cols) -> str:
    """A neighbour row as the template of a row torchbot adds: the cells torchbot does not
    maintain (cuDNN, Min Driver, architectures, notes) are emptied rather than copied, since
    the neighbour's values need not hold for another CUDA group (a 13.1 row is not '570+')."""
    kept = {0, cols.pytorch, cols.cuda, cols.python, cols.variants, cols.pin}
    cells = split_row(line)
    return join_row(line, [c if i in kept else " " for i, c in enumerate(cells)])


def _block_rows(lines: list[str], rows: list[int], doc: BranchDoc, cols: _Cols) -> list[str]:
    """The rows a branch's block must have (the same lines where nothing is stale)."""
    true = list(doc.cuda)
    has_cuda_col = cols.cuda is not None
    plans: list[list] = []  # [template line, cuda list | None, pin | None]
    covered: list[str] = []
    for i in rows:
        line = lines[i]
        cells = split_row(line)
        said = [_mm(v) for v in _cuda_said(_cell(cells, cols.cuda))] if has_cuda_col else []
        keep = [c for c in said if c in true and c not in covered]
        if has_cuda_col and said and not keep:
            continue  # a row about CUDA versions the branch no longer has
        if cols.pin is not None and has_cuda_col and keep:
            parts: dict[str, list[str]] = {}
            for c in keep:
                parts.setdefault(doc.pin_of(c) or "", []).append(c)
            for pin, part in parts.items():
                plans.append([line, part, pin or None])
        else:
            plans.append([line, keep if has_cuda_col and said else None, None])
        covered.extend(keep)
    if not plans:
        plans.append([lines[rows[0]], [], None])
    missing = [c for c in true if c not in covered]
    if missing and has_cuda_col:
        if cols.pin is not None:
            for c in missing:
                pin = doc.pin_of(c)
                target = next((p for p in plans if p[2] == pin and p[1] is not None), None)
                if target is None:
                    target = next((p for p in plans if p[1] == [] or (p[1] is None and p[2] is None)), None)
                    if target is not None:
                        target[1], target[2] = [], pin
                if target is None:
                    target = [_blank_unmaintained(plans[-1][0], cols), [], pin]  # a row torchbot adds
                    plans.append(target)
                target[1].append(c)
        else:
            target = next((p for p in plans if p[1] is not None), plans[0])
            target[1] = (target[1] or []) + missing
    out = []
    single = len(plans) == 1
    for line, cuda, pin in plans:
        if cols.pin is None:
            pins = None
        elif pin is not None:
            pins = [pin]
        elif cuda is None or not doc.cuda:
            pins = list(doc.pins)
        else:
            pins = None
        out.append(_render(line, doc, cols, cuda, pins, single))
    return out


def _new_rows(t: Table, header_line: str, doc: BranchDoc, cols: _Cols) -> list[str]:
    """Rows for a branch the table does not list: its facts, other cells from the branch model."""
    n = len(t.header)
    groups = doc.groups if cols.pin is not None and doc.groups else ((None, doc.cuda),)
    out = []
    for pin, versions in groups:
        cells = [""] * n
        for i, h in enumerate(t.header):
            if i == 0:
                cells[i] = f"`{doc.name}`"
            elif i == cols.pytorch:
                cells[i] = doc.pytorch
            elif i == cols.cuda:
                cells[i] = " / ".join(versions if pin else doc.cuda) or "-"
            elif i == cols.python:
                cells[i] = doc.python
            elif i == cols.variants:
                cells[i] = str(doc.variants)
            elif i == cols.pin:
                cells[i] = _pin_text(pin) if pin else ""
            elif i == cols.archs:
                cells[i] = doc.architectures()
            elif h == "cudnn":
                cells[i] = doc.cudnn
            elif h in ("min driver", "driver"):
                cells[i] = f"{doc.min_driver}+" if doc.min_driver else ""
            elif h in ("key additions", "purpose", "notes", "summary"):
                cells[i] = doc.summary
        out.append("| " + " | ".join(cells) + " |\n")
    return out


def _summary(lines: list[str], cols: _Cols) -> dict[str, str]:
    """What a block of rows says, per maintained fact."""
    facts: dict[str, list[str]] = {}
    for line in lines:
        cells = split_row(line)
        for key, col in (("PyTorch", cols.pytorch), ("CUDA", cols.cuda), ("Python", cols.python),
                         ("variants", cols.variants)):
            text = plain(_cell(cells, col))
            if col is not None and text and text not in facts.setdefault(key, []):
                facts[key].append(text)
        if cols.pin is not None:
            said = [p[:7] for p in _pins_said(_cell(cells, cols.pin))] or [plain(_cell(cells, cols.pin)) or "-"]
            facts.setdefault("pin", [])
            facts["pin"].extend(p for p in said if p not in facts["pin"])
        for cell in cells[1:]:
            for m in _NIXPKGS_SHORT_RE.finditer(cell):
                if (cols.pin is None) and m[2] not in facts.setdefault("pin", []):
                    facts["pin"].append(m[2])
    return {k: " | ".join(v) for k, v in facts.items()}


def _diff(old: list[str], new: list[str], cols: _Cols) -> tuple[str, str]:
    a, b = _summary(old, cols), _summary(new, cols)
    keys = [k for k in ("PyTorch", "CUDA", "Python", "variants", "pin") if a.get(k) != b.get(k)]
    if not keys:
        return f"{len(old)} row(s)", f"{len(new)} row(s)"
    return ("; ".join(f"{k} {a.get(k, '-')}" for k in keys), "; ".join(f"{k} {b.get(k, '-')}" for k in keys))


def check_readme(readme: str, own: str, docs: dict[str, BranchDoc], *, existing=(), skip=(), only=None) -> Checked:
    """The stale rows of ``readme`` (branch ``own``'s README) and the README with them fixed.
    ``docs``: the facts of every documented branch; ``existing``: every branch name of the
    repository (rows about existing but undocumented branches are left alone); ``skip``:
    name patterns of branches the tables need not list; ``only``: check only the rows of these
    branches (a bump's moved branch), leaving the rest as written."""
    lines = readme.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
        trailing_fix = True
    else:
        trailing_fix = False
    result = Checked(own)
    replacements: dict[int, tuple[int, list[str]]] = {}  # first line -> (lines replaced, new lines)
    documented = [n for n in docs if not skipped(n, skip)]
    for t in find_tables(lines):
        if not is_cross_branch(t):
            continue
        cols = _Cols.of(t)
        table = t.heading or "Branch table"
        blocks: dict[str, list[int]] = {}
        order: list[str] = []
        for i, name in row_branches(t, lines):
            if name is None:
                continue
            if name not in blocks:
                order.append(name)
            blocks.setdefault(name, []).append(i)
        for name in order:
            if only is not None and name not in only:
                continue
            rows = blocks[name]
            if rows != list(range(rows[0], rows[-1] + 1)):
                continue  # a branch listed twice, apart: leave it to the maintainers
            old = [lines[i] for i in rows]
            if name not in docs:
                if name in existing or skipped(name, skip):
                    continue
                result.stale.append(Stale(own, table, name, f"a row for `{name}`",
                                          "the repository has no such branch", rows[0] + 1))
                replacements[rows[0]] = (len(rows), [])
                continue
            new = _block_rows(lines, rows, docs[name], cols)
            if new != old:
                says, true = _diff(old, new, cols)
                result.stale.append(Stale(own, table, name, says, true, rows[0] + 1))
                replacements[rows[0]] = (len(rows), new)
        other = "other branches" in table.lower()
        added: list[str] = []
        for name in documented:
            if name in blocks or (other and name == own) or (only is not None and name not in only):
                continue
            rows = _new_rows(t, lines[t.header_line], docs[name], cols)
            _, true = _diff([], rows, cols)
            result.stale.append(Stale(own, table, name, "no row", true))
            added.extend(rows)
        if added:
            last = t.rows[-1] if t.rows else t.header_line + 1
            n, new = replacements.get(last, (1, [lines[last]]))
            replacements[last] = (n, new + added)
    out: list[str] = []
    i = 0
    changed = 0
    while i < len(lines):
        if i in replacements:
            n, new = replacements[i]
            old = lines[i : i + n]
            changed += sum(1 for a, b in zip(old, new, strict=False) if a != b) + abs(len(new) - len(old))
            out.extend(new)
            i += n
            continue
        out.append(lines[i])
        i += 1
    text = "".join(out)
    if trailing_fix and text.endswith("\n"):
        text = text[:-1]
    result.text = text
    result.rows_changed = changed
    return result
