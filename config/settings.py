"""Runtime settings.

Sources, highest priority first: constructor arguments, ``TORCHBOT_*`` environment
variables, a ``.env`` file, an optional ``torchbot.toml`` (path overridable with
``TORCHBOT_CONFIG``), then the defaults below. The environment names are a contract
used by deployments and tests; secrets are ``SecretStr`` so they never print.

Values are checked when settings load (token kinds, Slack IDs, the state DB URL, numbers);
``load_settings()`` turns every mistake into a :class:`~config.errors.ConfigError` with one line
per mistake naming its ``TORCHBOT_`` variable.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    NoDecode,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


from config.defaults import FLOX_ORG
from config.errors import ConfigError

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


def _runners(value: object) -> object:
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
    for platform, labels in value.items():
        labels = [labels] if isinstance(labels, str) else list(labels or [])
        if not re.match(_PLATFORM_RE, str(platform)):
            raise ValueError(f"'{platform}' is not a platform like x86_64-linux")
        if not labels or not all(isinstance(x, str) and re.match(_LABEL_RE, x) for x in labels):
            raise ValueError(f"the runner labels of {platform} must be non-empty words, not {labels!r}")
        out[str(platform)] = labels
    return out


def _csv(value: object) -> object:
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


def _check_ids(values: list[str], pattern: re.Pattern, what: str, extra: tuple[str, ...] = ()) -> list[str]:
    for v in values:
        if not isinstance(v, str) or not (pattern.match(v) or v in extra):
            raise ValueError(f"{v!r} is not a Slack {what}")
    return values


def _token(value: SecretStr | None, prefix: str, where: str) -> SecretStr | None:
    if value is None:
        return None
    raw = value.get_secret_value().strip()
    if not raw:
        return None
    if not raw.startswith(prefix):
        kind = next((k for p, k in TOKEN_KINDS.items() if raw.startswith(p)), None)
        said = f"this is {kind}" if kind else "this does not look like a Slack token"
        raise ValueError(f"{said}; it must be {TOKEN_KINDS[prefix]} starting with {prefix} ({where})")
    return SecretStr(raw)


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
    if scheme == "postgresql+psycopg" and importlib.util.find_spec("psycopg") is None:
        raise ValueError("PostgreSQL needs the psycopg driver, which is not installed: "
                         "pip install 'torchbot[postgres]'")
    if not re.match(r"^[a-z0-9]+(\+[a-z0-9_]+)?$", scheme):
        raise ValueError(f"'{scheme}://' is not a database URL scheme")
    return f"{scheme}://{rest}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TORCHBOT_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

    # Slack
    slack_bot_token: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    socket_ping_seconds: float = Field(1.0, gt=0, le=30)  # Socket Mode ping period; a dead link is noticed in ~3 of them
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)  # "U1,U2" or a JSON list
    admin_usergroup: str | None = None
    allowed_channels: Annotated[list[str], NoDecode] = Field(default_factory=list)
    announce_channel: str | None = None
    audit_log: Path = Path("torchbot-audit.log")

    # The managed repositories: TORCHBOT_REPO_PATH is one path or comma-separated paths (a
    # build-pytorch and a build-torchvision repository; their kinds are detected). repo_path is
    # the first (the one release commands work on), repo_paths all of them.
    repo_path: Path | None = None
    repo_paths: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    repo_remote: str = "origin"
    git_author_name: str = "torchbot"
    git_author_email: str = "torchbot@localhost"
    # branches the README cross-branch tables need not list (fnmatch patterns)
    docs_skip_branches: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["*-staging", "bump/*"])

    # GitHub and nixpkgs endpoints (base URLs so tests can point them at 127.0.0.1)
    github_api_url: str = "https://api.github.com/"
    github_token: SecretStr | None = None
    github_repo: str = "barstoolbluz/build-pytorch"
    nixpkgs_repo: str = "NixOS/nixpkgs"
    channels_url: str = "https://channels.nixos.org/"
    default_channel: str = "nixos-unstable"
    http_timeout: float = 10.0
    http_retries: int = 3
    http_backoff_seconds: float = Field(0.5, ge=0, le=30, description=(
        "first wait before an HTTP retry (GitHub, nixpkgs, channels); it doubles per retry, plus jitter, "
        "unless the server sent Retry-After or x-ratelimit-reset, which are honoured"))
    http_retry_seconds: float = Field(60.0, gt=0, description=(
        "an HTTP call gives up rather than start a retry wait that would end later than this many seconds "
        "after its first attempt"))

    # Builds, publishing, state
    state_db: str = "sqlite:///torchbot-state.sqlite"
    flox_org: str = FLOX_ORG
    build_command: str = "flox build {package}"
    publish_command: str = "flox publish -o {org} {package}"
    build_timeout: float = 6 * 3600.0
    build_jobs: int = 1
    log_dir: Path = Path("torchbot-logs")
    job_workers: int = Field(2, ge=1, le=64)  # confirmed builds/publishes/bumps running at once; more wait in a queue
    plan_ttl_seconds: int = Field(3600, ge=1)  # how long a shown plan can be confirmed

    # `torchbot serve --http` (the --host/--port options override these)
    host: str = "0.0.0.0"
    port: int = Field(3000, ge=0, le=65535)

    # Schedule (cron expressions, APScheduler crontab syntax)
    bump_cron: str = "0 6 * * 1"
    bump_vllm_branches: bool = False
    poll_interval_seconds: int = 300
    publish_interval_seconds: int = 900
    flush_interval_seconds: int = 60
    docs_cron: str = "0 7 * * 1"  # weekly README cross-branch tables check, drift to the announce channel

    # Builds, publishing and announcements (issue 5)
    build_backend: Literal["github", "local", "none"] | None = Field(None, description=(
        "the former name of TORCHBOT_SCHEDULE_BUILD_BACKEND, honoured when that one is unset"))
    build_result_link: str = "result-{package}"  # must exist after a successful build
    build_check_command: str | None = None  # e.g. 'result-{package}/bin/python -c "import torch"'
    publish_timeout: float = 3600.0
    github_workflow_file: str = "torchbot-build.yml"
    github_poll_seconds: float = 30.0
    github_max_parallel: int | None = Field(None, ge=1, description=(
        "max-parallel of the build workflow's matrix jobs; unset (the default, GitHub's) runs every job "
        "at once. A cap limits runner cost or matches a self-hosted pool's capacity. "
        "TORCHBOT_BUILD_JOBS is local builds only"))
    github_stale_hours: float = Field(168.0, gt=0, description=(
        "torchbot stops following a GitHub run it has seen no change in for this long (its builds become "
        "interrupted, saying so); GitHub's own limits end jobs well before (6 h hosted, 5 days self-hosted)"))
    schedule_build_backend: Literal["github", "local", "none"] | None = Field(None, description=(
        "what builds after a scheduled bump: github, local (on the bot's host) or none (bump and report "
        "only). Unset: github when TORCHBOT_GITHUB_TOKEN and TORCHBOT_GITHUB_REPO are set, else none"))
    # runs-on labels per platform; recipes requiring big-parallel use the second map first
    github_runners: Annotated[dict[str, list[str]], NoDecode] = Field(default_factory=lambda: {
        k: list(v) for k, v in DEFAULT_RUNNERS.items()})
    github_big_parallel_runners: Annotated[dict[str, list[str]], NoDecode] = Field(default_factory=dict)
    build_platforms: Annotated[list[str], NoDecode] = Field(default_factory=list)  # local builds; [] = this host

    # Reproducible pins: the tarball torchbot hashes (recipes always keep the GitHub URL)
    nixpkgs_tarball_url: str = "https://github.com/NixOS/nixpkgs/archive/"
    nix_store: str | None = None  # nix-prefetch-url --store; None: nix's default when usable, else a private one
    prefetch_timeout: float = 900.0
    nixpkgs_web_url: str = "https://github.com/NixOS/nixpkgs/"  # compare links in announcements

    @model_validator(mode="before")
    @classmethod
    def _several_repos(cls, data: object) -> object:
        if isinstance(data, dict):
            raw = data.get("repo_path")
            if isinstance(raw, str) and "," in raw:
                parts = [p.strip() for p in raw.split(",") if p.strip()]
                data = {**data, "repo_path": parts[0] if parts else None}
                data.setdefault("repo_paths", parts)
        return data

    def repositories(self) -> list[Path]:
        """Every configured repository, ``repo_path`` first."""
        if self.repo_path is None:
            return [Path(p) for p in self.repo_paths]
        if self.repo_paths and Path(self.repo_paths[0]) == Path(self.repo_path):
            return [Path(p) for p in self.repo_paths]
        return [Path(self.repo_path)]

    @field_validator("repo_paths", mode="before")
    @classmethod
    def _split_paths(cls, value: object) -> object:
        if isinstance(value, str):
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @field_validator("github_runners", "github_big_parallel_runners", mode="before")
    @classmethod
    def _split_runners(cls, value: object, info) -> object:
        parsed = _runners(value)
        if info.field_name == "github_runners":  # entries override the hosted defaults per platform
            return {**{k: list(v) for k, v in DEFAULT_RUNNERS.items()}, **parsed}
        return parsed

    @field_validator("admins", "allowed_channels", "docs_skip_branches", "build_platforms", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _csv(value)

    @field_validator("admins")
    @classmethod
    def _admin_ids(cls, value: list[str]) -> list[str]:
        return _check_ids(value, USER_ID, "user ID (U… or W…, from the profile's ⋮ > Copy member ID)",
                          (CONSOLE_USER,))

    @field_validator("allowed_channels")
    @classmethod
    def _channel_ids(cls, value: list[str]) -> list[str]:
        return _check_ids(value, CHANNEL_ID, "channel ID (C… or G…, from the channel's details)")

    @field_validator("announce_channel", mode="before")
    @classmethod
    def _announce_id(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip() or None
            if value is not None:
                _check_ids([value], CHANNEL_ID, "channel ID (C… or G…, from the channel's details)")
        return value

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token(cls, value: SecretStr | None) -> SecretStr | None:
        return _token(value, "xoxb-", "OAuth & Permissions > Bot User OAuth Token")

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, value: SecretStr | None) -> SecretStr | None:
        return _token(value, "xapp-", "Basic Information > App-Level Tokens, scope connections:write")

    @field_validator("slack_signing_secret", "github_token")
    @classmethod
    def _strip_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        raw = value.get_secret_value().strip()
        return SecretStr(raw) if raw else None

    @field_validator("github_max_parallel", mode="before")
    @classmethod
    def _no_cap(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None  # GitHub's default: no cap
        return value

    @field_validator("schedule_build_backend", "build_backend", mode="before")
    @classmethod
    def _backend_word(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower() or None
        return value

    def schedule_backend(self) -> str:
        """The backend scheduled builds use: the explicit setting, else github when a token and
        repository are configured, else none (bump and report, build nothing)."""
        chosen = self.schedule_build_backend or self.build_backend
        if chosen:
            return chosen
        return "github" if self.github_token is not None and self.github_repo else "none"

    @field_validator("state_db")
    @classmethod
    def _state_db(cls, value: str) -> str:
        return state_db_url(value)

    @field_validator("slack_api_url", "github_api_url", "channels_url", "nixpkgs_tarball_url")
    @classmethod
    def _trailing_slash(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("TORCHBOT_CONFIG", "torchbot.toml"))
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=toml_path),
            file_secret_settings,
        )


def env_name(field: str) -> str:
    return "TORCHBOT_" + field.upper()


def load_settings(**overrides: object) -> Settings:
    """Settings, or a ConfigError with one line per mistake naming its TORCHBOT_ variable."""
    import tomllib

    try:
        return Settings(**overrides)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            field = str(e["loc"][0]) if e["loc"] else "?"
            msg = str(e["msg"]).removeprefix("Value error, ")
            if e["type"] not in ("value_error", "assertion_error"):
                shown = e.get("input")
                secret = "token" in field or "secret" in field
                msg = f"{msg[0].lower()}{msg[1:]}" + ("" if secret or shown is None else f" (got {shown!r})")
            lines.append(f"{env_name(field)}: {msg}")
        raise ConfigError("\n".join(lines)) from None
    except tomllib.TOMLDecodeError as err:
        path = os.environ.get("TORCHBOT_CONFIG", "torchbot.toml")
        raise ConfigError(f"{path} (TORCHBOT_CONFIG) is not valid TOML: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        path = os.environ.get("TORCHBOT_CONFIG", "torchbot.toml")
        raise ConfigError(f"{path} (TORCHBOT_CONFIG) cannot be read: {err}") from None
