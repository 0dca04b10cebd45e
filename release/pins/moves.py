"""Deliberate PyTorch moves in a pin bump (pure): ``--pytorch X.Y.Z`` and ``--torch-src REV,HASH``.

Without them a bump keeps the PyTorch a branch promises (release.pins.promise). With them the
maintainer says which PyTorch the branch builds after the bump, and torchbot checks that it is
what the recipes will build:

- ``--pytorch X.Y.Z``: the moved recipes that build nixpkgs' torch get the new pin's torch, so
  X.Y.Z must be exactly what that nixpkgs holds;
- ``--torch-src REV,HASH`` (with ``--pytorch X.Y.Z``, or a ``vX.Y.Z`` tag that names it): the moved
  recipes build X.Y.Z from source, by the override release.pins.override writes (recipes that
  already override torch are pointed at the new source); the pin may stay where it is.

A branch whose *name* declares another PyTorch line is refused: a commit cannot change a name.
The branch's declared versions then follow in the same commit (its README's rows, banner and
prose about the branch; ``declared_edit``), and the other branches' README tables get their
rows about it brought in line where the move changes them (release.docs.moved), one commit each,
saying what changed; a README whose rows the move does not change gets no commit.

May import: config, release.recipes (the reader's facts and markdown), release.docs (tables),
release.pins (pure parts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from config.catalog import vtuple
from config.errors import RefusedError, ValidationError
from config.naming import short
from config.policy import BUMP_HEADS
from config.versions import Version
from release.pins.readme import scoped_readme_edit

_NAME_RE = re.compile(r"pytorch-?(\d+\.\d+)")
_TAG_RE = re.compile(r"v(?P<version>\d+\.\d+\.\d+)(?P<pre>[-.+]?(?:rc|a|b|alpha|beta)[0-9.]*)?")
_TORCH_SRC_RE = re.compile(r"^(?P<rev>[A-Za-z0-9][A-Za-z0-9._/-]{0,99}),(?P<hash>sha256-[A-Za-z0-9+/]{43}=)$")


@dataclass
class DocsEdit:
    """Another branch's README with its rows about a branch whose PyTorch moved (its own commit)."""

    branch: str
    tip: str
    changes: dict[str, str]
    message: str


@dataclass(frozen=True)
class Move:
    version: str  # the PyTorch the moved recipes build after the bump
    torch_src: tuple[str, str] | None = None  # (rev, SRI hash) of a source override

    def describe(self) -> str:
        how = f"--torch-src {self.torch_src[0]}" if self.torch_src else f"--pytorch {self.version}"
        return f"PyTorch {self.version} ({how})"


def parse_move(pytorch: str | None, torch_src: str | None) -> Move | None:
    """The move the flags ask for; ValidationError naming the flag on bad input."""
    if not pytorch and not torch_src:
        return None
    src = None
    if torch_src:
        m = _TORCH_SRC_RE.match(torch_src.strip())
        if not m:
            raise ValidationError(
                f"--torch-src '{torch_src}' is not REV,HASH (a PyTorch git tag or commit, and the source's SRI hash "
                "sha256-<44 base64 characters>)."
            )
        src = (m["rev"], m["hash"])
        tagged = _TAG_RE.fullmatch(src[0])
        exact = pytorch and re.fullmatch(r"\d+\.\d+\.\d+", pytorch.strip())
        if tagged and exact and vtuple(tagged["version"]) != vtuple(pytorch.strip()):
            raise ValidationError(
                f"--torch-src {src[0]} is the source of PyTorch {tagged['version']}, but --pytorch says {pytorch}; "
                "give the tag of the version you mean, or leave --pytorch out. Nothing was changed."
            )
        if not pytorch and tagged and not tagged["pre"]:
            pytorch = tagged["version"]
    if not pytorch or not re.fullmatch(r"\d+\.\d+\.\d+", pytorch):
        raise ValidationError(
            f"--pytorch '{pytorch or ''}' is not an exact PyTorch version X.Y.Z (the version the recipes will build"
            + (", needed with a --torch-src that is not a vX.Y.Z tag" if torch_src and not pytorch else "") + ")."
        )
    return Move(pytorch, src)


def check_move(move: Move, branch: str, native: int, kept: dict[str, str], torch_new: str | None,
               new_rev: str) -> list[str]:
    """Refuse a move the recipes would not make; ``native``: moved recipes building nixpkgs'
    torch, ``kept``: recipe -> its source override's version. Returns notes for the plan."""
    named = _NAME_RE.search(branch)
    if named and vtuple(named[1]) != Version(move.version).line:
        raise RefusedError(
            f"Refusing to move '{branch}' to {move.describe()}: its name promises PyTorch {named[1]}, and a commit "
            f"cannot change a name. Create a branch for PyTorch {'.'.join(move.version.split('.')[:2])} instead "
            "(release branch create). Nothing was changed."
        )
    if move.torch_src:
        return [f"{branch}: {len(kept) + native} recipes build PyTorch {move.version} from source "
                f"(rev {move.torch_src[0]})"]
    if not native:
        versions = ", ".join(sorted(set(kept.values()), key=vtuple))
        raise RefusedError(
            f"--pytorch {move.version}: the moved recipes of '{branch}' build torch {versions} from their source "
            "override, not nixpkgs' torch; point the override at a new source with --torch-src REV,HASH. "
            "Nothing was changed."
        )
    if torch_new is None or vtuple(torch_new) != vtuple(move.version):
        raise RefusedError(
            f"--pytorch {move.version} is not what nixpkgs {short(new_rev)} holds (torch {torch_new or 'unknown'}); "
            f"the {native} moved recipes of '{branch}' that build nixpkgs' torch would build that. Nothing was changed."
        )
    notes = []
    if kept:
        notes.append(f"{branch}: {len(kept)} recipes keep their source override "
                     f"({', '.join(sorted(set(kept.values()), key=vtuple))})")
    return notes


def source_edits(recipes: dict[str, str], paths, sources: dict[str, str | None], siblings: set[str], move: Move,
                 read_version) -> dict[str, str]:
    """The moved recipes building ``move.version`` from source: an existing override re-pointed,
    else the real 2.10 recipes' override added (companions importing a sibling recipe follow it
    and are not edited). ``read_version(path, text)``: the reader's PyTorch of a text; a recipe
    that does not read back as the version is refused."""
    from release.pins.override import add_override, torch_swap

    rev, hash_ = move.torch_src
    out: dict[str, str] = {}
    for path in paths:
        if path in siblings:
            continue
        text = recipes[path]
        old = sources.get(path)
        try:
            new = torch_swap(text, old, move.version, rev, hash_) if old else add_override(text, move.version, rev,
                                                                                            hash_)
        except RefusedError as err:
            raise RefusedError(f"--torch-src: cannot write the source override into {path}: {err.message}. "
                               "Nothing was changed.") from None
        if read_version(path, new) != move.version:
            raise RefusedError(f"--torch-src: {PurePosixPath(path).name} does not read back as PyTorch "
                               f"{move.version} after the edit; its override is in a shape torchbot does not "
                               "write. Nothing was changed.")
        out[path] = new
    return out


def _version_forms(old: str) -> tuple:
    full = re.compile(rf"(?<![\d.]){re.escape(old)}(?![\d]|\.\d)")
    mm = ".".join(old.split(".")[:2])
    line = re.compile(rf"(PyTorch\s+\**){re.escape(mm)}(?![\d]|\.\d)")
    return full, line


def declared_edit(readme: str, branch: str, olds: list[str], new: str, branches=()):
    """``readme`` (branch's own) with the PyTorch versions it declares for the branch (``olds``:
    "2.8.0", the promise's "2.8") moved to ``new`` where it speaks about the branch: its rows,
    its column, the banner and prose that names no other branch (release.pins.readme's scoping)."""
    new_mm = ".".join(new.split(".")[:2])
    edit = None
    text = readme
    for old in sorted(set(olds), key=lambda v: -len(v)):
        if not old or vtuple(old) == vtuple(new):
            continue
        full, line = _version_forms(old)
        exact = old.count(".") >= 2

        def mentions(t, full=full, line=line, exact=exact):
            return bool((exact and full.search(t)) or line.search(t))

        def swap(t, full=full, line=line, exact=exact):
            return line.sub(lambda m: m[1] + new_mm, full.sub(new, t) if exact else t)

        edit = scoped_readme_edit(text, branch, old, new, branches, mentions=mentions, swap=swap)
        text = edit.text
    text = _record(text, new)
    return text, (edit.left_as_written if edit else [])


def _record(text: str, new: str) -> str:
    """The torchbot branch record (``<!-- torchbot:branch {...} -->``) says the new PyTorch."""
    return re.sub(r'(<!--\s*torchbot:branch\s+\{.*?"pytorch"\s*:\s*")[^"]*(")', lambda m: m[1] + new + m[2], text,
                  flags=re.S)


def docs_edits(model, moved: dict[str, tuple[str, str, str]], skip) -> dict[str, tuple[str, str]]:
    """Other branches' READMEs with their rows about the moved branches brought in line:
    ``moved``: branch -> (old pin, new pin, PyTorch after the bump). Returns branch -> (new
    README, what its rows now say about the moved branches), only for READMEs the move changes."""
    from release.docs.facts import docs_from_model, skipped
    from release.docs.moved import moved_readme

    before = docs_from_model(model)
    after = dict(before)
    for name, (old_pin, new_pin, version) in moved.items():
        d = before.get(name)
        if d is not None:
            groups = tuple((new_pin if p == old_pin else p, vs) for p, vs in d.groups)
            after[name] = replace(d, pytorch=version, groups=groups)
    out = {}
    for name, bm in model.branches.items():
        if name in moved or bm.readme is None or skipped(name, skip):
            continue
        edit = moved_readme(bm.readme, name, before, after, set(moved), existing=set(model.branches), skip=skip)
        if edit.text != bm.readme:
            out[name] = (edit.text, _what_changed(edit.changed, moved))
    return out


def _what_changed(changed: dict[str, set[str]], moved: dict[str, tuple[str, str, str]]) -> str:
    """'cuda-12_9 builds PyTorch 2.9.1 on nixpkgs 29e29e2', from the facts a README's rows changed."""
    parts = []
    for branch, facts in changed.items():
        if branch not in moved:
            continue
        _old_pin, new_pin, version = moved[branch]
        if "pytorch" in facts and "pin" in facts:
            parts.append(f"{branch} builds PyTorch {version} on nixpkgs {short(new_pin)}")
        elif "pytorch" in facts:
            parts.append(f"{branch} builds PyTorch {version}")
        elif "pin" in facts:
            parts.append(f"{branch} is on nixpkgs {short(new_pin)}")
        else:
            parts.append(f"{branch}'s rows ({', '.join(sorted(facts))})")
    return "; ".join(parts) or ", ".join(moved)


def apply_move(data, move: Move, texts: dict, model, heads: dict[str, str],
               docs_skip=("*-staging", *BUMP_HEADS)) -> None:
    """Write a checked move into the plan: the source override (``--torch-src``), the moved
    branches' declared versions and their commit messages, and the other branches' README rows."""
    from config.catalog_data import load_catalog
    from release.pins.rules import README, commit_message
    from release.recipes.facts import read_recipe

    embedded = load_catalog()

    def version_of(path: str, text: str) -> str | None:
        return read_recipe(embedded, PurePosixPath(path).name, text).pytorch

    moved: dict[str, tuple[str, str, str]] = {}
    for bp in data.branches:
        recipes, readme = texts[bp.branch]
        g, edit = bp.edit, bp.edit
        current = {p: edit.changes.get(p, recipes[p]) for p in g.group.recipes}
        if move.torch_src:
            sources, siblings = _reader_sources(model, bp.branch, current, embedded)
            for path, text in source_edits(current, g.group.recipes, sources, siblings, move, version_of).items():
                _set(edit, path, recipes[path], text)
        if readme is not None:
            # nixpkgs' torch at the pin is a version the README declares for this branch only
            # when the moved recipes build it; otherwise a line with it is about another branch
            olds = [bp.pytorch_old] + ([bp.torch_old] if bp.native else [])
            text, left = declared_edit(edit.changes.get(README, readme), bp.branch, [v for v in olds if v],
                                       move.version, heads)
            edit.readme_left.extend(left)
            _set(edit, README, readme, text)
        old = bp.pytorch_old or bp.torch_old
        bp.message = _message(bp, data.new_rev, move, commit_message)
        moved[bp.branch] = (g.group.pin, data.new_rev, move.version)
        if old != move.version:
            bp.notes.append(f"{bp.branch}: PyTorch {old} -> {move.version}; its README says so")
    if model is None:
        return
    for name, (text, what) in docs_edits(model, moved, docs_skip).items():
        data.docs.append(_docs_edit(name, heads[name], text, what))


def _docs_edit(branch: str, tip: str, text: str, what: str) -> DocsEdit:
    from release.pins.rules import README

    return DocsEdit(branch, tip, {README: text}, f"README: {what}")


def _set(edit, path: str, original: str, text: str) -> None:
    before = edit.changes.get(path, original)
    if text == original:
        edit.changes.pop(path, None)
        return
    edit.changes[path] = text
    edit.lines_changed += sum(1 for a, b in zip(before.splitlines(), text.splitlines(), strict=False) if a != b) + \
        abs(len(text.splitlines()) - len(before.splitlines()))


def _reader_sources(model, branch: str, texts: dict[str, str], embedded) -> tuple[dict[str, str | None], set[str]]:
    """Recipe path -> the version of its source override, and the companions that import a
    sibling recipe (they build against it), from the reader's facts."""
    from release.recipes.facts import read_recipe

    bm = model.branches.get(branch) if model is not None else None
    known = {f.file: f for f in bm.recipes.values()} if bm is not None else {}
    sources, siblings = {}, set()
    for path, text in texts.items():
        f = known.get(path) or read_recipe(embedded, PurePosixPath(path).name, text)
        sources[path] = f.pytorch
        if f.sibling:
            siblings.add(path)
    return sources, siblings


def _message(bp, new_rev: str, move: Move, commit_message) -> str:
    g = bp.edit.group
    old = bp.pytorch_old or bp.torch_old
    if g.pin == new_rev:
        return f"torch: build PyTorch {move.version} from source ({move.torch_src[0]}) on nixpkgs {short(new_rev)}"
    torch = f"{old} -> {move.version}" if old and old != move.version else move.version
    return commit_message(g.pin, new_rev, torch, g.cuda_attrs)
