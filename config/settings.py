"""Runtime settings.

Sources, highest priority first: constructor arguments, ``TORCHBOT_*`` environment
variables, a ``.env`` file, an optional ``torchbot.toml`` (path overridable with
``TORCHBOT_CONFIG``), then the defaults below. The environment names are a contract
used by deployments and tests; secrets are ``SecretStr`` so they never print.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    NoDecode,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


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
    import json
    import re

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
            import json

            return json.loads(text)
        return [part for part in text.replace(",", " ").split() if part]
    return value


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
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)  # "U1,U2" or a JSON list
    admin_usergroup: str | None = None
    allowed_channels: Annotated[list[str], NoDecode] = Field(default_factory=list)
    announce_channel: str | None = None
    audit_log: Path = Path("torchbot-audit.log")

    # The managed repository
    repo_path: Path | None = None
    repo_remote: str = "origin"
    git_author_name: str = "torchbot"
    git_author_email: str = "torchbot@localhost"

    # GitHub and nixpkgs endpoints (base URLs so tests can point them at 127.0.0.1)
    github_api_url: str = "https://api.github.com/"
    github_token: SecretStr | None = None
    github_repo: str = "barstoolbluz/build-pytorch"
    nixpkgs_repo: str = "NixOS/nixpkgs"
    channels_url: str = "https://channels.nixos.org/"
    default_channel: str = "nixos-unstable"
    http_timeout: float = 10.0
    http_retries: int = 3

    # Builds, publishing, state
    state_db: str = "sqlite:///torchbot-state.sqlite"
    flox_org: str = "your-org"
    build_command: str = "flox build {package}"
    publish_command: str = "flox publish -o {org} {package}"
    build_timeout: float = 6 * 3600.0
    build_jobs: int = 1
    log_dir: Path = Path("torchbot-logs")

    # Schedule (cron expressions, APScheduler crontab syntax)
    bump_cron: str = "0 6 * * 1"
    bump_vllm_branches: bool = False
    poll_interval_seconds: int = 300
    publish_interval_seconds: int = 900
    flush_interval_seconds: int = 60

    # Builds, publishing and announcements (issue 5)
    build_backend: str = "local"  # local | github: what scheduled builds after a bump use
    build_result_link: str = "result-{package}"  # must exist after a successful build
    build_check_command: str | None = None  # e.g. 'result-{package}/bin/python -c "import torch"'
    publish_timeout: float = 3600.0
    github_workflow_file: str = "torchbot-build.yml"
    github_poll_seconds: float = 30.0
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

    @field_validator("github_runners", "github_big_parallel_runners", mode="before")
    @classmethod
    def _split_runners(cls, value: object, info) -> object:
        parsed = _runners(value)
        if info.field_name == "github_runners":  # entries override the hosted defaults per platform
            return {**{k: list(v) for k, v in DEFAULT_RUNNERS.items()}, **parsed}
        return parsed

    @field_validator("admins", "allowed_channels", "build_platforms", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _csv(value)

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


def load_settings(**overrides: object) -> Settings:
    return Settings(**overrides)


def settings_error(err) -> str:
    """One line naming the setting a pydantic ValidationError is about, and what is wrong."""
    first = err.errors()[0]
    name = "TORCHBOT_" + "_".join(str(p) for p in first.get("loc", ())[:1]).upper()
    msg = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    return f"setting {name} is invalid: {msg}."
