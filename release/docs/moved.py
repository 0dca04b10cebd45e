"""Another branch's README after a branch moved (pure): only what the move changes.

A bump that moves a branch's pin or PyTorch must bring the other branches' rows about it in
line, and nothing else: a cell that was already stale before the move (a variant count, a CUDA
list) is not the move's to fix, and must not be fixed under a message that names the move.
``moved_readme`` checks the rows twice, with the facts before and after the move
(:func:`release.docs.tables.check_readme`), and takes, cell by cell, only what differs between
the two; a README whose two checks agree is left as it is.

May import: config, release.recipes.markdown, release.docs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from release.docs.facts import BranchDoc
from release.docs.tables import check_readme, is_cross_branch
from release.recipes.markdown import find_tables, is_row, join_row, row_branches, split_row

_HEX_RE = re.compile(r"\b[0-9a-f]{7,40}\b")
_FACT_OF = {"pytorch": "pytorch", "nixpkgs pin": "pin", "pin": "pin", "nixpkgs": "pin", "cuda": "cuda",
            "python": "python", "variants": "variants"}


@dataclass
class MovedReadme:
    text: str
    changed: dict[str, set[str]] = field(default_factory=dict)  # row's branch -> facts changed ("pytorch", "pin")


def moved_readme(readme: str, own: str, before: dict[str, BranchDoc], after: dict[str, BranchDoc], moved: set[str],
                 *, existing=(), skip=()) -> MovedReadme:
    """``readme`` (branch ``own``'s) with the cells of its rows about the ``moved`` branches
    that the move changes (facts ``before`` -> ``after``), every other cell as written."""
    kw = {"existing": existing, "skip": skip, "only": moved}
    b = check_readme(readme, own, before, **kw).text
    a = check_readme(readme, own, after, **kw).text
    if a == b:
        return MovedReadme(readme)
    old, was, now = (t.splitlines(keepends=True) for t in (readme, b, a))
    if not len(old) == len(was) == len(now):  # rows added or dropped (a pin group split): the move's rows
        return MovedReadme(a, {n: _doc_changes(before.get(n), after.get(n)) for n in moved})
    columns = _row_columns(old)
    out = list(old)
    result = MovedReadme(readme)
    for i, (line, x, y) in enumerate(zip(old, was, now, strict=True)):
        if x == y:
            continue
        branch, headers = columns.get(i, (None, []))
        cells, xs, ys = split_row(line) if is_row(line) else [], split_row(x), split_row(y)
        if branch is None or not len(cells) == len(xs) == len(ys):
            out[i] = y
            for n in moved:
                result.changed.setdefault(n, set()).update(_doc_changes(before.get(n), after.get(n)))
            continue
        for c, (p, q) in enumerate(zip(xs, ys, strict=True)):
            if p != q:
                cells[c] = q
                header = headers[c] if c < len(headers) else ""
                fact = _FACT_OF.get(header) or ("pin" if _HEX_RE.search(q) else header)
                result.changed.setdefault(branch, set()).add(fact)
        out[i] = join_row(line, cells)
    result.text = "".join(out)
    return result


def _row_columns(lines: list[str]) -> dict[int, tuple[str | None, list[str]]]:
    """Line index of each cross-branch table row -> (the branch it is about, the table's headers)."""
    out = {}
    for t in find_tables(lines):
        if is_cross_branch(t):
            for i, name in row_branches(t, lines):
                out[i] = (name, t.header)
    return out


def _doc_changes(before: BranchDoc | None, after: BranchDoc | None) -> set[str]:
    if before is None or after is None:
        return {"rows"}
    facts = {"pytorch": before.pytorch != after.pytorch, "pin": before.groups != after.groups,
             "cuda": before.cuda != after.cuda, "python": before.python != after.python}
    return {k for k, v in facts.items() if v}
