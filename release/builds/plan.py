"""What a build covers (pure, no I/O): the items of a build plan, chosen by globs,
``--changed-only`` against the last successful recipe blob and ``--resume``; the companion ->
pytorch ordering; the nixpkgs pin of a recipe.

May import: config. Never git, HTTP, processes or the state DB.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

RECIPE_DIR = ".flox/pkgs"
KINDS = ("pytorch", "torchvision", "torchaudio")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_PIN_RE = re.compile(r"nixpkgs/archive/([0-9a-f]{7,40})")
_IMPORT_RE = re.compile(r"import\s+\./((?:pytorch)[A-Za-z0-9._+-]*)\.nix")



@dataclass(frozen=True)
class BuildItem:
    package: str
    blob: str
    pin: str | None = None
    after: str | None = None  # the pytorch variant a companion waits for (when in this build)

    @property
    def kind(self) -> str:
        return self.package.split("-", 1)[0]


@dataclass
class BuildPlan:
    repo: Path
    branch: str
    commit: str
    items: list[BuildItem]
    unchanged: list[str] = field(default_factory=list)
    backend: str = "local"

    def to_dict(self) -> dict:
        return {
            "branch": self.branch,
            "commit": self.commit,
            "backend": self.backend,
            "build": [
                {"package": i.package, "recipe_blob": i.blob, "pin": i.pin, "after": i.after} for i in self.items
            ],
            "unchanged": list(self.unchanged),
        }

    def text(self) -> str:
        lines = [f"Build {len(self.items)} variant(s) of {self.branch} at {self.commit[:12]} ({self.backend})."]
        for i in self.items:
            lines.append(f"  {i.package}" + (f"  (after {i.after})" if i.after else ""))
        if self.unchanged:
            lines.append(f"{len(self.unchanged)} unchanged since their last successful build: skipped.")
        return "\n".join(lines)


def recipe_pin(text: str) -> str | None:
    """The nixpkgs commit a recipe fetches, if it names one."""
    m = _PIN_RE.search(text)
    return m.group(1) if m else None


def companion_of(package: str, text: str, packages: Iterable[str]) -> str | None:
    """The pytorch variant a torchvision/torchaudio recipe builds against: the recipe's
    ``import ./pytorch-...nix``, else the same name with the pytorch prefix."""
    kind = package.split("-", 1)[0]
    if kind == "pytorch":
        return None
    m = _IMPORT_RE.search(text)
    if m:
        return m.group(1)
    candidate = "pytorch-" + package.split("-", 1)[1]
    return candidate if candidate in set(packages) else None


def select_packages(packages: Iterable[str], globs: Iterable[str] | None) -> list[str]:
    pkgs = sorted(packages)
    globs = [g for g in (globs or []) if g]
    if not globs:
        return pkgs
    chosen = [p for p in pkgs if any(fnmatch.fnmatchcase(p, g) for g in globs)]
    return chosen


def order_items(items: list[BuildItem]) -> list[BuildItem]:
    """pytorch variants first, then companions: a stable order that respects ``after``."""
    return sorted(items, key=lambda i: (i.after is not None, i.package))


def plan_items(
    recipes: dict[str, str],
    texts: dict[str, str],
    selected: list[str],
    *,
    last_success_blobs: dict[str, str] | None = None,
) -> tuple[list[BuildItem], list[str]]:
    """The items to build for ``selected`` packages. With ``last_success_blobs`` (changed-only)
    a package is built when its blob differs from its last success, or when the pytorch
    variant it imports is being built. Returns (items, unchanged)."""
    deps = {p: companion_of(p, texts.get(p, ""), recipes) for p in selected}
    chosen = set(selected)
    if last_success_blobs is not None:
        chosen = {p for p in selected if last_success_blobs.get(p) != recipes[p]}
        chosen |= {p for p in selected if deps[p] and deps[p] in chosen}
    items = [
        BuildItem(p, recipes[p], recipe_pin(texts.get(p, "")), deps[p] if deps[p] in chosen else None)
        for p in selected
        if p in chosen
    ]
    unchanged = [p for p in selected if p not in chosen]
    return order_items(items), unchanged
