"""What a branch promises, and the bump guards that keep the promise (pure).

A branch promises a PyTorch major.minor (its name ``pytorch-2.9-...``, its README, the
catalog entry) and builds, per recipe, either nixpkgs' own torch or the version of the
recipe's source override. A bump of one pin group may go ahead only when, at the new pin,

- every recipe of the group that builds nixpkgs' torch gets a torch of the promised
  major.minor (recipes with a source override keep their version whatever nixpkgs has), and
- every CUDA package set the group's recipes use (``cudaPackages_12_9``, the major alias
  ``cudaPackages_13``) exists.

Refusals name the promise, where it is declared, and what the new pin has.

May import: config, release.recipes (the reader's README and recipe facts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.catalog import vtuple
from config.errors import CudaMissing, PromiseRefused
from config.naming import short
from config.versions import Version
from release.recipes.reader import readme_row

_NAME_RE = re.compile(r"pytorch-?(\d+\.\d+)")


@dataclass(frozen=True)
class Promise:
    branch: str
    pytorch: str | None  # the most specific version declared ("2.9.1"); None: nothing declares one
    declared_by: tuple[str, ...] = ()  # "branch name", "README banner", "catalog", ...
    overrides: dict = field(default_factory=dict)  # recipe path -> source-override version

    @property
    def major_minor(self) -> tuple[int, ...] | None:
        return Version(self.pytorch).line if self.pytorch else None

    def describe(self) -> str:
        where = ", ".join(self.declared_by) or "nothing"
        return f"PyTorch {self.pytorch} ({where})"


def branch_promise(branch: str, recipes: dict[str, str], readme: str | None, catalog_pytorch: str | None = None,
                   source_of=None) -> Promise:
    """The promise of ``branch`` from its name, its own README row (the reader's ``readme_row``),
    its catalog entry, and the recipes' source overrides (``source_of(path, text) -> version |
    None``, the reader's facts)."""
    claims: list[tuple[str, str]] = []
    by_name = _NAME_RE.search(branch)
    if by_name:
        claims.append(("branch name", by_name[1]))
    in_readme = readme_row(readme, branch, "PyTorch")
    if in_readme:
        claims.append(("README", in_readme))
    if catalog_pytorch and catalog_pytorch != "unknown":
        claims.append(("catalog", catalog_pytorch))
    overrides = {}
    if source_of is not None:
        for path, text in recipes.items():
            v = source_of(path, text)
            if v:
                overrides[path] = v
    if not claims and overrides:
        versions = sorted(set(overrides.values()), key=vtuple)
        claims.append(("recipes' source override", versions[-1]))
    if not claims:
        return Promise(branch, None, (), overrides)
    # the branch name is the promise's major.minor; the most specific claim of that line wins
    line = Version(claims[0][1]).line
    same = [(w, v) for w, v in claims if Version(v).line == line]
    best = max((v for _, v in same), key=lambda v: len(vtuple(v)))
    return Promise(branch, best, tuple(dict.fromkeys(w for w, _ in same)), overrides)


def check_torch(promise: Promise, group_recipes: tuple[str, ...], new_rev: str, torch_new: str) -> list[str]:
    """Refuse when recipes of the moved group that build nixpkgs' torch would build a torch
    of another major.minor than the promise; return notes (e.g. a patch-level difference)."""
    if promise.major_minor is None:
        return []
    native = [p for p in group_recipes if p not in promise.overrides]
    kept = [p for p in group_recipes if p in promise.overrides]
    if not native:
        versions = sorted({promise.overrides[p] for p in kept}, key=vtuple)
        return [f"{promise.branch}: the moved recipes build torch {', '.join(versions)} from their source override; "
                f"nixpkgs {short(new_rev)} has torch {torch_new}"]
    if Version(torch_new).line != promise.major_minor:
        kept_note = f" ({len(kept)} others keep theirs by a source override)" if kept else ""
        raise PromiseRefused(
            f"Refusing to bump '{promise.branch}': it promises {promise.describe()}, but nixpkgs {short(new_rev)} "
            f"has torch {torch_new}, and {len(native)} of the moved recipes build nixpkgs' torch with no source "
            f"override{kept_note}. Nothing was changed."
        )
    notes = []
    if len(vtuple(promise.pytorch)) > 2 and vtuple(torch_new) != vtuple(promise.pytorch):
        notes.append(
            f"{promise.branch}: promises {promise.describe()}; nixpkgs {short(new_rev)} has torch {torch_new} "
            "(same major.minor): the README's version will need updating"
        )
    return notes


def check_cuda(branch: str, attrs: tuple[str, ...], users, new_rev: str, has, available) -> None:
    """Refuse when a CUDA package set the moved recipes use is missing at ``new_rev``.
    ``has(rev, attr) -> bool``; ``available(rev) -> list of sets`` and ``users`` (attr -> recipe
    count, or a function returning it) are for the message."""
    missing = [a for a in attrs if not has(new_rev, a)]
    if not missing:
        return
    there = available(new_rev)
    counts = users() if callable(users) else users
    used = ", ".join(f"{a} ({counts.get(a, 0)} recipes)" for a in missing)
    raise CudaMissing(
        f"Refusing to bump '{branch}': its recipes build with {used}, which nixpkgs {short(new_rev)} does not have "
        f"(it has {', '.join(there) or 'no cudaPackages sets'}). Nothing was changed."
    )
