"""The settings an answer needs, as one group: the Flox org the install commands name, the
managed repositories the catalog is read from, the recipe-facts cache and the record of created
branches. This module is the one place of these fields' defaults, descriptions and rules: the full
``config.settings.Settings`` declares them from :data:`FIELDS` and validates them with the same
functions, and ``torchbot ask`` builds :class:`AnswerSettings` from the one source reader
(``config.setting_sources.read``) without pydantic, which costs more than the rest of an answer.
Whatever else a team configures (tokens, the state DB, the log level) is not read here: ``serve``
and ``release`` check it when they start.

Imports nothing of torchbot but config.checks, config.defaults, config.errors, config.paths and
config.setting_sources, and no pydantic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from config.checks import flox_org_problem
from config.defaults import FLOX_ORG
from config.errors import ConfigError
from config.paths import default_branches_file, default_cache_dir


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, not {type(value).__name__} {value!r}")
    return value


def flox_org(value: object) -> str:
    value = _text(value)
    if problem := flox_org_problem(value):
        raise ValueError(problem)
    return value


def _path(value: object) -> Path:
    if isinstance(value, Path):
        return value
    return Path(_text(value).strip())


def repo_path(value: object) -> Path | None:
    """One repository (a blank one is none; a comma-separated list has been split before)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _path(value)


def repo_paths(value: object) -> list[Path]:
    """Several repositories: comma separated, or a list."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected paths, comma separated, not {value!r}")
    return [_path(p) for p in value if not (isinstance(p, str) and not p.strip())]


def cache_dir(value: object) -> str:
    return str(value).strip() if isinstance(value, Path) else _text(value).strip()


def local_branches(value: object) -> Path:
    return _path(value)


def split_repositories(data: dict) -> dict:
    """``TORCHBOT_REPO_PATH`` given as comma-separated paths: the first is ``repo_path`` (the one
    release commands work on), all of them ``repo_paths`` (unless those are given too)."""
    raw = data.get("repo_path")
    if isinstance(raw, str) and "," in raw:
        parts = [p.strip() for p in raw.split(",") if p.strip()]
        data = {**data, "repo_path": parts[0] if parts else None}
        data.setdefault("repo_paths", parts)
    return data


def repositories(first: Path | None, every: list[Path] | tuple[Path, ...]) -> list[Path]:
    """Every configured repository, ``repo_path`` first; ``repo_paths`` counts only when it
    starts with ``repo_path`` (or ``repo_path`` is unset)."""
    if first is None:
        return [Path(p) for p in every]
    if every and Path(every[0]) == Path(first):
        return [Path(p) for p in every]
    return [Path(first)]


class Spec:
    """A setting of this group: its default (or default factory), its row in docs/settings.md
    and the rule that reads its raw value (ValueError with the sentence the user reads)."""

    __slots__ = ("default", "default_factory", "description", "parse")

    def __init__(self, parse: Callable[[object], object], description: str, default: object = None,
                 default_factory: Callable[[], object] | None = None):
        self.parse, self.description = parse, description
        self.default, self.default_factory = default, default_factory

    def default_value(self) -> object:
        return self.default_factory() if self.default_factory else self.default


FIELDS: dict[str, Spec] = {
    "repo_path": Spec(repo_path, (
        "the managed repositories, comma separated: build-pytorch first, then build-torchvision; when set, "
        "`ask` and `catalog` answer from their real branches and release commands work on the first")),
    "repo_paths": Spec(repo_paths, "all of `TORCHBOT_REPO_PATH` (set that instead)", default_factory=list),
    "flox_org": Spec(flox_org, (
        "Flox organisation in install commands and publishing; the placeholder `your-org` is refused "
        "where it would be published or committed (`release publish`, `release workflow --write`/`--commit`)"),
        default=FLOX_ORG),
    "cache_dir": Spec(cache_dir, (
        "where recipe facts are cached by git blob id (`off` disables); created at start, or torchbot refuses"),
        default_factory=lambda: str(default_cache_dir())),
    "local_branches": Spec(local_branches, (
        "the record of branches `release branch create` made, kept by repository (git directory): "
        "a branch shows where its repository is read, nowhere else"), default_factory=default_branches_file),
}


def env_name(name: str) -> str:
    return "TORCHBOT_" + name.upper()


class AnswerSettings:
    """The settings `ask` and `catalog` answer with; the same values ``Settings`` has for them.
    (A plain class: a dataclass costs an answer ~1 ms to define.)"""

    __slots__ = tuple(FIELDS)
    flox_org: str
    repo_path: Path | None
    repo_paths: list[Path]
    cache_dir: str
    local_branches: Path

    def __init__(self, **values: object):
        for name, spec in FIELDS.items():
            object.__setattr__(self, name, values.pop(name) if name in values else spec.default_value())
        if values:
            raise TypeError(f"not a setting of the answer group: {', '.join(values)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnswerSettings) and all(getattr(self, n) == getattr(other, n) for n in FIELDS)

    __hash__ = None

    def __repr__(self) -> str:
        return f"AnswerSettings({', '.join(f'{n}={getattr(self, n)!r}' for n in FIELDS)})"

    def repositories(self) -> list[Path]:
        """Every configured repository, ``repo_path`` first (as ``Settings.repositories``)."""
        return repositories(self.repo_path, self.repo_paths)

    @classmethod
    def from_raw(cls, raw: dict[str, object]) -> AnswerSettings:
        """From raw values (by field name; the others are ignored): ConfigError with one line per
        mistake naming its ``TORCHBOT_`` variable, the lines ``load_settings`` gives."""
        data = split_repositories({k: v for k, v in raw.items() if k in FIELDS})
        values, lines = {}, []
        for name, spec in FIELDS.items():
            if name not in data:
                continue
            try:
                values[name] = spec.parse(data[name])
            except ValueError as err:
                lines.append(f"{env_name(name)}: {err}")
        if lines:
            raise ConfigError("\n".join(lines))
        return cls(**values)


def answer_settings(env_file: str | None = ".env") -> AnswerSettings:
    """The answer group from every source (the environment, ``.env``, the TOML file), read once."""
    from config.setting_sources import read

    return AnswerSettings.from_raw(read(FIELDS, env_file))
