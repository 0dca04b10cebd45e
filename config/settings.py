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

from config.defaults import FLOX_ORG
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    NoDecode,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


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
    flox_org: str = FLOX_ORG
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
    github_workflow_ref: str = "main"  # branch holding the workflow (workflow_dispatch ref)
    github_poll_seconds: float = 30.0
    github_runner: str = "ubuntu-latest"  # runs-on of the rendered build workflow
    nixpkgs_web_url: str = "https://github.com/NixOS/nixpkgs/"  # compare links in announcements

    @field_validator("admins", "allowed_channels", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _csv(value)

    @field_validator("slack_api_url", "github_api_url", "channels_url")
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
