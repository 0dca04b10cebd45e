"""What every command needs: settings and the catalog (embedded, or read from the
managed repository when ``TORCHBOT_REPO_PATH`` is set). One Context serves the CLI, the
console chat and Slack alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from config.catalog import Catalog, load_catalog
from config.errors import UsageError

if TYPE_CHECKING:
    from config.settings import Settings


def _settings() -> Settings:
    from config.settings import Settings  # pydantic-settings: loaded only by those who need it

    return Settings()


@dataclass
class Context:
    settings: Settings = field(default_factory=_settings)
    use_repo: bool = True  # answer from the repository's real branches when one is configured

    @cached_property
    def catalog(self) -> Catalog:
        embedded = load_catalog()
        repo = self.settings.repo_path
        if self.use_repo and repo is not None:
            try:
                from release.recipes.reader import catalog_from_repository
            except ImportError:  # reader not available: embedded data
                return embedded
            return catalog_from_repository(repo, embedded)
        return embedded


def repo_path(ctx: Context, repo: str | Path | None) -> Path:
    """``repo`` or ``TORCHBOT_REPO_PATH``, resolved and checked to be a git repository."""
    path = Path(repo) if repo else ctx.settings.repo_path
    if path is None:
        raise UsageError("No repository: pass --repo PATH or set TORCHBOT_REPO_PATH.")
    path = Path(path).expanduser().resolve()
    if not (path / ".git").exists() and not (path / "HEAD").exists():
        raise UsageError(f"{path} is not a git repository.")
    return path
