"""The settings ``torchbot ask`` reads (``flox_org``, the repositories, where the recipe-facts
cache and the branch records live), without importing pydantic-settings, which costs more than
the rest of an answer. Imports nothing of torchbot but config.defaults, config.checks,
config.errors and config.paths.

Used only when nothing but ``TORCHBOT_FLOX_ORG``, ``TORCHBOT_REPO_PATH``, ``TORCHBOT_CACHE_DIR``
and ``TORCHBOT_LOCAL_BRANCHES`` (one path, or comma-separated paths, read as Settings reads them)
could set any setting: no ``.env`` in the working directory, no ``torchbot.toml``, no
``TORCHBOT_CONFIG`` and no other ``TORCHBOT_`` variable. The values it reads are checked with the
same rules (``config.checks``) and give the same one-line verdicts as
:func:`config.settings.load_settings`. In every other case the caller loads the full settings.
Variable names are matched case-insensitively, as pydantic-settings does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from config.checks import flox_org_problem
from config.defaults import FLOX_ORG
from config.errors import ConfigError

LIGHT = {"TORCHBOT_FLOX_ORG", "TORCHBOT_REPO_PATH", "TORCHBOT_CACHE_DIR", "TORCHBOT_LOCAL_BRANCHES"}


@dataclass(frozen=True)
class LightSettings:
    """The settings `ask` needs, read from the environment without pydantic-settings."""

    flox_org: str = FLOX_ORG
    repo_path: Path | None = None
    repo_paths: tuple[Path, ...] = ()
    cache_dir: str | None = None  # None: config.paths' default
    local_branches: Path | None = None

    def repositories(self) -> list[Path]:
        """Every configured repository, ``repo_path`` first (as ``Settings.repositories``)."""
        return list(self.repo_paths)


def light_settings() -> LightSettings | None:
    """LightSettings, or None when the full Settings must be loaded; ConfigError (the line
    load_settings would give) for a Flox org it would refuse."""
    env = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith("TORCHBOT_")}
    if set(env) - LIGHT or Path(".env").exists() or Path("torchbot.toml").exists():
        return None
    paths = tuple(Path(p.strip()) for p in env.get("TORCHBOT_REPO_PATH", "").split(",") if p.strip())
    org = env.get("TORCHBOT_FLOX_ORG", FLOX_ORG)
    if problem := flox_org_problem(org):
        raise ConfigError(f"TORCHBOT_FLOX_ORG: {problem}")
    branches = env.get("TORCHBOT_LOCAL_BRANCHES", "")
    cache = env.get("TORCHBOT_CACHE_DIR", "")  # blank path settings are unset, as in Settings
    return LightSettings(flox_org=org, repo_path=paths[0] if paths else None, repo_paths=paths,
                         cache_dir=cache.strip() or None, local_branches=Path(branches) if branches.strip() else None)
