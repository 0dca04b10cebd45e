"""The README of a derived branch: the source branch's README with its branch-specific facts
updated, every other line as the maintainers wrote it (pure).

- The banner (``You are on the `B` branch — PyTorch … + CUDA … (N variants)``), lines about
  the branch itself (its name, package names, Python, pins, PyTorch) follow the new branch.
- Lines that name another branch keep what they say about it (``git checkout other && flox
  build …`` untouched; elsewhere only this branch's package names change).
- The source's entry in a branch bullet list stays and the new branch gets its own bullet.
- The cross-branch tables: the source's rows become the new branch's rows, followed by the
  source's rows as another branch's (no bold, no ⬅️, no "This branch —"), then
  :func:`release.docs.tables.check_readme` states the facts of every branch.
- Statements about the source's pins, Python, vLLM and PyTorch follow the new branch, and
  statements about other repositories its pairing (release.branches.statements); a clause about
  a vLLM pairing the new branch does not have says its Python instead.
- Rows of variant tables naming a package the new branch does not have are dropped.

May import: config, release.recipes, release.docs, release.branches.derive, release.branches.statements.
"""

from __future__ import annotations

import re

from config.naming import parse_package_name
from release.branches.derive import cuda_swap, python_swap
from release.branches.statements import Follow
from release.docs.facts import UNKNOWN, BranchDoc
from release.docs.tables import check_readme, is_cross_branch
from release.recipes.markdown import Table, find_tables, join_row, plain, replace_text, row_branches, split_row

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
    follow: Follow,
    packages: set[str],
    docs: dict[str, BranchDoc],
    existing: set[str],
    skip=(),
    summary: str | None = None,
    cuda_change: dict[str, str] | None = None,  # source CUDA -> new CUDA (renamed versions only)
) -> tuple[str, list[str]]:
    """(README text, notes). ``follow``: the source's statements made the new branch's
    (release.branches.statements)."""
    notes: list[str] = []
    lines = text.splitlines(keepends=True)
    others = (set(existing) | set(docs)) - {source, new.name}
    cross_rows: set[int] = set()
    source_rows: dict[int, Table] = {}  # line -> its table
    for t in find_tables(lines):
        if not is_cross_branch(t):
            continue
        for i, name in row_branches(t, lines):
            cross_rows.add(i)
            if name == source:
                source_rows[i] = t
    about_others = {i for i, line in enumerate(lines) if i not in source_rows and _others_named(line, others)}
    banner = {i for i, line in enumerate(lines) if _BANNER_RE.search(line)}  # rewritten, never dropped
    dropped_statements = follow.markdown_drops(lines, cross_rows | about_others | banner)
    out: list[str] = []
    skip_next_label: str | None = None
    for i, line in enumerate(lines):
        if i in dropped_statements:
            continue
        if i in cross_rows:
            if i in source_rows:
                out.append(_source_row(line, source, new, follow, source_rows[i], summary))
                if i + 1 not in source_rows:  # the source's block, as another branch's rows now, after the new one
                    first = i
                    while first - 1 in source_rows:
                        first -= 1
                    out.extend(_as_other_row(lines[j]) for j in range(first, i + 1))
                continue
            out.append(line)
            continue
        if re.match(rf"\s*[-*]\s+\**`{re.escape(source)}`", line):
            out.append(line)  # the source's own bullet stays: it is another branch now
            bullet = re.match(r"(\s*[-*]\s+)", line)[1]
            text_ = summary or f"PyTorch {new.pytorch} with Python {new.python}, derived from `{source}`."
            out.append(f"{bullet}**`{new.name}`** — {text_}\n")
            continue
        named = i in about_others
        checkout = re.search(r"\bcheckout\s+([\w./-]+)", line)
        if (checkout and checkout[1] not in (source, new.name)) or (named and "checkout" in line):
            out.append(line)  # `git checkout other && flox build …` is about the other branch
            continue
        new_line = _this_branch(line, source, new, follow, cuda_change, packages_only=named)
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
        if out and i > 0 and new_line == line and _is_separator(line) and out[-1] != lines[i - 1]:
            new_line = _fit_separator(lines[i - 1], out[-1], line)
        out.append(new_line)
    derived = "".join(out)
    docs_all = {**docs, new.name: new}
    checked = check_readme(derived, new.name, docs_all, existing=set(existing) | {new.name}, skip=skip)
    dropped = len(lines) + len(source_rows) - len(out) - len(dropped_statements)
    if dropped > 0:
        notes.append(f"README: {dropped} variant rows of packages {new.name} does not build were left out")
    if dropped_statements:
        notes.append(f"README: {len(dropped_statements)} lines about a pairing {new.name} does not have were left out")
    return checked.text, notes


def _as_other_row(line: str) -> str:
    """The source's own row (bold, marked ⬅️, "This branch — …") as the row of another branch."""
    cells = split_row(line)
    out = []
    for cell in cells:
        text = cell.replace("**", "").replace("⬅️", "").replace("⬅", "").replace("(this branch)", "")
        text = re.sub(r"(?i)\bthis branch\s*(—|-|:)\s*", "", text)
        text = re.sub(r"\(\s*\)", "", text)
        out.append(f" {text.strip()} " if text.strip() else cell)
    return join_row(line, out)


def _is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\s*\|(\s*:?-{2,}:?\s*\|)+\s*", line))


def _fit_separator(old_header: str, new_header: str, sep: str) -> str:
    """A table's separator under a renamed header: columns whose dashes matched the header
    cell's width still do."""
    if not new_header.lstrip().startswith("|"):
        return sep
    old_cells, new_cells, cells = split_row(old_header), split_row(new_header), split_row(sep)
    if not len(old_cells) == len(new_cells) == len(cells):
        return sep
    for c, (o, n) in enumerate(zip(old_cells, new_cells, strict=True)):
        if o != n and len(o) == len(cells[c]):
            left, right = cells[c].startswith(":"), cells[c].endswith(":")
            cells[c] = (":" if left else "") + "-" * (len(n) - left - right) + (":" if right else "")
    return join_row(sep, cells)


def _masked(line: str, source: str, new: str, fn) -> str:
    """``fn(line)`` with the source's name turned into the new branch's name, untouched by ``fn``."""
    pat = re.compile(rf"(?<![\w.-]){re.escape(source)}(?![\w-]|\.\d)")
    return fn(pat.sub("\0B", line)).replace("\0B", new)


def _source_row(line: str, source: str, new: BranchDoc, follow: Follow, table: Table, summary: str | None) -> str:
    """The source's row of a cross-branch table, become the new branch's (the source gets a row
    of its own from the tables check)."""
    cells = split_row(line)
    cells[0] = cells[0].replace(f"`{source}`", f"`{new.name}`")
    for c in range(1, len(cells)):
        cells[c] = _masked(cells[c], source, new.name, follow.line)
    if not set(follow.new.pins) <= set(follow.source.pins):
        cells = _new_nixpkgs(cells, table, new)
    summary_col = table.column("key additions", "summary", "notes", "purpose")
    if _lost_vllm(follow):
        cells = [cells[0]] + [_without_vllm(c, new.python) for c in cells[1:]]
    if summary_col is not None and summary_col < len(cells) and plain(cells[summary_col]) and summary:
        lead = "**This branch** — " if "this branch" in cells[summary_col].lower() else ""
        cells[summary_col] = f" {lead}{summary} "
    return join_row(line, cells)


def _new_nixpkgs(cells: list[str], table: Table, new: BranchDoc) -> list[str]:
    """A row's versions that nixpkgs decides, on a new pin: the cuDNN the new branch's facts give
    (or unknown), CUDA as major.minor ("12.9.1" was the old nixpkgs' 12.9), never the source's."""
    col = table.column("cudnn")
    if col is not None and col < len(cells) and re.search(r"\d", plain(cells[col])):
        cells[col] = replace_text(cells[col], new.cudnn or UNKNOWN)
    col = table.column("cuda")
    if col is not None and col < len(cells):
        cells[col] = re.sub(r"(?<![\d.])(\d+\.\d+)\.\d+(?![\d.])", r"\1", cells[col])
    return cells


def _this_branch(line, source, new, follow, cuda_change, packages_only) -> str:
    """A line about the branch itself with the new branch's facts."""
    def pkg(m):
        name = python_swap(m[1], follow.source.python, new.python) if packages_only else m[1]
        for old, nv in (cuda_change or {}).items():
            name = cuda_swap(name, old, nv)
        return name

    if packages_only:
        return _PKG_RE.sub(pkg, line)
    line = _masked(line, source, new.name, follow.line)
    line = _PKG_RE.sub(pkg, line)
    if _BANNER_RE.search(line):
        line = re.sub(r"\((\d+) variants\)", f"({new.variants} variants)", line)
        line = re.sub(r"\((\d+) variants,([^)]*)\)", lambda m: _banner_extra(m, new, follow), line)
        line = re.sub(r"(CUDA\s+)[0-9][0-9./ ]*[0-9]", lambda m: m[1] + "/".join(new.cuda), line, count=1) \
            if new.cuda else line
    return line


def _banner_extra(m, new: BranchDoc, follow: Follow) -> str:
    extra = _without_vllm(m[2], new.python) if _lost_vllm(follow) else m[2]
    return f"({new.variants} variants,{extra})"


_VLLM_CLAUSE = re.compile(r"(?i)(?:^|(?<=[(—,]))(\s*)[^()—,|]*\bvllm\b[^()—,|]*?(\s*)(?=$|[()—,|])")


def _without_vllm(text: str, python: str) -> str:
    """A clause about the source's vLLM pairing ("vLLM 0.14.0 pin-aligned") said of a branch
    that has none: the branch's Python instead, as the maintainers write it."""
    return _VLLM_CLAUSE.sub(lambda m: f"{m[1]}Python {python}{m[2]}", text)


def _lost_vllm(follow: Follow) -> bool:
    return bool(follow.source.vllm and not follow.new.vllm)
