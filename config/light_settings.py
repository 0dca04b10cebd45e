"""The two settings ``torchbot ask`` reads (``flox_org``, ``repo_path``), without importing
pydantic-settings, which costs more than the rest of an answer. Imports nothing of torchbot
but config.defaults.

Used only when the environment alone could set them: no ``.env`` in the working directory and
no ``torchbot.toml`` (or ``$TORCHBOT_CONFIG``). With either file, or with a repository to read
(``TORCHBOT_REPO_PATH``), the caller loads the full :class:`config.settings.Settings`. Variable
names are matched case-insensitively, as pydantic-settings does.
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


def light_settings() -> LightSettings | None:
    """LightSettings, or None when the full Settings must be loaded."""
    env = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith("TORCHBOT_")}
    config = env.get("TORCHBOT_CONFIG", "torchbot.toml")
    if Path(".env").exists() or Path(config).exists() or "TORCHBOT_REPO_PATH" in env:
        return None
    return LightSettings(flox_org=env.get("TORCHBOT_FLOX_ORG", FLOX_ORG))
