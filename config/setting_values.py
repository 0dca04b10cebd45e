"""How setting values are read from what people write: Slack ID and token shapes, GitHub runner
maps (``platform=label+label,...``), lists given as CSV or JSON, the state DB URL. Used by the
settings model (``config.settings``); each raises ValueError with the sentence the user reads.
Imports nothing of torchbot but config.checks, and no pydantic."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import unicodedata
from pathlib import Path

from config.checks import database_url_problem

USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]+$")
CONSOLE_USER = "console"  # the terminal user of `torchbot chat`
TOKEN_KINDS = {"xoxb-": "a bot token", "xapp-": "an app-level token", "xoxp-": "a user token"}


# GitHub's hosted runners per platform (runs-on labels)
DEFAULT_RUNNERS: dict[str, list[str]] = {
    "x86_64-linux": ["ubuntu-latest"],
    "aarch64-linux": ["ubuntu-24.04-arm"],
    "aarch64-darwin": ["macos-14"],
}
_PLATFORM_RE = r"^[a-z0-9_]+-[a-z]+$"
_LABEL_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


def runners(value: object) -> object:
    """platform -> runs-on labels, from a JSON object (a label or a list of labels per
    platform) or the short form ``x86_64-linux=ubuntu-latest,aarch64-linux=self-hosted+ARM64``."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            value = json.loads(text)
        else:
            pairs = [p for p in re.split(r"[,\s]+", text) if p]
            value = {}
            for pair in pairs:
                platform, sep, labels = pair.partition("=")
                if not sep:
                    raise ValueError(f"'{pair}' is not platform=label[+label]")
                value[platform] = labels.split("+")
    if not isinstance(value, dict):
        raise ValueError("expected platform -> runner labels")
    out: dict[str, list[str]] = {}
    for platform, given in value.items():
        labels = [given] if isinstance(given, str) else list(given or [])
        if not re.match(_PLATFORM_RE, str(platform)):
            raise ValueError(f"'{platform}' is not a platform like x86_64-linux")
        if not labels or not all(isinstance(x, str) and re.match(_LABEL_RE, x) for x in labels):
            raise ValueError(f"the runner labels of {platform} must be non-empty words, not {labels!r}")
        out[str(platform)] = labels
    return out


def csv_list(value: object) -> object:
    """Accept "a,b c" as well as JSON lists for list settings from the environment."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return json.loads(text)
            except ValueError as err:
                raise ValueError(f"not a valid JSON list ({err.args[0].split(':')[0]}); "
                                 'write ["U0123ABCD", "U0456EFGH"] or U0123ABCD,U0456EFGH') from None
        return [part for part in text.replace(",", " ").split() if part]
    return value


def check_ids(values: list[str], pattern: re.Pattern, what: str, extra: tuple[str, ...] = ()) -> list[str]:
    for v in values:
        if not isinstance(v, str) or not (pattern.match(v) or v in extra):
            raise ValueError(f"{v!r} is not a Slack {what}")
    return values


def secret_problem(raw: str) -> str | None:
    """Why a token or secret (already stripped of surrounding whitespace) cannot be one: whitespace
    or a control character inside it (a pasted line break, a tab). Never names the value."""
    bad = next((c for c in raw if c.isspace() or unicodedata.category(c).startswith("C")), None)
    if bad is None:
        return None
    what = "a line break" if bad in "\r\n" else "whitespace" if bad.isspace() else "a control character"
    return f"it has {what} inside it (at character {raw.index(bad) + 1} of {len(raw)}); paste it again on one line"


def token(secret: str | None, prefix: str, where: str) -> str | None:
    """A Slack token without surrounding whitespace, None when empty; ValueError naming the kind
    of token it is when it is not the kind expected, or what is wrong inside it (never the token
    itself)."""
    raw = (secret or "").strip()
    if not raw:
        return None
    if problem := secret_problem(raw):
        raise ValueError(problem)
    if not raw.startswith(prefix):
        kind = next((k for p, k in TOKEN_KINDS.items() if raw.startswith(p)), None)
        said = f"this is {kind}" if kind else "this does not look like a Slack token"
        raise ValueError(f"{said}; it must be {TOKEN_KINDS[prefix]} starting with {prefix} ({where})")
    return raw


def state_db_url(value: str) -> str:
    """A SQLAlchemy URL from what users write: a URL as is, a plain path as a SQLite file,
    ``postgresql://``/``postgres://`` as PostgreSQL through psycopg 3."""
    text = value.strip()
    if not text:
        raise ValueError("empty; give a path for a SQLite file or a postgresql:// URL")
    if "://" not in text:
        return "sqlite:///" + str(Path(text).expanduser().resolve())
    scheme, _, rest = text.partition("://")
    scheme = scheme.lower()
    if scheme in ("postgres", "postgresql"):
        scheme = "postgresql+psycopg"
    if not re.match(r"^[a-z0-9]+(\+[a-z0-9_]+)?$", scheme):
        raise ValueError(f"'{scheme}://' is not a database URL scheme")
    if not scheme.startswith("sqlite") and (problem := database_url_problem(scheme, rest)):
        raise ValueError(problem)
    if scheme == "postgresql+psycopg" and importlib.util.find_spec("psycopg") is None:
        raise ValueError("PostgreSQL needs the psycopg driver, which is not installed: "
                         "pip install 'torchbot[postgres]'")
    return f"{scheme}://{rest}"


def whole_seconds(seconds: float) -> int:
    """A timeout for clients that take whole seconds (slack_sdk's ``timeout: int``): rounded up,
    at least 1, so that 0.5 does not become 0 (which fails every call at once)."""
    return max(1, math.ceil(seconds))


def lower_word(value: object) -> object:
    """A one-word choice, case and surrounding blanks ignored; blank is unset."""
    return (value.strip().lower() or None) if isinstance(value, str) else value


def tracks(value: object) -> object:
    """``pattern=channel,pattern=channel`` -> {pattern: channel} (TORCHBOT_BUMP_TRACKS)."""
    if not isinstance(value, str):
        return value
    out: dict[str, str] = {}
    for item in (p.strip() for p in value.split(",") if p.strip()):
        pattern, eq, channel = (x.strip() for x in item.partition("="))
        if not eq or not pattern or not re.fullmatch(r"[A-Za-z0-9._-]+", channel):
            raise ValueError(f"'{item}' is not pattern=channel (a branch pattern and a nixpkgs channel or branch)")
        out[pattern] = channel
    return out
