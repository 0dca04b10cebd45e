"""What a branch's README declares about the branch itself (pure).

The real READMEs open with ``> **You are on the `B` branch** — PyTorch 2.10 + CUDA ... (N
variants)`` and list every branch in ``Branch``-first tables; the README's own branch's row
(first cell bold, ⬅️ or "this branch") carries its PyTorch, CUDA and Python. These are the
README's promises; the repository reader and the pin-bump guards compare them with what the
recipes and nixpkgs really build.

May import: config, release.recipes.markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from release.recipes.markdown import find_tables, is_branch_table, plain, row_branches, split_row

_BANNER_RE = re.compile(r"You are on the `(?P<branch>[^`]+)` branch.*?PyTorch\s+(?P<pytorch>\d+\.\d+(?:\.\d+)?)")
_NAME_RE = re.compile(r"pytorch-?(\d+\.\d+)")
_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?")


@dataclass(frozen=True)
class ReadmeClaims:
    pytorch: str | None = None  # the most specific version the README gives for its branch
    python: str | None = None
    where: tuple[str, ...] = ()  # "README banner", "README table 'Version Matrix'"


def readme_claims(text: str | None, branch: str) -> ReadmeClaims:
    """What ``text`` (branch ``branch``'s README) says ``branch`` builds."""
    if not text:
        return ReadmeClaims()
    found: list[tuple[str, str]] = []  # (where, version)
    python = None
    m = _BANNER_RE.search(text[:4000])
    if m and m["branch"] == branch:
        found.append(("README banner", m["pytorch"]))
    lines = text.splitlines(keepends=True)
    for t in find_tables(lines):
        if not is_branch_table(t):
            continue
        col = t.column("pytorch")
        pycol = t.column("python")
        for i, name in row_branches(t, lines):
            if name != branch:
                continue
            cells = split_row(lines[i])
            if col is not None and col < len(cells):
                v = _VERSION_RE.search(plain(cells[col]))
                if v:
                    found.append((f"README table '{t.heading or 'Branch'}'", v[0]))
            if pycol is not None and pycol < len(cells) and python is None:
                p = re.fullmatch(r"3\.\d+", plain(cells[pycol]))
                python = p[0] if p else None
    if not found:
        return ReadmeClaims(python=python)
    best = max((v for _, v in found), key=lambda v: len(v.split(".")))
    return ReadmeClaims(best, python, tuple(dict.fromkeys(w for w, _ in found)))


def name_claim(branch: str) -> str | None:
    """The PyTorch major.minor a branch name promises ('pytorch-2.9-python311' -> '2.9')."""
    m = _NAME_RE.search(branch)
    return m[1] if m else None
