"""Checks of setting values (the Flox org, command placeholders, URLs, database URLs) used by the
settings' rules (``config.settings_answer``, ``config.settings``), and the start-up checks of
what the settings name on disk (:func:`check_files`). Each problem is one line naming its
``TORCHBOT_`` variable. Imports nothing of torchbot but config.errors and config.paths, and no
pydantic.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from config.errors import ConfigError
from config.paths import SECRET_PARAM, config_file
from config.regex_cache import rx

# A Flox owner (user or organisation) is refused by Flox when it is empty, "." or "..", or holds a
# space or "/" (flox-core's EnvironmentOwner); FloxHub handles are GitHub-style. torchbot also puts
# the org into shell commands and published text, so it takes the safe core: letters, digits and
# - _ . , starting with a letter or digit.
FLOX_ORG_RE = rx(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
PLACEHOLDER_ORG = "your-org"

COMMAND_PLACEHOLDERS = ("package", "org")  # what format_command fills in build/publish/check commands


def flox_org_problem(value: str) -> str | None:
    if FLOX_ORG_RE.match(value or "") and value not in (".", ".."):
        return None
    return (f"{value!r} is not a Flox organisation name: use letters, digits, '-', '_' and '.', "
            "starting with a letter or digit (no spaces, '/' or shell characters)")


def require_real_org(org: str, doing: str) -> None:
    """ConfigError when the Flox org is still the placeholder and ``doing`` would publish or commit it."""
    if (org or PLACEHOLDER_ORG) == PLACEHOLDER_ORG:
        raise ConfigError(f"TORCHBOT_FLOX_ORG is the placeholder '{PLACEHOLDER_ORG}'; set your FloxHub "
                          f"organisation before {doing}.")


def placeholder_problem(template: str, allowed: tuple[str, ...] = COMMAND_PLACEHOLDERS) -> str | None:
    """Why a command template cannot be filled with ``allowed`` placeholders; None when it can."""
    import string  # only where a template is checked: importing it costs `ask` ~2 ms

    names = " and ".join("{" + a + "}" for a in allowed)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as err:
        return f"{err} in {template!r}; write {{{{ and }}}} for literal braces"
    for f in fields:
        if f not in allowed:
            shown = "{" + f + "}"
            return (f"{shown} is not a placeholder torchbot fills (it fills {names}); "
                    "write {{ and }} for literal braces")
    return None


def shown_url(value: str) -> str:
    """A URL as a message echoes it: quoted, or just "the URL" when it may hold credentials (a
    user-info part, or a query parameter such as ``password=``)."""
    return "the URL" if "@" in value or SECRET_PARAM.search(value) else repr(value)


def url_problem(value: str) -> str | None:
    """Why ``value`` is not an http(s) base URL; the URL is not echoed when it holds credentials."""
    shown = shown_url(value)
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError as err:
        return f"{shown} is not a URL ({err})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{shown} is not an http(s) URL; write it with its scheme and host, e.g. https://host/path/"
    del port
    return None


def database_url_problem(scheme: str, rest: str) -> str | None:
    """Why a server database URL (``scheme://rest``) cannot be used. Never echoes the user or
    password: a password with '@', '/' or ':' must be percent-encoded."""
    netloc, _slash, path = rest.partition("/")
    if netloc.count("@") > 1 or "@" in path:
        return ("the user or password contains '@' or '/' (or the URL has an '@' after its host); "
                "percent-encode them in the password ('@' as %40, '/' as %2F); the URL is not shown, "
                "it holds a password")
    hostport = netloc.rpartition("@")[2]
    try:
        port = urlsplit("//" + hostport).port
    except ValueError:
        port_text = hostport.rpartition("]")[2].rpartition(":")[2]
        return f"the port {port_text!r} is not a number (e.g. {scheme}://user:password@host:5432/db)"
    del port
    if not hostport and not path:
        return f"{scheme}:// needs a host or a database, e.g. {scheme}://user:password@host:5432/db"
    return None


# ---------------------------------------------------------------------------------------
# What the settings name on disk, checked when torchbot starts


def check_config_file() -> None:
    """ConfigError unless the TOML settings file is a readable file (or, not named, absent)."""
    path, named = config_file()
    if not named and not path.exists():
        return
    if not path.exists():
        problem = "does not exist"
    elif path.is_dir():
        problem = "is a directory, not a TOML file"
    elif not path.is_file():
        problem = "is not a regular file"
    elif not os.access(path, os.R_OK):
        problem = "is not readable"
    else:
        return
    raise ConfigError(f"TORCHBOT_CONFIG: {path} {problem}.")


def repository_problem(path: Path) -> str | None:
    """Why ``path`` is not a git repository (a work tree, or a bare repository); None when it is."""
    p = Path(path).expanduser()
    if not p.exists():
        return f"{p} does not exist"
    if not p.is_dir():
        return f"{p} is not a directory, let alone a git repository"
    if (p / ".git").exists() or ((p / "HEAD").is_file() and (p / "objects").is_dir()):
        return None
    return f"{p} is not a git repository (no .git in it, and not a bare repository)"


def directory_problem(path: Path) -> str | None:
    """Create ``path`` (with its parents) and check it is writable; why not, or None."""
    p = Path(path).expanduser()
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return f"{p} is a file, not a directory"
    except OSError as err:
        return f"cannot create the directory {p}: {err.strerror or err}"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"the directory {p} is not writable"
    return None


def appendable_problem(path: Path) -> str | None:
    """Create ``path``'s directory and open the file for appending; why that fails, or None."""
    p = Path(path).expanduser()
    if p.is_dir():
        return f"{p} is a directory, not a file"
    problem = directory_problem(p.parent)
    if problem:
        return problem
    try:
        with open(p, "a", encoding="utf-8"):
            pass
    except OSError as err:
        return f"cannot write {p}: {err.strerror or err}"
    return None


def sqlite_directory(url: str) -> Path | None:
    """The directory of a ``sqlite:///`` URL's file (None for memory or a non-SQLite URL)."""
    if not url.startswith("sqlite"):
        return None
    database = url.partition(":///")[2].partition("?")[0]
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).expanduser().parent


def answer_problems(repositories: list[Path], cache_dir: Path | None) -> list[str]:
    """What ``ask`` and ``catalog`` need: the repositories, and the recipe-facts cache directory."""
    lines = []
    for path in repositories:
        problem = repository_problem(path)
        if problem:
            lines.append(f"TORCHBOT_REPO_PATH: {problem}")
    if cache_dir is not None and (problem := directory_problem(cache_dir)):
        lines.append(f"TORCHBOT_CACHE_DIR: {problem} (TORCHBOT_CACHE_DIR=off runs without the cache)")
    return lines


def check_files(settings, *, scope: str = "full") -> None:
    """What the settings name on disk, checked before a command runs: ConfigError with one line
    per problem. ``answer`` (ask, catalog): the repositories and the cache directory; ``full``:
    also the audit log (writable, or torchbot refuses to start: it is the record of who changed
    what), the build log directory and the SQLite state DB's directory (created or refused)."""
    from config.paths import cache_dir

    lines = answer_problems(settings.repositories(), cache_dir())
    if scope == "full":
        if problem := appendable_problem(settings.audit_log):
            lines.append(f"TORCHBOT_AUDIT_LOG: {problem}; torchbot keeps who changed what there "
                         "and will not start without it")
        if problem := directory_problem(settings.log_dir):
            lines.append(f"TORCHBOT_LOG_DIR: {problem}")
        directory = sqlite_directory(settings.state_db)
        if directory is not None and (problem := directory_problem(directory)):
            lines.append(f"TORCHBOT_STATE_DB: {problem}")
    if lines:
        raise ConfigError("\n".join(lines))
