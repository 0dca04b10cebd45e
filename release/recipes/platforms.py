"""Where a recipe can be built: its platforms and required system features, read from the
recipe text (pure, no I/O; ``isa_platforms`` reads the catalog's hardware data).

The platforms are the recipe's ``meta.platforms``; the features its
``requiredSystemFeatures`` (the real recipes all ask for ``big-parallel``). Hardware wins over
the text: a recipe whose CPU ISA runs on one platform only (``-mavx2`` code cannot run on
ARM) builds on that platform even when its ``meta.platforms`` lists more (the real
``pytorch-python313-cpu-avx2`` lists ``aarch64-linux`` too), and the target says so in
``note``. A recipe without ``meta.platforms`` gets the platform of its package name (ISA, or
darwin).

May import: config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from config.naming import parse_package_name

_PLATFORMS_RE = re.compile(r"\bplatforms\s*=\s*\[([^\]]*)\]")
_FEATURES_RE = re.compile(r"\brequiredSystemFeatures\s*=\s*\[([^\]]*)\]")
_STRING_RE = re.compile(r'"([^"\\]*)"')
_COMMENT_RE = re.compile(r"#[^\n]*")


def isa_platforms() -> dict[str, str]:
    """CPU ISA build name -> the platform its code runs on, from the catalog's hardware data
    (empty when the catalog cannot load: the recipes' own lists still apply)."""
    from config.catalog import load_catalog

    try:
        return {name: isa.platform for name, isa in load_catalog().isas.items()}
    except Exception:  # a broken local branches file must not stop builds or bumps
        return {}


@dataclass(frozen=True)
class BuildTarget:
    """What a recipe needs from a builder."""

    platforms: tuple[str, ...]  # the platforms it builds on, preferred first
    features: tuple[str, ...] = ()  # requiredSystemFeatures
    note: str | None = None  # where the text and the hardware disagree

    @property
    def platform(self) -> str | None:
        return self.platforms[0] if self.platforms else None


def _strings(body: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_STRING_RE.findall(body)))


def _name_platform(package: str, isa_platforms: Mapping[str, str]) -> str | None:
    parsed = parse_package_name(package)
    if parsed is None:
        return None
    if parsed.is_darwin:
        return "aarch64-darwin"
    return isa_platforms.get(parsed.cpu_isa or "")


def recipe_target(package: str, text: str, isa_platforms: Mapping[str, str]) -> BuildTarget:
    """The build target of recipe ``package`` with ``text``. ``isa_platforms`` maps a CPU ISA
    build name (``avx2``, ``armv9``) to the one platform its code runs on (the catalog's
    hardware facts)."""
    code = _COMMENT_RE.sub("", text)
    m = _PLATFORMS_RE.search(code)
    listed = _strings(m.group(1)) if m else ()
    f = _FEATURES_RE.search(code)
    features = _strings(f.group(1)) if f else ()
    by_name = _name_platform(package, isa_platforms)
    if not listed:
        return BuildTarget((by_name,) if by_name else (), features)
    if by_name is None or listed == (by_name,):
        return BuildTarget(listed, features)
    if by_name in listed:
        dropped = ", ".join(p for p in listed if p != by_name)
        return BuildTarget(
            (by_name,), features,
            f"meta.platforms also lists {dropped}, but its CPU code runs only on {by_name}: built there only",
        )
    return BuildTarget(
        listed, features,
        f"meta.platforms ({', '.join(listed)}) disagrees with its package name ({by_name}); the recipe's list is used",
    )
