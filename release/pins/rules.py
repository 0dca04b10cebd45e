"""nixpkgs pins in recipe texts: find them, group recipes by pin, plan and apply a bump.

Pure functions over strings (no git, no HTTP). A recipe pins nixpkgs in its
``fetchTarball`` URL ``https://github.com/NixOS/nixpkgs/archive/<40 hex>.tar.gz``; a branch
may carry several pins, one per group of recipes (the real ``pytorch-2.10-python313`` has
three). A bump acts on one pin group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from config.catalog import vtuple
from config.errors import RefusedError, ValidationError
from config.naming import REV_RE, parse_package_name, short
from config.versions import Version

RECIPES_DIR = ".flox/pkgs"
README = "README.md"
PIN_RE = re.compile(r"(https://github\.com/NixOS/nixpkgs/archive/)([0-9a-f]{40})(\.tar\.gz)")
CUDA_ATTR_RE = re.compile(r"\bcudaPackages_(\d+)(?:_(\d+))?\b")


def validate_rev(rev: str) -> str:
    """A full nixpkgs commit id: 40 lowercase hex characters."""
    value = (rev or "").strip().lower()
    if not REV_RE.match(value):
        raise ValidationError(f"'{rev}' is not a nixpkgs commit: give the full 40-character hex SHA.")
    return value


def recipe_pins(text: str) -> list[str]:
    return [m.group(2) for m in PIN_RE.finditer(text)]


def cuda_attrs(text: str) -> set[str]:
    """The nixpkgs CUDA package sets a recipe uses ('cudaPackages_12_9')."""
    return {f"cudaPackages_{a}_{b}" if b else f"cudaPackages_{a}" for a, b in CUDA_ATTR_RE.findall(text)}


def attr_version(attr: str) -> str:
    """'cudaPackages_12_9' -> '12.9'; 'cudaPackages_13' -> '13'."""
    return attr.split("_", 1)[1].replace("_", ".")


def recipe_label(path: str) -> str:
    """What a recipe builds, for group descriptions: 'CUDA 12.9', 'CPU' or 'darwin'."""
    parsed = parse_package_name(PurePosixPath(path).stem)
    if parsed is None:
        return "other"
    if parsed.is_darwin:
        return "darwin"
    if parsed.cuda:
        return f"CUDA {parsed.cuda}"
    return "CPU"


def _label_key(label: str) -> tuple:
    if label.startswith("CUDA "):
        return (0, vtuple(label[5:]))
    return (1, label)


@dataclass(frozen=True)
class PinGroup:
    """The recipes of one branch that share one nixpkgs pin."""

    pin: str
    recipes: tuple[str, ...]
    cuda_attrs: tuple[str, ...]  # package sets these recipes use, sorted
    labels: tuple[str, ...]  # 'CUDA 12.8', 'CPU', 'darwin'

    @property
    def cuda_versions(self) -> tuple[str, ...]:
        return tuple(attr_version(a) for a in self.cuda_attrs)

    def describe(self) -> str:
        return f"{short(self.pin)} ({', '.join(self.labels)}; {len(self.recipes)} recipes)"

    def to_dict(self) -> dict:
        return {
            "pin": self.pin,
            "recipes": len(self.recipes),
            "cuda": list(self.cuda_versions),
            "labels": list(self.labels),
        }


def find_groups(recipes: dict[str, str]) -> list[PinGroup]:
    """Group recipe paths by the pin they carry. Recipes without a pin are ignored; a recipe
    carrying two different pins is malformed."""
    by_pin: dict[str, list[str]] = {}
    attrs: dict[str, set[str]] = {}
    labels: dict[str, set[str]] = {}
    for path in sorted(recipes):
        pins = set(recipe_pins(recipes[path]))
        if not pins:
            continue
        if len(pins) > 1:
            raise ValidationError(
                f"Recipe {path} carries several nixpkgs pins ({', '.join(short(p) for p in sorted(pins))}); "
                "fix it by hand before bumping."
            )
        pin = pins.pop()
        by_pin.setdefault(pin, []).append(path)
        attrs.setdefault(pin, set()).update(cuda_attrs(recipes[path]))
        labels.setdefault(pin, set()).add(recipe_label(path))
    groups = [
        PinGroup(
            pin,
            tuple(paths),
            tuple(sorted(attrs[pin], key=lambda a: vtuple(attr_version(a)))),
            tuple(sorted(labels[pin], key=_label_key)),
        )
        for pin, paths in by_pin.items()
    ]
    groups.sort(key=lambda g: (-len(g.recipes), g.pin))
    return groups


def select_group(
    branch: str, groups: list[PinGroup], *, cuda: str | None = None, from_pin: str | None = None
) -> PinGroup:
    """The pin group a bump acts on. A branch with one group needs no selector; a branch with
    several needs ``cuda`` (a CUDA version one group's recipes use) or ``from_pin`` (a prefix
    of one group's pin)."""
    if not groups:
        raise RefusedError(f"Branch '{branch}' has no recipe with a nixpkgs pin; nothing to bump.")
    listing = "; ".join(g.describe() for g in groups)
    chosen = groups
    if from_pin:
        prefix = from_pin.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{4,40}", prefix):
            raise ValidationError(f"--from-pin '{from_pin}' is not a commit id prefix (4 to 40 hex characters).")
        chosen = [g for g in chosen if g.pin.startswith(prefix)]
        if not chosen:
            raise RefusedError(f"Branch '{branch}' has no pin starting with {prefix}. Its pin groups: {listing}.")
    if cuda:
        chosen = [g for g in chosen if cuda in g.cuda_versions or f"CUDA {cuda}" in g.labels]
        if not chosen:
            raise RefusedError(f"Branch '{branch}' has no recipes for CUDA {cuda}. Its pin groups: {listing}.")
    if len(chosen) > 1:
        raise RefusedError(
            f"Branch '{branch}' carries {len(groups)} nixpkgs pins, one per group of recipes: {listing}. "
            "Choose one with --cuda A.B or --from-pin OLD."
        )
    return chosen[0]


def rewrite_recipe(text: str, old: str, new: str) -> str:
    """The recipe with pin ``old`` replaced by ``new`` (only inside the fetchTarball URL)."""
    return PIN_RE.sub(lambda m: m.group(1) + new + m.group(3) if m.group(2) == old else m.group(0), text)


def rewrite_readme(text: str, branch: str, old: str, new: str, branches=()) -> str:
    """The README of ``branch`` with pin ``old`` moved to ``new`` only where it speaks about
    ``branch``'s moved pin group (see :mod:`release.pins.readme`)."""
    from release.pins.readme import scoped_readme_edit

    return scoped_readme_edit(text, branch, old, new, branches).text


def commit_message(old: str, new: str, torch: str | None, cuda_sets: tuple[str, ...]) -> str:
    details = []
    if torch:
        details.append(f"torch {torch}")
    details.extend(cuda_sets)
    suffix = f" ({', '.join(details)})" if details else ""
    return f"nixpkgs: bump pin {short(old)} -> {short(new)}{suffix}"


def major_minor(version: str) -> tuple[int, ...]:
    return Version(version).line


@dataclass
class BranchEdit:
    """The planned edit of one branch: new file contents by path."""

    branch: str
    group: PinGroup
    new_pin: str
    changes: dict[str, str] = field(default_factory=dict)
    lines_changed: int = 0
    readme_left: list[str] = field(default_factory=list)  # README lines naming the pin with another branch

    @property
    def up_to_date(self) -> bool:
        return self.group.pin == self.new_pin


def plan_edit(
    branch: str, group: PinGroup, new_pin: str, recipes: dict[str, str], readme: str | None, branches=()
) -> BranchEdit:
    edit = BranchEdit(branch, group, new_pin)
    if edit.up_to_date:
        return edit
    for path in group.recipes:
        text = recipes[path]
        new_text = rewrite_recipe(text, group.pin, new_pin)
        if new_text != text:
            edit.changes[path] = new_text
            edit.lines_changed += sum(
                1 for a, b in zip(text.splitlines(), new_text.splitlines(), strict=False) if a != b
            )
    if readme is not None:
        from release.pins.readme import scoped_readme_edit

        scoped = scoped_readme_edit(readme, branch, group.pin, new_pin, branches)
        edit.readme_left = scoped.left_as_written
        new_readme = scoped.text
        if new_readme != readme:
            edit.changes[README] = new_readme
            edit.lines_changed += sum(
                1 for a, b in zip(readme.splitlines(), new_readme.splitlines(), strict=False) if a != b
            )
    return edit
