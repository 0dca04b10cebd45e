"""What a derived branch's texts say about the branch, made true of the new branch (pure).

A new branch starts as a copy of its source's recipes, README and manifest. Whatever those texts
state about the source -- its nixpkgs pins (full or short), its Python, its vLLM and PyTorch
versions -- must state the new branch's facts instead. The statements are found from the facts
the reader has about the source (``Facts``), not from a list of phrases:

- a pin is any hex string of 7+ digits that begins one of the source's pins;
- a Python, vLLM or PyTorch version is the source's version as a bounded token; a line that names
  both the source's and the new branch's Python (``Current variants use Python 3.13. To add
  Python 3.12 or 3.11 variants``) swaps them, and a comma list of Pythons after "Python
  Version(s)" that holds the source's becomes the new branch's one Python;
- statements about *another repository* (``build-vllm/main``, the maintainers' ``build-*``
  repositories) follow the new branch's pairing: a vLLM branch pairs with build-vllm's
  ``vllm-<version>`` branch at the new pin (or keeps the source's ref when the vLLM version is
  the same). A branch without a vLLM version has no such pairing, and a ref that another branch's
  README places on another pin cannot be paired either: then the statements about it go (a
  paragraph of a recipe's string or comment, a README section whose heading or opening paragraph
  names it, else the paragraph), and the plan says so. Refs to other ``build-*`` repositories are
  left as written and reported.

May import: config, release.recipes (markdown helpers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.naming import python_tag
from release.recipes.markdown import find_tables, header_refs, split_row

VLLM_NAME_RE = re.compile(r"vllm-(\d+\.\d+(?:\.\d+)?)")
FOREIGN_REF_RE = re.compile(r"(?<![\w./-])(build-[a-z0-9]+)/([A-Za-z0-9][\w.-]*[A-Za-z0-9])")
_HEX_RE = re.compile(r"(?<![0-9a-f])[0-9a-f]{7,40}(?![0-9a-f])")
_PY_LIST_RE = re.compile(r"(?i)\b(python\s+version)s?(\s*:?\s*)(\d\.\d+(?:\s*,\s*\d\.\d+)+)")


def vllm_of(name: str) -> str | None:
    """The vLLM version a branch name certifies (``pytorch-2.9-vllm-0.14.0`` -> ``0.14.0``)."""
    m = VLLM_NAME_RE.search(name)
    return m[1] if m else None


@dataclass(frozen=True)
class Facts:
    """What a branch's texts may state about the branch itself."""

    name: str
    python: str
    pins: tuple[str, ...]
    pytorch: str = ""
    vllm: str | None = None


def _bounded(version: str) -> re.Pattern:
    """``version`` as a token of its own ("3.13" in "Python 3.13" and "python3.13/", not in "13.13" or "3.13.1")."""
    return re.compile(rf"(?<![\d.]){re.escape(version)}(?![\d]|\.\d)")


def foreign_refs(text: str) -> set[str]:
    return {f"{m[1]}/{m[2]}" for m in FOREIGN_REF_RE.finditer(text)}


def foreign_pins(readme: str | None, pins: tuple[str, ...]) -> dict[str, str]:
    """Refs of other repositories a branch's README places on one of the branch's own pins: a
    line naming the ref and a short pin, or a table whose columns are headed by refs."""
    out: dict[str, str] = {}
    if not readme:
        return out

    def pin_in(text: str) -> str | None:
        found = {p for h in _HEX_RE.findall(text) for p in pins if p.startswith(h)}
        return found.pop() if len(found) == 1 else None

    lines = readme.splitlines()
    for line in lines:
        refs = foreign_refs(line)
        pin = pin_in(line) if refs else None
        for ref in refs:
            if pin:
                out.setdefault(ref, pin)
    for t in find_tables(lines):
        refs = {c: r for c, r in header_refs(lines[t.header_line]).items() if FOREIGN_REF_RE.fullmatch(r)}
        for i in t.rows:
            cells = split_row(lines[i])
            for c, ref in refs.items():
                pin = pin_in(cells[c]) if c < len(cells) else None
                if pin:
                    out.setdefault(ref, pin)
    return out


def pairing(source: Facts, new: Facts, refs: set[str], known: dict[str, tuple[str, str]]
            ) -> tuple[dict[str, str | None], list[str]]:
    """Each foreign ref the source's texts name -> the ref the new branch pairs with (None: no
    pairing, its statements go); ``known``: ref -> (pin, branch whose README says so)."""
    out: dict[str, str | None] = {}
    notes: list[str] = []
    new_pin = new.pins[0] if new.pins else None
    for ref in sorted(refs):
        repo = ref.split("/", 1)[0]
        if "vllm" not in repo:
            out[ref] = ref
            notes.append(f"{ref}: torchbot knows no pairing with {repo}; what the source says of it is left as written")
            continue
        if new.vllm is None:
            out[ref] = None
            notes.append(f"{new.name} certifies no vLLM version: what the source says about {ref} was left out")
            continue
        target = ref if new.vllm == source.vllm else f"{repo}/vllm-{new.vllm}"
        there = known.get(target)
        if there and new_pin and there[0] != new_pin:
            out[ref] = None
            notes.append(f"{target} is on nixpkgs {there[0][:7]} (README of {there[1]}), not {new_pin[:7]}: "
                         f"what the source says about {ref} was left out")
            continue
        out[ref] = target
        if target != ref:
            notes.append(f"{ref} -> {target} (vLLM {new.vllm} at nixpkgs {(new_pin or '')[:7]})")
    return out, notes


@dataclass
class Follow:
    """The source's statements, made the new branch's."""

    source: Facts
    new: Facts
    pairs: dict[str, str | None] = field(default_factory=dict)

    # -- markers of statements that go (no pairing)
    def gone(self) -> list[re.Pattern]:
        out = [re.compile(rf"(?<![\w./-]){re.escape(r)}(?![\w-]|\.\w)") for r, t in self.pairs.items() if t is None]
        if out and self.source.vllm and not self.new.vllm:
            out.append(_bounded(self.source.vllm))
        return out

    def says_gone(self, line: str) -> bool:
        for name in (self.source.name, self.new.name):  # a version inside a branch name is no statement
            line = line.replace(name, "")
        return any(p.search(line) for p in self.gone())

    # -- one line
    def line(self, line: str) -> str:
        if any(r in line for r, t in self.pairs.items() if t == r and not self._pairable(r)):
            return line  # about a repository torchbot cannot pair: as written
        line = FOREIGN_REF_RE.sub(lambda m: self.pairs.get(m[0]) or m[0], line)
        line = self._pins(line)
        line = self._python(line)
        s, n = self.source, self.new
        if s.vllm and n.vllm and s.vllm != n.vllm:
            line = _bounded(s.vllm).sub(n.vllm, line)
        if s.pytorch and n.pytorch and s.pytorch != n.pytorch:
            if s.pytorch.count(".") >= 2:  # a bare "2.9" may be part of a branch name: only after "PyTorch"
                line = _bounded(s.pytorch).sub(n.pytorch, line)
            old_mm, new_mm = ".".join(s.pytorch.split(".")[:2]), ".".join(n.pytorch.split(".")[:2])
            if old_mm != new_mm:
                line = re.sub(rf"(PyTorch\s+\**){re.escape(old_mm)}(?![\d]|\.\d)", lambda m: m[1] + new_mm, line)
        return line

    @staticmethod
    def _pairable(ref: str) -> bool:
        return "vllm" in ref.split("/", 1)[0]

    def _pins(self, line: str) -> str:
        new = self.new.pins[0] if self.new.pins else None
        if not new:
            return line

        def swap(m):
            h = m[0]
            if any(p.startswith(h) for p in self.source.pins if p != new):
                return new[: len(h)]
            return h

        return _HEX_RE.sub(swap, line)

    def _python(self, line: str) -> str:
        old, new = self.source.python, self.new.python
        if old == new:
            return line
        line = _PY_LIST_RE.sub(lambda m: f"{m[1]}{m[2]}{new}" if old in re.findall(r"\d\.\d+", m[3]) else m[0], line)
        t_old, t_new = python_tag(old), python_tag(new)
        tag = lambda t: re.compile(rf"(?<![A-Za-z0-9]){t}(?!\d)")  # noqa: E731
        forms_old, forms_new = (_bounded(old), tag(t_old)), (_bounded(new), tag(t_new))
        has_old = any(p.search(line) for p in forms_old)
        if not has_old:
            return line
        if any(p.search(line) for p in forms_new):  # both named: the new branch's is the other one now
            line = forms_new[0].sub("\0V", forms_new[1].sub("\0T", line))
            line = forms_old[0].sub(new, forms_old[1].sub(t_new, line))
            return line.replace("\0V", old).replace("\0T", t_old)
        return forms_old[0].sub(new, forms_old[1].sub(t_new, line))

    # -- whole texts
    def nix(self, text: str) -> str:
        """A recipe: paragraphs of its strings and comments about a pairing that is gone are
        left out; every other line follows the new branch's facts."""
        lines = text.splitlines(keepends=True)
        drop = _nix_drops(lines, self.says_gone) if self.gone() else set()
        return "".join(self.line(line) for i, line in enumerate(lines) if i not in drop)

    def markdown_drops(self, lines: list[str], keep: set[int]) -> set[int]:
        """Line indices of a README's statements about a pairing that is gone (``keep``: lines
        about other branches, never dropped)."""
        if not self.gone():
            return set()
        return _markdown_drops(lines, self.says_gone, keep)


# ---------------------------------------------------------------------------------------
# statements that go


def _text_lines(lines: list[str]) -> set[int]:
    """Indices of Nix lines that are prose: inside a '' string or a # comment."""
    out: set[int] = set()
    inside = False
    for i, line in enumerate(lines):
        if inside or line.lstrip().startswith("#"):
            out.add(i)
        tokens = re.findall(r"'''|''\$|''\\|''", line)
        for tok in tokens:
            if tok == "''":
                inside = not inside
        if inside:
            out.add(i)
    return out


def _paragraph(lines: list[str], i: int) -> tuple[int, int]:
    a = i
    while a > 0 and lines[a - 1].strip():
        a -= 1
    b = i
    while b + 1 < len(lines) and lines[b + 1].strip():
        b += 1
    return a, b


def _nix_drops(lines: list[str], gone) -> set[int]:
    prose = _text_lines(lines)
    drop: set[int] = set()
    def text(j: int) -> bool:  # a prose line of a paragraph (a string's quotes end it)
        return j in prose and bool(lines[j].strip()) and "''" not in lines[j]

    for i, line in enumerate(lines):
        if i in drop or not text(i) or not gone(line):
            continue
        a, b = i, i
        while a > 0 and text(a - 1):
            a -= 1
        while b + 1 < len(lines) and text(b + 1):
            b += 1
        drop.update(range(a, b + 1))
        if a > 0 and not lines[a - 1].strip():
            drop.add(a - 1)
        elif b + 1 < len(lines) and not lines[b + 1].strip():
            drop.add(b + 1)
    return drop


def _headings(lines: list[str]) -> list[tuple[int, int]]:
    out, fence = [], False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6}\s", line):
            out.append((i, len(line) - len(line.lstrip("#"))))
    return out


def _markdown_drops(lines: list[str], gone, keep: set[int]) -> set[int]:
    heads = _headings(lines)
    drop: set[int] = set()
    for i, line in enumerate(lines):
        if i in drop or i in keep or not gone(line):
            continue
        above = [(h, lv) for h, lv in heads if h <= i]
        if above:
            h, level = above[-1]
            first_a = h + 1
            while first_a < len(lines) and not lines[first_a].strip():
                first_a += 1
            intro = set(range(first_a, _paragraph(lines, first_a)[1] + 1)) if first_a < len(lines) else set()
            if i == h or i in intro:
                end = next((j for j, lv in heads if j > h and lv <= level), len(lines))
                if not any(j in keep for j in range(h, end)):
                    drop.update(range(h, end))
                    continue
        a, b = _paragraph(lines, i)
        if any(j in keep for j in range(a, b + 1)):
            continue
        drop.update(range(a, b + 1))
        if b + 1 < len(lines) and not lines[b + 1].strip():
            drop.add(b + 1)
    return drop
