"""The one reader of where settings come from. Highest priority first: the ``TORCHBOT_`` environment
(names matched case-insensitively), the ``.env`` file, the TOML file (``TORCHBOT_CONFIG``, else
``torchbot.toml`` here). :func:`read` gives each setting's raw value from the first source that sets
it; a blank path setting is unset there (``TORCHBOT_LOG_DIR=`` is never the working directory, ""
being "."), so the next source, else the default, counts.

Both views of the settings are made from it: the full ``config.settings.Settings`` takes it as its
pydantic-settings source (so its precedence is this one), and ``ask``'s group
(``config.settings_answer``) reads only its own fields from it without pydantic. A file it cannot
read is one line naming the file (:class:`~config.errors.ConfigError`).

Imports nothing of torchbot but config.checks, config.errors and config.paths, and no pydantic.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from config.checks import check_config_file
from config.errors import ConfigError
from config.paths import config_file

PREFIX = "TORCHBOT_"
BLANK_IS_UNSET = ("state_db", "audit_log", "log_dir", "cache_dir", "local_branches")


def read(fields: Iterable[str] | None = None, env_file: str | os.PathLike | None = ".env") -> dict[str, object]:
    """The raw value of each setting the sources set (only ``fields``, when given), by lower-case
    field name: the environment first, then ``env_file`` (None: no .env), then the TOML file."""
    check_config_file()
    wanted = None if fields is None else set(fields)
    sources = [_prefixed(os.environ.items())]
    if env_file and Path(env_file).is_file():
        sources.append(_dotenv(Path(env_file)))
    path = config_file()[0]
    if path.exists():
        sources.append(_toml(path))
    out: dict[str, object] = {}
    for source in sources:
        for name, value in source.items():
            if name in out or (wanted is not None and name not in wanted):
                continue
            if name in BLANK_IS_UNSET and isinstance(value, str) and not value.strip():
                continue
            out[name] = value
    return out


def _prefixed(items: Iterable[tuple[str, str | None]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in items:
        if value is not None and key.upper().startswith(PREFIX):
            out.setdefault(key[len(PREFIX):].lower(), value)
    return out


def _dotenv(path: Path) -> dict[str, object]:
    from dotenv import dotenv_values  # python-dotenv: the .env syntax pydantic-settings reads too

    try:
        return _prefixed(dotenv_values(path, encoding="utf-8").items())
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path.resolve()} (the .env file) cannot be read: {err}") from None


def _toml(path: Path) -> dict[str, object]:
    import tomllib

    try:
        with path.open("rb") as fh:
            return {str(k).lower(): v for k, v in tomllib.load(fh).items()}
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} (TORCHBOT_CONFIG) is not valid TOML: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path.resolve()} (TORCHBOT_CONFIG) cannot be read: {err}") from None


def unreadable(env_file: object, err: BaseException) -> str:
    """Which settings file could not be read, and why: the ``.env`` or the TOML file."""
    named = [(Path(str(env_file)).resolve(), "the .env file")] if env_file else []
    for path, what in [*named, (config_file()[0], "TORCHBOT_CONFIG")]:
        try:
            path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as why:
            return f"{path} ({what}) cannot be read: {why}"
    return f"a settings file cannot be read: {err}"
