"""Where torchbot keeps its own files: the state DB, the audit log, build logs, the recipe-facts
cache and the record of created branches. Never the directory torchbot runs from: by default the
platform's per-user directories (``platformdirs``; on Linux ``$XDG_DATA_HOME``, ``$XDG_STATE_HOME``
and ``$XDG_CACHE_HOME``, else ``~/.local/share``, ``~/.local/state`` and ``~/.cache``), each
overridable by its ``TORCHBOT_`` setting.

The settings model takes its defaults from here, and the modules that have no settings at hand
(the recipe reader's cache, the branch records) ask here: :func:`use` makes what the loaded
settings say (from a ``.env`` or ``torchbot.toml`` too) win over the environment. Imports nothing
of torchbot and no pydantic (``torchbot ask`` uses it on its fast path).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

APP = "torchbot"
OFF = ("off", "none", "0")  # TORCHBOT_CACHE_DIR values that turn the cache off (blank: the default)

# what `use(settings)` set: field name -> value (None: not set by the settings)
_CHOSEN: dict[str, object] = {}


def _dirs():
    import platformdirs

    return platformdirs.PlatformDirs(APP, appauthor=False)


def _xdg(variable: str, fallback: str) -> Path | None:
    """On Linux, what platformdirs answers (``$XDG_..._HOME``, else the fallback under ``~``)
    without importing it and what it imports (a quick ``ask`` reads the cache and the records);
    None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    base = os.environ.get(variable, "")
    return Path(base if base.strip() else os.path.expanduser(fallback)) / APP


def data_dir() -> Path:
    """Durable data: the state DB, the record of created branches."""
    return _xdg("XDG_DATA_HOME", "~/.local/share") or Path(_dirs().user_data_dir)


def state_dir() -> Path:
    """History: the audit log and build logs."""
    return Path(_dirs().user_state_dir)


def default_state_db() -> str:
    return "sqlite:///" + str(data_dir() / "state.sqlite")


def default_audit_log() -> Path:
    return state_dir() / "audit.log"


def default_log_dir() -> Path:
    return Path(_dirs().user_log_dir)


def default_cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", "~/.cache") or Path(_dirs().user_cache_dir)


def default_branches_file() -> Path:
    return data_dir() / "branches.toml"


# symbolic defaults for docs/settings.md (the real ones depend on who runs torchbot where)
DOC_DEFAULTS = {
    "state_db": "`$XDG_DATA_HOME/torchbot/state.sqlite` (`~/.local/share/torchbot/state.sqlite`)",
    "audit_log": "`$XDG_STATE_HOME/torchbot/audit.log` (`~/.local/state/torchbot/audit.log`)",
    "log_dir": "`$XDG_STATE_HOME/torchbot/log` (`~/.local/state/torchbot/log`)",
    "cache_dir": "`$XDG_CACHE_HOME/torchbot` (`~/.cache/torchbot`)",
    "local_branches": "`$XDG_DATA_HOME/torchbot/branches.toml` (`~/.local/share/torchbot/branches.toml`)",
}


def use(settings) -> None:
    """Make the loaded settings' cache directory and branch record the ones every module uses
    (they may come from a ``.env`` or ``torchbot.toml`` the environment does not show)."""
    for name in ("cache_dir", "local_branches"):
        _CHOSEN[name] = getattr(settings, name, None)


def forget() -> None:
    """Undo :func:`use` (tests: each starts from the environment)."""
    _CHOSEN.clear()


def _env(name: str) -> str | None:
    for k, v in os.environ.items():  # pydantic-settings matches names case-insensitively
        if k.upper() == name:
            return v
    return None


def cache_dir() -> Path | None:
    """The recipe-facts cache directory; None when it is turned off."""
    raw = _CHOSEN.get("cache_dir")
    if raw is None:
        raw = _env("TORCHBOT_CACHE_DIR")
    text = "" if raw is None else str(raw).strip()
    if not text:  # unset or blank
        return default_cache_dir()
    return None if text.lower() in OFF else Path(text).expanduser()


def branches_file() -> Path:
    """The record of branches ``torchbot release branch create`` made, by repository."""
    raw = _CHOSEN.get("local_branches") or _env("TORCHBOT_LOCAL_BRANCHES")
    return Path(str(raw)).expanduser() if raw and str(raw).strip() else default_branches_file()  # blank: unset


def config_file() -> tuple[Path, bool]:
    """The TOML settings file and whether ``TORCHBOT_CONFIG`` names it (else ``torchbot.toml`` here)."""
    named = _env("TORCHBOT_CONFIG")
    return Path(named or "torchbot.toml").expanduser(), named is not None


SECRET_PARAM = re.compile(r"([?&;](?:password|passwd|pwd|token|secret|api_?key)=)[^&;#]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """A URL with its password replaced by ``***`` (the user stays): the one in its user info,
    and the value of a query parameter that holds one (``?password=``, libpq's way, or a token)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    if sep and at and ":" in userinfo:
        url = f"{scheme}://{userinfo.partition(':')[0]}:***@{host}{slash}{tail}"
    return SECRET_PARAM.sub(r"\1***", url)


def locations(settings) -> list[dict[str, str]]:
    """Where each of torchbot's files lives (``torchbot paths``): what, where, the setting that
    moves it, and whether it exists yet."""
    def row(what: str, where: Path | str | None, variable: str, path: Path | None) -> dict[str, str]:
        state = "off" if where is None else ("exists" if path is not None and path.exists() else "not yet created")
        return {"what": what, "where": "off" if where is None else str(where), "variable": variable, "state": state}

    db = settings.state_db
    cache = cache_dir()
    config, _ = config_file()
    return [
        row("state DB", redact_url(db), "TORCHBOT_STATE_DB",
            Path(db.partition(":///")[2]) if db.startswith("sqlite:///") else None),
        row("audit log", settings.audit_log, "TORCHBOT_AUDIT_LOG", Path(settings.audit_log)),
        row("build logs", settings.log_dir, "TORCHBOT_LOG_DIR", Path(settings.log_dir)),
        row("recipe-facts cache", cache, "TORCHBOT_CACHE_DIR", cache),
        row("created branches", branches_file(), "TORCHBOT_LOCAL_BRANCHES", branches_file()),
        {**row("settings file", config.absolute(), "TORCHBOT_CONFIG", config),
         **({} if config.exists() else {"state": "none (optional)"})},
    ]
