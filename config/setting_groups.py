"""The settings by concern: one class per concern holds its fields (each with the ``description``
that is its row in docs/settings.md) and the rules that read them, and ``config.settings.Settings``
is all of them together. The answer group (the Flox org, the repositories, the cache, the branch
records) has its one place in ``config.settings_answer`` (no pydantic, so ``ask`` reads it alone);
:class:`Answer` declares it from there. How values are read is in ``config.setting_values`` and
``config.checks``; where they come from, in ``config.setting_sources``.

Imports nothing of torchbot but config.checks, config.paths, config.setting_values and
config.settings_answer; pydantic.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from config.checks import placeholder_problem, shown_url, url_problem
from config.paths import default_audit_log, default_log_dir, default_state_db
from config.setting_values import (
    CHANNEL_ID,
    CONSOLE_USER,
    DEFAULT_RUNNERS,
    USER_ID,
    check_ids,
    csv_list,
    lower_word,
    runners,
    secret_problem,
    state_db_url,
    token,
    tracks,
)
from config.settings_answer import FIELDS as ANSWER
from config.settings_answer import repositories as _repositories
from config.settings_answer import split_repositories


def _answer(name: str):
    """A field of the answer group, declared from its one place (config.settings_answer)."""
    spec = ANSWER[name]
    if spec.default_factory is not None:
        return Field(default_factory=spec.default_factory, description=spec.description)
    return Field(spec.default, description=spec.description)


def _secret(value: str | None) -> SecretStr | None:
    return None if value is None else SecretStr(value)


MIN_API_TOKEN = 32  # characters of TORCHBOT_API_TOKEN at least (a guessable token guards nothing)


def _plain_secret(value: SecretStr | None, least: int = 0) -> SecretStr | None:
    """A secret without surrounding whitespace (blank is unset), refused with whitespace or a
    control character inside it or, when ``least``, shorter than that (never echoing it)."""
    if value is None:
        return None
    raw = value.get_secret_value().strip()
    if raw and (problem := secret_problem(raw)):
        raise ValueError(problem)
    if raw and len(raw) < least:
        raise ValueError(f"it has {len(raw)} characters; give at least {least} "
                         "(for example: python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return SecretStr(raw) if raw else None


def _base_url(value: str, slash: bool = True) -> str:
    """An http(s) URL, stripped, ending in "/" when ``slash`` (a base other paths are joined to)."""
    value = value.strip()
    if problem := url_problem(value):
        raise ValueError(problem)
    return value if not slash or value.endswith("/") else value + "/"


class Chat(BaseModel):
    """Slack: tokens, who may do what where, the audit log of what they did."""

    slack_bot_token: SecretStr | None = Field(None, description=(
        "the bot's `xoxb-` token (OAuth & Permissions > Bot User OAuth Token); `serve` needs it"))
    slack_app_token: SecretStr | None = Field(None, description=(
        "an `xapp-` app-level token with `connections:write`, for Socket Mode"))
    slack_signing_secret: SecretStr | None = Field(None, description=(
        "the app's signing secret; `serve --http` checks every request against it"))
    slack_api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL")
    socket_ping_seconds: float = Field(1.0, gt=0, le=30, description=(
        "Socket Mode ping period; a dead link is noticed within about three of them"))
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list, description=(
        "who may run mutating commands: Slack user IDs (`U…`/`W…`), comma separated or a JSON list; "
        "names such as `@alice` are refused; `console` is the terminal user of `torchbot chat`"))
    admin_usergroup: str | None = Field(None, description=(
        "a Slack user group ID (`S…`) whose members are admins too, next to `TORCHBOT_ADMINS` "
        "(read with `usergroups.users.list`, scope `usergroups:read`, kept for a minute)"))
    allowed_channels: Annotated[list[str], NoDecode] = Field(default_factory=list, description=(
        "where mutating commands may run: Slack channel IDs (`C…`/`G…`), comma separated or a JSON list"))
    announce_channel: str | None = Field(None, description="channel ID for release threads and docs drift")
    audit_log: Path = Field(default_factory=default_audit_log, description=(
        "who changed what: a JSON object per line for each mutating chat command planned, refused, confirmed "
        "or cancelled and each dashboard-issue decision; torchbot refuses to start when it cannot write it"))
    progress_seconds: float = Field(5.0, ge=1, le=600, description=(
        "the shortest time between two edits of a Slack job message's progress line (chat.update)"))

    @field_validator("admins", "allowed_channels", mode="before")
    @classmethod
    def _chat_lists(cls, value: object) -> object:
        return csv_list(value)

    @field_validator("admins")
    @classmethod
    def _admin_ids(cls, value: list[str]) -> list[str]:
        return check_ids(value, USER_ID, "user ID (U… or W…, from the profile's ⋮ > Copy member ID)",
                          (CONSOLE_USER,))

    @field_validator("allowed_channels")
    @classmethod
    def _channel_ids(cls, value: list[str]) -> list[str]:
        return check_ids(value, CHANNEL_ID, "channel ID (C… or G…, from the channel's details)")

    @field_validator("admin_usergroup", mode="before")
    @classmethod
    def _usergroup_id(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip() or None
            if value is not None and not re.fullmatch(r"S[A-Z0-9]{2,}", value):
                raise ValueError(f"'{value}' is not a user group ID (S…, from the group's ⋮ > Copy group ID)")
        return value

    @field_validator("announce_channel", mode="before")
    @classmethod
    def _announce_id(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip() or None
            if value is not None:
                check_ids([value], CHANNEL_ID, "channel ID (C… or G…, from the channel's details)")
        return value

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token(cls, value: SecretStr | None) -> SecretStr | None:
        return _secret(token(value and value.get_secret_value(), "xoxb-", "OAuth & Permissions > Bot User OAuth Token"))

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, value: SecretStr | None) -> SecretStr | None:
        return _secret(token(value and value.get_secret_value(), "xapp-",
                             "Basic Information > App-Level Tokens, scope connections:write"))

    @field_validator("slack_signing_secret")
    @classmethod
    def _signing_secret(cls, value: SecretStr | None) -> SecretStr | None:
        return _plain_secret(value)

    @field_validator("slack_api_url")
    @classmethod
    def _slack_url(cls, value: str) -> str:
        return _base_url(value)


class Answer(BaseModel):
    """What an answer needs: the managed repositories (TORCHBOT_REPO_PATH is one path or
    comma-separated paths, a build-pytorch and a build-torchvision repository; repo_path is the
    first, the one release commands work on, repo_paths all of them), the Flox org, the cache and
    the branch records. Declared and checked from config.settings_answer, their one place."""

    repo_path: Path | None = _answer("repo_path")
    repo_paths: Annotated[list[Path], NoDecode] = _answer("repo_paths")
    flox_org: str = _answer("flox_org")
    cache_dir: str = _answer("cache_dir")
    local_branches: Path = _answer("local_branches")

    @model_validator(mode="before")
    @classmethod
    def _several_repos(cls, data: object) -> object:
        return split_repositories(data) if isinstance(data, dict) else data

    @field_validator(*ANSWER, mode="before")
    @classmethod
    def _answer_group(cls, value: object, info) -> object:
        return ANSWER[info.field_name].parse(value)

    def repositories(self) -> list[Path]:
        """Every configured repository, ``repo_path`` first."""
        return _repositories(self.repo_path, self.repo_paths)


class Git(BaseModel):
    """torchbot's commits and pushes in the managed repositories, and the README tables it checks."""

    repo_remote: str = Field("origin", description="the git remote pushes and fetches go to")
    git_author_name: str = Field("torchbot", description="author name of torchbot's commits")
    git_author_email: str = Field("torchbot@localhost", description="author email of torchbot's commits")
    # branches the README cross-branch tables need not list (fnmatch patterns)
    docs_skip_branches: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["*-staging", "bump/*"],
        description="branches the README cross-branch tables need not list (fnmatch patterns, comma separated)")

    @field_validator("docs_skip_branches", mode="before")
    @classmethod
    def _git_lists(cls, value: object) -> object:
        return csv_list(value)


class Upstream(BaseModel):
    """GitHub and nixpkgs: endpoints (base URLs so tests can point them at 127.0.0.1), the token,
    HTTP timeouts and retries, and the nixpkgs tarball pins are hashed from."""

    github_api_url: str = Field("https://api.github.com/", description="GitHub REST API base URL")
    github_token: SecretStr | None = Field(None, description="GitHub token: PRs, workflow dispatch, nixpkgs files")
    github_login: str | None = Field(None, description=(
        "the login TORCHBOT_GITHUB_TOKEN acts as (the author of torchbot's issues and pull requests); unset: "
        "asked with `GET /user`. Set it to `<app-slug>[bot]` for a GitHub App installation token, which cannot "
        "read `/user`"))
    github_repo: str = Field("barstoolbluz/build-pytorch", description=(
        "`owner/name` of the repository PRs and workflow dispatches go to; empty: none"))
    nixpkgs_repo: str = Field("NixOS/nixpkgs", description="`owner/name` of nixpkgs on GitHub (commits, compare)")
    channels_url: str = Field("https://channels.nixos.org/", description=(
        "nixpkgs channel endpoint base (`<base>/<channel>/git-revision`)"))
    default_channel: str = Field("nixos-unstable", description=(
        "the channel pin bumps follow without `--rev`/`--channel`"))
    http_timeout: float = Field(10.0, gt=0, le=3600, description=(
        "seconds an HTTP request may take (every HTTP client), at most 3600; Slack's client rounds it up to "
        "whole seconds"))
    http_retries: int = Field(3, ge=1, description=(
        "attempts per HTTP call (GitHub, nixpkgs, channels; Slack's rate-limit retries)"))
    http_backoff_seconds: float = Field(0.5, ge=0, le=30, description=(
        "first wait before an HTTP retry (GitHub, nixpkgs, channels); it doubles per retry, plus jitter, "
        "unless the server sent Retry-After or x-ratelimit-reset, which are honoured"))
    http_retry_seconds: float = Field(60.0, gt=0, description=(
        "an HTTP call gives up rather than start a retry wait that would end later than this many seconds "
        "after its first attempt"))
    # Reproducible pins: the tarball torchbot hashes (recipes always keep the GitHub URL)
    nixpkgs_tarball_url: str = Field("https://github.com/NixOS/nixpkgs/archive/", description=(
        "where bumps download the nixpkgs tarball they hash (a mirror works); recipes keep the GitHub URL"))
    nix_store: str | None = Field(None, description=(
        "`--store` for `nix-prefetch-url`; unset: Nix's own when usable, else a private one"))
    prefetch_timeout: float = Field(900.0, gt=0, description="seconds `nix-prefetch-url` may take")
    nixpkgs_web_url: str = Field("https://github.com/NixOS/nixpkgs/", description=(
        "nixpkgs on the web, for compare links in announcements"))

    @field_validator("github_token")
    @classmethod
    def _github_token(cls, value: SecretStr | None) -> SecretStr | None:
        return _plain_secret(value)

    @field_validator("github_api_url", "channels_url", "nixpkgs_tarball_url", "nixpkgs_web_url")
    @classmethod
    def _upstream_url(cls, value: str, info) -> str:
        return _base_url(value, slash=info.field_name != "nixpkgs_web_url")

    @field_validator("github_repo", "nixpkgs_repo")
    @classmethod
    def _owner_name(cls, value: str, info) -> str:
        if info.field_name == "github_repo" and not value.strip():
            return ""  # none: nothing is dispatched (and scheduled builds default to none)
        if not re.match(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", value.strip()):
            raise ValueError(f"{value!r} is not a GitHub repository: write owner/name")
        return value.strip()


class State(BaseModel):
    """The state DB, and the jobs and plans kept in it."""

    state_db: str = Field(default_factory=default_state_db, description=(
        "the state DB: a file path (a SQLite file; its directory is created), a `sqlite:///` URL, or "
        "`postgresql://user:password@host:5432/db` (psycopg 3; percent-encode `@` `/` `:` in the password)"))
    state_timeout_seconds: float = Field(10.0, gt=0, le=600, description=(
        "how long one state-DB step may take: PostgreSQL connect and statement timeouts, the SQLite busy "
        "timeout, and how long a chat answer waits for the store before saying it is not answering"))
    state_wait_seconds: float = Field(300.0, ge=0, description=(
        "how long a build run that has ended keeps retrying a state DB that does not answer; its results stay in "
        "memory and in a spool file beside the logs, and are written when the DB answers (at the latest when "
        "torchbot next starts)"))
    job_workers: int = Field(2, ge=1, le=64, description=(
        "confirmed builds, publishes and bumps running at once; more wait in a queue"))
    plan_ttl_seconds: int = Field(3600, ge=1, le=7 * 86400, description=(
        "how long a shown plan can be confirmed, at most 604800 (7 days)"))

    @field_validator("state_db")
    @classmethod
    def _state_db(cls, value: str) -> str:
        return state_db_url(value)


class Builds(BaseModel):
    """Builds and publishing: the commands, their logs, and where builds run (this host or GitHub)."""

    build_command: str | None = Field(None, description=(
        "the local build command, a template with placeholders `{package}` and `{org}` (shell-quoted); unset: "
        "`flox build {package}` when flox is on PATH, else nix-build of the same recipe (torchbot says which when "
        "it starts)"))
    publish_command: str = Field("flox publish -o {org} {package}", description=(
        "publish command; placeholders `{package}` and `{org}`"))
    build_timeout: float = Field(6 * 3600.0, gt=0, description="seconds a build may take before it is stopped")
    build_kill_grace: float = Field(5.0, gt=0, le=600, description=(
        "seconds a build being stopped (timed out, or torchbot stopping) gets to end after SIGTERM before its "
        "process group gets SIGKILL (then as long again for the group to be gone)"))
    build_jobs: int = Field(1, ge=1, description=(
        "local builds running at once (`release build --jobs` overrides)"))
    log_dir: Path = Field(default_factory=default_log_dir, description=(
        "build logs, one per build under `<dir>/<branch>/`; created at start, or torchbot refuses to start"))
    log_url: str | None = Field(None, description=(
        "base URL where TORCHBOT_LOG_DIR is served (http:// or https://); progress in Slack links failed builds "
        "to their logs under it, and shows the log's path when unset"))
    build_result_link: str = Field("result-{package}", description=(
        "what must exist in the work tree after a successful build; placeholder `{package}`"))
    build_check_command: str | None = Field(None, description=(
        "run after a successful build, e.g. `result-{package}/bin/python -c \"import torch\"`; "
        "placeholders `{package}` and `{org}`"))
    publish_timeout: float | None = Field(None, gt=0, description=(
        "seconds a publish may take; unset: the build timeout (`flox publish` builds what is not in the "
        "cache, so it may take as long as the build)"))
    build_cache: str | None = Field(None, description=(
        "the Nix binary cache the team runs (`s3://bucket?region=…`, an attic or cachix `https://` URL, "
        "`file:///…`): GitHub build jobs push their outputs there and the publish jobs after the merge "
        "substitute them instead of building. Unset (the default): no cache, and publishing a variant "
        "built at a pull request's head builds it again on its runner"))
    build_cache_public_key: str | None = Field(None, description=(
        "the public key the cache's outputs are signed with (`name:base64…`), trusted by the publish jobs "
        "(the signing key is the repository secret `TORCHBOT_CACHE_SIGNING_KEY`)"))
    build_platforms: Annotated[list[str], NoDecode] = Field(default_factory=list, description=(
        "platforms the local backend builds, comma separated; empty: this host's own"))
    build_backend: Literal["github", "local", "none"] | None = Field(None, description=(
        "the former name of TORCHBOT_SCHEDULE_BUILD_BACKEND, honoured when that one is unset"))
    schedule_build_backend: Literal["github", "local", "none"] | None = Field(None, description=(
        "what builds after a scheduled bump: github, local (on the bot's host) or none (bump and report "
        "only). Unset: github when TORCHBOT_GITHUB_TOKEN and TORCHBOT_GITHUB_REPO are set, else none"))
    github_workflow_file: str = Field("torchbot-build.yml", description=(
        "file name of the build workflow under `.github/workflows/`"))
    github_poll_seconds: float = Field(30.0, gt=0, description=(
        "seconds between polls of a followed GitHub workflow run (longer when the rate limit runs low)"))
    github_max_parallel: int | None = Field(None, ge=1, description=(
        "max-parallel of the build workflow's matrix jobs; unset (the default, GitHub's) runs every job "
        "at once. A cap limits runner cost or matches a self-hosted pool's capacity. "
        "TORCHBOT_BUILD_JOBS is local builds only"))
    github_stale_hours: float = Field(168.0, gt=0, description=(
        "torchbot stops following a GitHub run it has seen no change in for this long (its builds become "
        "interrupted, saying so); GitHub's own limits end jobs well before (6 h hosted, 5 days self-hosted)"))
    # runs-on labels per platform; recipes requiring big-parallel use the second map first
    github_runners: Annotated[dict[str, list[str]], NoDecode] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_RUNNERS.items()}, description=(
            "runs-on labels per platform, overriding the defaults per platform: `platform=label`, comma "
            "separated; `+` joins labels (`aarch64-linux=self-hosted+ARM64`), or a JSON object"))
    github_big_parallel_runners: Annotated[dict[str, list[str]], NoDecode] = Field(
        default_factory=dict, description=(
            "same form: labels for recipes with `requiredSystemFeatures = [ \"big-parallel\" ]`; platforms "
            "not listed use `TORCHBOT_GITHUB_RUNNERS`"))

    @field_validator("build_platforms", mode="before")
    @classmethod
    def _build_lists(cls, value: object) -> object:
        return csv_list(value)

    @field_validator("build_command", "log_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return (value.strip() or None) if isinstance(value, str) else value

    @field_validator("log_url")
    @classmethod
    def _log_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"{shown_url(value)} is not an http:// or https:// URL")
        return value if value is None or value.endswith("/") else value + "/"

    @field_validator("build_command", "publish_command", "build_check_command", "build_result_link")
    @classmethod
    def _placeholders(cls, value: str | None, info) -> str | None:
        if value is None:
            return None
        allowed = ("package",) if info.field_name == "build_result_link" else ("package", "org")
        if problem := placeholder_problem(value, allowed):
            raise ValueError(problem)
        return value

    @field_validator("schedule_build_backend", "build_backend", mode="before")
    @classmethod
    def _backend_word(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower() or None
        return value

    @field_validator("github_workflow_file")
    @classmethod
    def _workflow_file(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z0-9_.-]+\.ya?ml$", value):
            raise ValueError(f"{value!r} is not a workflow file name (name.yml, no directories)")
        return value

    @field_validator("github_max_parallel", mode="before")
    @classmethod
    def _no_cap(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None  # GitHub's default: no cap
        return value

    @field_validator("github_runners", "github_big_parallel_runners", mode="before")
    @classmethod
    def _split_runners(cls, value: object, info) -> object:
        parsed = runners(value)
        if info.field_name == "github_runners":  # entries override the hosted defaults per platform
            return {**{k: list(v) for k, v in DEFAULT_RUNNERS.items()}, **parsed}
        return parsed

    def publish_seconds(self) -> float:
        """How long a publish may take: TORCHBOT_PUBLISH_TIMEOUT, else the build timeout."""
        return self.publish_timeout if self.publish_timeout is not None else self.build_timeout

    def schedule_backend(self) -> str:
        """The backend scheduled builds use: the explicit setting, else github when a token and
        repository are configured (``Upstream``), else none (bump and report, build nothing)."""
        chosen = self.schedule_build_backend or self.build_backend
        if chosen:
            return chosen
        return "github" if getattr(self, "github_token", None) is not None and getattr(self, "github_repo", "") \
            else "none"


class Serve(BaseModel):
    """`torchbot serve --http` (the --host/--port options override these)."""

    host: str = Field("0.0.0.0", description="where `torchbot serve --http` listens (`--host` overrides)")
    api_token: SecretStr | None = Field(None, description="what `serve --http`'s read-only `/dashboard` asks for "
                                        "of any client that is not local: `Authorization: Bearer <token>` or the Basic "
                                        "password; at least 32 characters")
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list, description=(
        "reverse proxies in front of `serve --http` (IP addresses or CIDR networks, comma separated): from "
        "them the client is the address they add to X-Forwarded-For; a request that carries a forwarding header "
        "from anyone else is never local. Local (loopback) clients read `/dashboard` without TORCHBOT_API_TOKEN"))
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list, description=(
        "host names `/dashboard` answers to besides loopback's (comma separated; the Host header is checked, so "
        "a DNS-rebinding page cannot read it): the name people and the proxy use, e.g. `torchbot.example.org`"))
    port: int = Field(3000, ge=0, le=65535, description=(
        "the port of `torchbot serve --http`, 1-65535 (`--port` overrides; 0: any free port, which the "
        "start line names)"))

    @field_validator("api_token")
    @classmethod
    def _api_token(cls, value: SecretStr | None) -> SecretStr | None:
        return _plain_secret(value, MIN_API_TOKEN)

    @field_validator("trusted_proxies", "allowed_hosts", mode="before")
    @classmethod
    def _serve_lists(cls, value: object) -> object:
        return csv_list(value)

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: list[str]) -> list[str]:
        import ipaddress

        for v in value:
            try:
                ipaddress.ip_network(v, strict=False)
            except ValueError:
                raise ValueError(f"{v!r} is not an IP address or a CIDR network (like 10.0.0.0/8)") from None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        for v in value:
            if not re.fullmatch(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]", v):
                raise ValueError(f"{v!r} is not a host name (a name or an IP address, without a port or a scheme)")
        return [v.lower() for v in value]


class Schedule(BaseModel):
    """What runs on its own and when (cron expressions, APScheduler crontab syntax, UTC), and how
    pin bumps leave this machine."""

    bump_cron: str = Field("0 6 * * 1", description="when scheduled pin bumps run (crontab, UTC)")
    bump_vllm_branches: bool = Field(False, description="whether scheduled bumps include vLLM-certified branches")
    bump_delivery: Literal["pr", "push", "local"] | None = Field(None, description="how scheduled and chat bumps leave this machine: pr (a pull request per branch from `bump/<branch>-<rev>`, an open one updated), push (to the branch) or local (local commits only). Unset: pr when TORCHBOT_GITHUB_TOKEN and TORCHBOT_GITHUB_REPO are set, else local")  # noqa: E501
    bump_tracks: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict, description="the nixpkgs channel or branch a branch's bumps follow: `pattern=channel`, comma separated (fnmatch patterns, first match wins: `pytorch-2.9-*=nixos-25.05`); others follow TORCHBOT_DEFAULT_CHANNEL")  # noqa: E501
    bump_automerge: bool = Field(False, description="merge a bump pull request once every build at its head passed (like Renovate's automerge); off: the builds' result is shown on the pull request and a maintainer merges")  # noqa: E501
    bump_ignored_authors: Annotated[list[str], NoDecode, BeforeValidator(csv_list)] = Field(
        default_factory=list, description=(
        "authors (emails or names, comma separated) whose commits on a bump pull request's branch torchbot "
        "may still rewrite, like Renovate's gitIgnoredAuthors; a commit by anyone else stops torchbot updating "
        "that pull request"))
    poll_interval_seconds: int = Field(300, gt=0, description="seconds between scheduled checks of running builds")
    publish_interval_seconds: int = Field(900, gt=0, description="seconds between scheduled publishing runs")
    flush_interval_seconds: int = Field(60, gt=0, description="seconds between sends of pending release announcements")
    docs_cron: str = Field("0 7 * * 1", description=(
        "when the README cross-branch tables are checked (crontab, UTC); drift goes to the announce channel"))
    leader_lease_seconds: float = Field(30.0, ge=1, le=60, description=(
        "with several `torchbot serve` on one state DB, one (the leader) runs the schedule and renews its lease "
        "in the DB every third of this; when it stops, another takes over at most this many seconds later"))

    @field_validator("bump_delivery", "bump_tracks", mode="before")
    @classmethod
    def _bump_words(cls, value: object, info) -> object:
        return tracks(value) if info.field_name == "bump_tracks" else lower_word(value)

GROUPS = (Chat, Answer, Git, Upstream, State, Builds, Serve, Schedule)  # in the order docs/settings.md lists them
