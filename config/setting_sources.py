"""The parts of settings loading that do not need the settings model: the source wrapper that
reads a blank path setting as unset, and which settings file could not be read.

May import: config.paths, pydantic-settings.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import PydanticBaseSettingsSource

from config.paths import config_file

BLANK_IS_UNSET = ("state_db", "audit_log", "log_dir", "cache_dir", "local_branches")


class BlankIsUnset(PydanticBaseSettingsSource):
    """A settings source less the path settings it gives blank: ``TORCHBOT_LOG_DIR=`` means
    unset (the next source, else the default), never the working directory ("" is ".")."""

    def __init__(self, source: PydanticBaseSettingsSource):
        super().__init__(source.settings_cls)
        self._source = source

    def get_field_value(self, field, field_name):  # unused: __call__ asks the wrapped source
        return None, field_name, False

    def __call__(self) -> dict:
        return {k: v for k, v in self._source().items()
                if not (k in BLANK_IS_UNSET and isinstance(v, str) and not v.strip())}


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
