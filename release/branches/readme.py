"""The README of a derived branch: the source branch's README with its branch-specific facts
updated, every other line as the maintainers wrote it (pure).

- The banner (``You are on the `B` branch — PyTorch … + CUDA … (N variants)``), lines about
  the branch itself (its name, package names, Python, pins, PyTorch) follow the new branch.
- Lines that name another branch keep what they say about it (``git checkout other && flox
  build …`` untouched; elsewhere only this branch's package names change).
- The source's entry in a branch bullet list stays and the new branch gets its own bullet.
- The cross-branch tables: the source's rows become the new branch's rows, then
  :func:`release.docs.tables.check_readme` states the facts of every branch (the source gets a
  row of its own like any other branch).
- Rows of variant tables naming a package the new branch does not have are dropped.

May import: config, release.recipes, release.docs, release.branches.derive.
"""

from __future__ import annotations

import re

from config.naming import parse_package_name, python_tag
from release.branches.derive import cuda_swap, python_swap
from release.docs.facts import BranchDoc
from release.docs.tables import check_readme, is_cross_branch
from release.recipes.markdown import find_tables, join_row, plain, row_branches, split_row

_PKG_RE = re.compile(r"\b((?:pytorch|torchvision|torchaudio)[0-9]*-python3\d{1,2}-[a-z0-9_-]+)")
_BANNER_RE = re.compile(r"You are on the `[^`]+` branch")


def _others_named(line: str, others: set[str]) -> list[str]:
    found = [t for t in re.findall(r"`([^`]+)`", line) if t in others]
    found += [n for n in others if "-" in n and re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-]|\.\d)", line)]
    return found


def derive_readme(
    text: str,
    *,
    source: str,
    new: BranchDoc,
    source_python: str,
    source_pins: tuple[str, ...],
    packages: set[str],
    docs: dict[str, BranchDoc],
    existing: set[str],
    skip=(),
    summary: str | None = None,
    torch_change: tuple[str, str] | None = None,  # (old version, new version)
    cuda_change: dict[str, str] | None = None,  # source CUDA -> new CUDA (renamed versions only)
) -> tuple[str, list[str]]:
    """(README text, notes)."""
    notes: list[str] = []
    lines = text.splitlines(keepends=True)
    others = (set(existing) | set(docs)) - {source, new.name}
    cross_rows: set[int] = set()
    source_rows: dict[int, int | None] = {}  # line -> Key Additions column of its table
    for t in find_tables(lines):
        if not is_cross_branch(t):
            continue
        summary_col = t.column("key additions", "summary", "notes", "purpose")
        for i, name in row_branches(t, lines):
            cross_rows.add(i)
            if name == source:
                source_rows[i] = summary_col
    out: list[str] = []
    skip_next_label: str | None = None
    for i, line in enumerate(lines):
        if i in cross_rows:
            if i in source_rows:
                cells = split_row(line)
                cells[0] = cells[0].replace(f"`{source}`", f"`{new.name}`")
                col = source_rows[i]
                if summary and col is not None and col < len(cells) and plain(cells[col]):
                    lead = "**This branch** — " if "this branch" in cells[col].lower() else ""
                    cells[col] = f" {lead}{summary} "
                line = join_row(line, cells)
            out.append(line)
            continue
        if re.match(rf"\s*[-*]\s+\**`{re.escape(source)}`", line):
            out.append(line)  # the source's own bullet stays: it is another branch now
            bullet = re.match(r"(\s*[-*]\s+)", line)[1]
            text_ = summary or f"PyTorch {new.pytorch} with Python {new.python}, derived from `{source}`."
            out.append(f"{bullet}**`{new.name}`** — {text_}\n")
            continue
        named = _others_named(line, others)
        checkout = re.search(r"\bcheckout\s+([\w./-]+)", line)
        if checkout and checkout[1] not in (source, new.name) or named and "checkout" in line:
            out.append(line)  # `git checkout other && flox build …` is about the other branch
            continue
        new_line = _this_branch(line, source, new, source_python, source_pins, torch_change, cuda_change,
                                packages_only=bool(named))
        if new_line.lstrip().startswith("|"):
            pkgs = [p for p in _PKG_RE.findall(new_line) if parse_package_name(p.split(".nix")[0]) is not None]
            if pkgs and not any(p in packages for p in pkgs):
                cells = split_row(new_line)
                if cells and plain(cells[0]):
                    skip_next_label = cells[0]
                continue  # a variant row of a package the new branch does not build
            if skip_next_label is not None:
                cells = split_row(new_line)
                if cells and not plain(cells[0]):
                    cells[0] = skip_next_label
                    new_line = join_row(new_line, cells)
                skip_next_label = None
        else:
            skip_next_label = None
        out.append(new_line)
    derived = "".join(out)
    docs_all = {**docs, new.name: new}
    checked = check_readme(derived, new.name, docs_all, existing=set(existing) | {new.name}, skip=skip)
    dropped = sum(1 for _ in lines) - len(out)
    if dropped > 0:
        notes.append(f"README: {dropped} variant rows of packages {new.name} does not build were left out")
    return checked.text, notes


def _this_branch(line, source, new, source_python, source_pins, torch_change, cuda_change, packages_only) -> str:
    """A line about the branch itself with the new branch's facts."""
    def pkg(m):
        name = python_swap(m[1], source_python, new.python)
        for old, nv in (cuda_change or {}).items():
            name = cuda_swap(name, old, nv)
        return name

    if packages_only:
        return _PKG_RE.sub(pkg, line)
    line = _PKG_RE.sub(pkg, line)
    line = re.sub(rf"(?<![\w.-]){re.escape(source)}(?![\w-]|\.\d)", new.name, line)
    old_tag, new_tag = python_tag(source_python), python_tag(new.python)
    if old_tag != new_tag:
        line = re.sub(rf"(?<![A-Za-z0-9]){old_tag}(?!\d)", new_tag, line)
        line = re.sub(rf"(?i)(python:?\s*){re.escape(source_python)}(?!\.?\d)", lambda m: m[1] + new.python, line)
    pin = new.pins[0] if new.pins else None
    if pin:
        for old in source_pins:
            if old == pin:
                continue
            line = line.replace(old, pin).replace(f"`{old[:7]}`", f"`{pin[:7]}`").replace(
                f"**{old[:7]}**", f"**{pin[:7]}**")
    if torch_change and torch_change[0] != torch_change[1]:
        old_v, new_v = torch_change
        line = re.sub(rf"(?<![\d.]){re.escape(old_v)}(?![\d]|\.\d)", new_v, line)
        old_mm, new_mm = ".".join(old_v.split(".")[:2]), ".".join(new_v.split(".")[:2])
        if old_mm != new_mm:
            line = re.sub(rf"(PyTorch\s+\**){re.escape(old_mm)}(?![\d]|\.\d)", lambda m: m[1] + new_mm, line)
    if _BANNER_RE.search(line):
        line = re.sub(r"\((\d+) variants\)", f"({new.variants} variants)", line)
        line = re.sub(r"(CUDA\s+)[0-9][0-9./ ]*[0-9]", lambda m: m[1] + "/".join(new.cuda), line, count=1) \
            if new.cuda else line
    return line
