"""README edits of a pin bump, scoped to what moved (pure).

A bump of branch B from pin OLD to NEW changes, in B's own README, only what is about B's
moved pin group:

- in a ``Branch``-first table, the rows of B (a continuation row ``| | | 12.8 |`` belongs to the
  row above, so another branch's continuation rows are never touched) that mention OLD;
- in a table whose columns are headed by refs (``| Property | `build-vllm/main` | `B` |``),
  only the cells of B's column;
- other table rows and prose lines that mention OLD, unless they also name another branch or
  another repository's ref (``build-vllm/main``): those are left as written and reported, since
  what they say about the other side did not move; so are the lines of a passage (a paragraph,
  or a comment and its command in a code block) that names another branch and never B, such
  as ``# PyTorch 2.9.1`` above ``git checkout pytorch-2.9-python313``;
- torchbot's metadata comment (``<!-- torchbot:... -->``).

Other branches share pins (``pytorch-2.9-python311`` and ``pytorch-2.9-vllm-0.14.0``): their
rows keep the old pin, which is still true for them.

May import: config, release.recipes.markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.naming import short
from release.recipes.markdown import find_tables, header_refs, is_branch_table, join_row, row_branches, split_row


@dataclass
class ReadmeEdit:
    text: str
    changed_lines: list[int] = field(default_factory=list)
    left_as_written: list[str] = field(default_factory=list)  # "line N: why"


def _mentions(text: str, old: str) -> bool:
    return old in text or f"`{short(old)}`" in text or f"**{short(old)}**" in text


def _swap(text: str, old: str, new: str) -> str:
    return (
        text.replace(old, new)
        .replace(f"`{short(old)}`", f"`{short(new)}`")
        .replace(f"**{short(old)}**", f"**{short(new)}**")
    )


def _names_other(text: str, branch: str, others: set[str]) -> str | None:
    """The other branch or foreign ref a piece of text names, if any."""
    for tok in re.findall(r"`([^`\s]+)`", text):
        if tok != branch and (tok in others or ("/" in tok and not tok.startswith((".", "http")))):
            return tok
    for name in others:
        if "-" in name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", text):
            return name
    return None


def scoped_readme_edit(text: str, branch: str, old: str, new: str, branches=(), *, mentions=None,
                       swap=None) -> ReadmeEdit:
    """``text`` (branch ``branch``'s README) with pin ``old`` moved to ``new`` where the README
    speaks about ``branch``'s moved pin group, and nowhere else. ``branches``: every branch
    name of the repository. ``mentions(text)`` / ``swap(text)`` stand for the pin's forms when
    another fact moves (release.pins.moves: a declared PyTorch version)."""
    said = mentions or (lambda t: _mentions(t, old))
    change = swap or (lambda t: _swap(t, old, new))
    others = set(branches) - {branch}
    lines = text.splitlines(keepends=True)
    out = list(lines)
    edit = ReadmeEdit(text)
    in_table: set[int] = set()
    for t in find_tables(lines):
        in_table.add(t.header_line)
        in_table.update(t.rows)
        if t.header_line + 1 < len(lines):
            in_table.add(t.header_line + 1)
        if is_branch_table(t):
            for i, name in row_branches(t, lines):
                if not said(lines[i]):
                    continue
                if name == branch:
                    out[i] = change(lines[i])
                elif name is None:
                    _other_line(lines, out, i, branch, old, others, edit, change)
            continue
        refs = header_refs(lines[t.header_line])
        if refs:
            mine = [c for c, name in refs.items() if name == branch]
            for i in t.rows:
                if not said(lines[i]):
                    continue
                cells = split_row(lines[i])
                if mine:
                    for c in mine:
                        if c < len(cells):
                            cells[c] = change(cells[c])
                    out[i] = join_row(lines[i], cells)
                    skipped = [refs[c] for c in refs if c not in mine and c < len(cells) and said(cells[c])]
                    if skipped:
                        edit.left_as_written.append(
                            f"line {i + 1}: the {', '.join(skipped)} column keeps {short(old)} (not {branch}'s pin)"
                        )
                else:
                    edit.left_as_written.append(f"line {i + 1}: a table about {', '.join(refs.values())}")
            continue
        for i in t.rows:
            if said(lines[i]):
                _other_line(lines, out, i, branch, old, others, edit, change)
    unit_of = _units(lines, in_table)
    for i, line in enumerate(lines):
        if i in in_table or not said(line):
            continue
        if line.startswith("<!-- torchbot:"):
            out[i] = line.replace(old, new)
            continue
        about = _unit_about_other(lines, unit_of.get(i, (i,)), branch, others)
        if about:
            edit.left_as_written.append(f"line {i + 1}: mentions {short(old)} in a passage about {about}")
            continue
        _other_line(lines, out, i, branch, old, others, edit, change)
    edit.text = "".join(out)
    edit.changed_lines = [i + 1 for i, (a, b) in enumerate(zip(lines, out, strict=False)) if a != b]
    return edit


def _units(lines: list[str], in_table: set[int]) -> dict[int, tuple[int, ...]]:
    """Line index -> the lines of its passage: a paragraph (or list) between blank lines, a
    heading alone, and inside a fenced code block the lines between blank lines (a comment and
    the command it describes)."""
    unit_of: dict[int, tuple[int, ...]] = {}
    current: list[int] = []

    def close() -> None:
        for j in current:
            unit_of[j] = tuple(current)
        current.clear()

    fenced = False
    for i, line in enumerate(lines):
        bare = line.strip()
        if bare.startswith(("```", "~~~")):
            close()
            fenced = not fenced
            continue
        if not bare or i in in_table or (not fenced and bare.startswith("#")):
            close()
            if bare and i not in in_table:
                unit_of[i] = (i,)
            continue
        current.append(i)
    close()
    return unit_of


def _unit_about_other(lines: list[str], unit: tuple[int, ...], branch: str, others: set[str]) -> str | None:
    """The other branch (or another repository's ref) a passage is about, when it names one and
    never names ``branch``: its lines are about that branch even where they name none."""
    if len(unit) < 2:
        return None
    text = "".join(lines[j] for j in unit)
    if re.search(rf"(?<![\w.-]){re.escape(branch)}(?![\w.-])", text):
        return None
    return _names_other(text, branch, others)


def _other_line(lines, out, i, branch, old, others, edit, change) -> None:
    other = _names_other(lines[i], branch, others)
    if other:
        edit.left_as_written.append(f"line {i + 1}: mentions {short(old)} together with {other}")
        return
    out[i] = change(lines[i])
