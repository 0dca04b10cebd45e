"""Runtime settings.

Sources, highest priority first: constructor arguments, ``TORCHBOT_*`` environment
variables, a ``.env`` file, an optional ``torchbot.toml`` (path overridable with
``TORCHBOT_CONFIG``), then the defaults below. The three outside sources are read by the one
reader, ``config.setting_sources``, which ``ask`` uses too. The environment names are a contract
used by deployments and tests; secrets are ``SecretStr`` so they never print.

Values are checked when settings load (token kinds, Slack IDs, URLs, the state DB URL, command
placeholders, the Flox org, numbers and intervals, the TOML file itself). The settings an answer
needs (the Flox org, the repositories, the cache, the branch records) are declared and checked
from their one place, ``config.settings_answer``, which ``ask`` reads without pydantic.
``load_settings()`` turns every mistake into a :class:`~config.errors.ConfigError` with one line
per mistake naming its ``TORCHBOT_`` variable.
What the settings name on disk is checked when a command starts (``config.checks.check_files``).
Defaults for torchbot's own files are the platform's directories (``config.paths``), never the
working directory. Every field's ``description`` is its row in docs/settings.md (``config.settings_doc``).
"""

from __future__ import annotations

from contextvars import ContextVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from config.checks import check_config_file
from config.errors import ConfigError
from config.paths import config_file
from config.setting_groups import Answer, Builds, Chat, Git, Schedule, Serve, State, Upstream
from config.setting_sources import BLANK_IS_UNSET, read, unreadable

_ENV_FILE: ContextVar[str | None] = ContextVar("torchbot_env_file", default=".env")  # of the Settings being made


class Settings(Schedule, Serve, Builds, State, Upstream, Git, Answer, Chat, BaseSettings):
    """Every setting: the groups of ``config.setting_groups``, one per concern (pydantic lists
    the fields of the last base first: Chat, Answer, Git, Upstream, State, Builds, Serve,
    Schedule). Each field's ``description`` is its row in the settings table of docs/settings.md
    (``python -m config.settings_doc --write docs/settings.md``)."""

    model_config = SettingsConfigDict(
        env_prefix="TORCHBOT_",
        env_file=None,  # pydantic-settings reads no .env: the one reader does (``_env_file`` below)
        extra="ignore",
        allow_inf_nan=False,  # inf or nan as a number of seconds overflows the clocks and clients it reaches
    )

    def __init__(self, _env_file: str | None = ".env", **values: object):
        """``_env_file``: the .env file the reader reads (None: none), as pydantic-settings' own."""
        chosen = _ENV_FILE.set(_env_file)
        try:
            super().__init__(**values)
        finally:
            _ENV_FILE.reset(chosen)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # constructor arguments first; the environment, .env and the TOML file from the one reader
        return (_BlankIsUnset(init_settings), _Sources(settings_cls, _ENV_FILE.get()), file_secret_settings)


class _BlankIsUnset(PydanticBaseSettingsSource):
    """Constructor arguments less the path settings they give blank (as the reader drops them)."""

    def __init__(self, source: PydanticBaseSettingsSource):
        super().__init__(source.settings_cls)
        self._source = source

    def get_field_value(self, field, field_name):  # unused: __call__ asks the wrapped source
        return None, field_name, False

    def __call__(self) -> dict:
        return {k: v for k, v in self._source().items()
                if not (k in BLANK_IS_UNSET and isinstance(v, str) and not v.strip())}


class _Sources(PydanticBaseSettingsSource):
    """The environment, the .env file and the TOML file, as config.setting_sources.read gives them."""

    def __init__(self, settings_cls: type[BaseSettings], env_file: str | None):
        super().__init__(settings_cls)
        self._env_file = env_file

    def get_field_value(self, field, field_name):  # unused: __call__ reads every source at once
        return None, field_name, False

    def __call__(self) -> dict:
        return read(self.settings_cls.model_fields, self._env_file)


def env_name(field: str) -> str:
    return "TORCHBOT_" + field.upper()


NOT_ECHOED = ("token", "secret", "state_db")  # fields whose values never appear in a message


def load_settings(**overrides: object) -> Settings:
    """Settings, or a ConfigError with one line per mistake naming its TORCHBOT_ variable."""
    import tomllib

    check_config_file()
    try:
        return Settings(**overrides)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            field = str(e["loc"][0]) if e["loc"] else "?"
            msg = str(e["msg"]).removeprefix("Value error, ")
            if e["type"] not in ("value_error", "assertion_error"):
                shown = e.get("input")
                secret = any(word in field for word in NOT_ECHOED)
                msg = f"{msg[0].lower()}{msg[1:]}" + ("" if secret or shown is None else f" (got {shown!r})")
            lines.append(f"{env_name(field)}: {msg}")
        raise ConfigError("\n".join(lines)) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{config_file()[0]} (TORCHBOT_CONFIG) is not valid TOML: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(unreadable(overrides.get("_env_file", ".env"), err)) from None
