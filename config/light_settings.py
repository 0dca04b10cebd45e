"""The settings ``torchbot ask`` reads, and only those: the Flox org, the repositories, where the
recipe-facts cache and the branch records live. Read from the same sources, in the same order, as
:class:`config.settings.Settings` (the ``TORCHBOT_`` environment, then ``.env``, then the TOML file
of ``TORCHBOT_CONFIG`` or ``torchbot.toml``), with the same rules (``config.checks``) and the same
one-line verdicts, but without pydantic-settings, which costs more than the rest of an answer.
Whatever else a team configures (Slack and GitHub tokens, the state DB, the log level) is not
read here: ``ask`` needs none of it, and ``serve`` and ``release`` check it when they start.
Variable names are matched case-insensitively, as pydantic-settings does. Imports nothing of
torchbot but config.defaults, config.checks, config.errors, config.paths and config.setting_sources.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from config.checks import check_config_file, flox_org_problem
from config.defaults import FLOX_ORG
from config.errors import ConfigError
from config.paths import config_file

FIELDS = ("flox_org", "repo_path", "repo_paths", "cache_dir", "local_branches")
BLANK_IS_UNSET = ("cache_dir", "local_branches")  # as config.setting_sources.BLANK_IS_UNSET


@dataclass(frozen=True)
class LightSettings:
    """The settings `ask` needs, read without pydantic-settings."""

    flox_org: str = FLOX_ORG
    repo_path: Path | None = None
    repo_paths: tuple[Path, ...] = ()
    cache_dir: str | None = None  # None: config.paths' default
    local_branches: Path | None = None

    def repositories(self) -> list[Path]:
        """Every configured repository, ``repo_path`` first (as ``Settings.repositories``)."""
        return list(self.repo_paths)


def raw_values(fields=FIELDS, env_file: str | None = ".env") -> dict[str, object]:
    """The raw value of each of ``fields`` the sources set: the environment first, then the
    ``.env`` file, then the TOML file (a blank path setting is unset, and the next source counts)."""
    sources = [{k[9:].lower(): v for k, v in os.environ.items() if k.upper().startswith("TORCHBOT_")}]
    if env_file and Path(env_file).exists():
        sources.append(_dotenv(Path(env_file)))
    check_config_file()
    path = config_file()[0]
    if path.exists():
        sources.append(_toml(path))
    out: dict[str, object] = {}
    for name in fields:
        for src in sources:
            value = src.get(name)
            if value is None or (name in BLANK_IS_UNSET and isinstance(value, str) and not value.strip()):
                continue
            out[name] = value
            break
    return out


def _dotenv(path: Path) -> dict[str, str]:
    from dotenv import dotenv_values  # what pydantic-settings reads .env with

    try:
        values = dotenv_values(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        from config.setting_sources import unreadable

        raise ConfigError(unreadable(path, err)) from None
    return {k[9:].lower(): v for k, v in values.items() if k.upper().startswith("TORCHBOT_") and v is not None}


def _toml(path: Path) -> dict[str, object]:
    import tomllib

    try:
        with path.open("rb") as fh:
            return {str(k).lower(): v for k, v in tomllib.load(fh).items()}
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} (TORCHBOT_CONFIG) is not valid TOML: {err}") from None
    except OSError as err:
        raise ConfigError(f"{path} (TORCHBOT_CONFIG) cannot be read: {err}") from None


def _paths(value: object) -> tuple[Path, ...]:
    items = value if isinstance(value, list) else str(value or "").split(",")
    return tuple(Path(str(p).strip()) for p in items if str(p).strip())


def light_settings() -> LightSettings:
    """LightSettings from every source; ConfigError (the line load_settings would give) for a
    Flox org it would refuse or a settings file it cannot read."""
    raw = raw_values()
    paths = _paths(raw.get("repo_path"))
    if len(paths) <= 1 and raw.get("repo_paths"):
        listed = _paths(raw["repo_paths"])
        paths = listed if not paths or (listed and listed[0] == paths[0]) else paths
    org = str(raw.get("flox_org", FLOX_ORG))
    if problem := flox_org_problem(org):
        raise ConfigError(f"TORCHBOT_FLOX_ORG: {problem}")
    cache = str(raw.get("cache_dir", "")).strip()
    branches = str(raw.get("local_branches", ""))
    return LightSettings(flox_org=org, repo_path=paths[0] if paths else None, repo_paths=paths,
                         cache_dir=cache or None, local_branches=Path(branches) if branches.strip() else None)
