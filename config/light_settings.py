"""The settings ``torchbot ask`` reads (``flox_org``, the repositories), without importing
pydantic-settings, which costs more than the rest of an answer. Imports nothing of torchbot
but config.defaults.

Used only when nothing but ``TORCHBOT_FLOX_ORG`` and ``TORCHBOT_REPO_PATH`` (one path, or
comma-separated paths, read as Settings reads them) could set any setting: no ``.env`` in the
working directory, no ``torchbot.toml`` (or ``$TORCHBOT_CONFIG``) and no other ``TORCHBOT_``
variable, so there is nothing :func:`config.settings.load_settings` would have to check. In every
other case the caller loads the full settings. Variable names are matched case-insensitively, as
pydantic-settings does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from config.defaults import FLOX_ORG


@dataclass(frozen=True)
class LightSettings:
    flox_org: str = FLOX_ORG
    repo_path: Path | None = None
    repo_paths: tuple[Path, ...] = ()

    def repositories(self) -> list[Path]:
        """Every configured repository, ``repo_path`` first (as ``Settings.repositories``)."""
        return list(self.repo_paths)


def light_settings() -> LightSettings | None:
    """LightSettings, or None when the full Settings must be loaded."""
    env = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith("TORCHBOT_")}
    config = env.get("TORCHBOT_CONFIG", "torchbot.toml")
    # TORCHBOT_CACHE_DIR is not a setting (the recipe reader's cache location, read from the environment)
    if set(env) - {"TORCHBOT_FLOX_ORG", "TORCHBOT_REPO_PATH", "TORCHBOT_CACHE_DIR"} or Path(".env").exists() \
            or Path(config).exists():
        return None
    paths = tuple(Path(p.strip()) for p in env.get("TORCHBOT_REPO_PATH", "").split(",") if p.strip())
    return LightSettings(flox_org=env.get("TORCHBOT_FLOX_ORG", FLOX_ORG), repo_path=paths[0] if paths else None,
                         repo_paths=paths)
