"""Where a recipe builds: its platforms and required system features, as the repository
reader models them (``release.recipes.facts.read_recipe``; pure: text in, target out).

The platforms are the recipe's ``meta.platforms`` less what its CPU ISA cannot run on (the real
``pytorch-python313-cpu-avx2`` also lists ``aarch64-linux``: ``-mavx2`` code cannot run on ARM,
so it builds on x86_64-linux only, and ``note`` says so); a list inherited from nixpkgs follows
the ISA. The features are its ``requiredSystemFeatures`` (the real recipes all ask for
``big-parallel``). Builds (local skips, GitHub runners) and bump PRs (rebuilds per platform) take
a variant's platform from here and nowhere else.

May import: config, release.recipes.facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.catalog import Catalog
from config.errors import TorchbotError
from release.recipes.facts import RECIPES_DIR, read_recipe


def recipe_catalog() -> Catalog:
    """The catalog whose hardware facts (ISA flags and platforms) the reader uses: the
    packaged one with local branches, or without them when that file is broken."""
    from config.catalog_data import build_catalog, load_catalog

    try:
        return load_catalog()
    except TorchbotError:  # a broken local branches file must not stop builds or bumps
        return build_catalog()


@dataclass(frozen=True)
class BuildTarget:
    """What a recipe needs from a builder."""

    platforms: tuple[str, ...]  # the platforms it builds on, preferred first
    features: tuple[str, ...] = ()  # requiredSystemFeatures torchbot routes by
    note: str | None = None  # where the recipe's list and the hardware disagree

    @property
    def platform(self) -> str | None:
        return self.platforms[0] if self.platforms else None


def recipe_target(package: str, text: str, catalog: Catalog) -> BuildTarget:
    """The build target of recipe ``package`` (its file name without ``.nix``) with ``text``."""
    f = read_recipe(catalog, f"{RECIPES_DIR}/{package}.nix", text)
    note = next((n for n in f.notes if n.startswith("meta.platforms")), None)
    return BuildTarget(tuple(f.platforms), ("big-parallel",) if f.big_parallel else (), note)
