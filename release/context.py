"""What every command needs: settings and the catalog (embedded, or read from the managed
repositories when ``TORCHBOT_REPO_PATH`` is set: one path, or comma-separated paths of a
build-pytorch and a build-torchvision repository). One Context serves the CLI, the console
chat and Slack alike. The repositories' catalog is cached by commit: it is read again only
when a branch moves, so a long-running bot answers from what the branches hold now."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from config.catalog import Catalog
from config.catalog_data import load_catalog
from config.errors import UsageError

if TYPE_CHECKING:
    from config.settings import Settings


def _settings() -> Settings:
    from config.settings import Settings  # pydantic-settings: loaded only by those who need it

    return Settings()


@dataclass
class Context:
    """The settings and the catalog every command runs with."""

    settings: Settings = field(default_factory=_settings)
    use_repo: bool = True  # answer from the repositories' real branches when some are configured

    @property
    def repositories(self) -> list[Path]:
        """Every configured repository (build-pytorch first)."""
        s = self.settings
        repo_path = getattr(s, "repo_path", None)
        repo_paths = tuple(getattr(s, "repo_paths", ()) or ())
        if not self.use_repo or (repo_path is None and not repo_paths):
            return []
        key = (repo_path, repo_paths)
        cached = self.__dict__.get("_repos")
        if cached is None or cached[0] != key:
            paths = s.repositories() if hasattr(s, "repositories") else [Path(repo_path)]
            cached = self.__dict__["_repos"] = (key, paths)
        return cached[1]

    @property
    def catalog(self) -> Catalog:
        embedded = load_catalog()
        paths = self.repositories
        if not paths:
            return embedded
        from release.recipes.repos import catalog_from_repositories

        return catalog_from_repositories(paths, embedded)

    def repo_set(self):
        """The configured repositories as read (models, problems, catalog); None without any."""
        paths = self.repositories
        if not paths:
            return None
        from release.recipes.repos import read_repositories

        return read_repositories(paths, load_catalog())


def repo_arg(ctx: Context, repo: str | Path | None) -> Path:
    """``repo`` or ``TORCHBOT_REPO_PATH``, as given (the git adapter says if it is no repository)."""
    path = repo or ctx.settings.repo_path
    if path is None:
        raise UsageError("No repository: pass --repo PATH or set TORCHBOT_REPO_PATH.")
    return Path(path)


def repo_path(ctx: Context, repo: str | Path | None) -> Path:
    """``repo`` or ``TORCHBOT_REPO_PATH``, resolved and checked to be a git repository."""
    from config.checks import repository_problem

    path = repo_arg(ctx, repo).expanduser().resolve()
    if problem := repository_problem(path):
        raise UsageError(f"{'--repo' if repo else 'TORCHBOT_REPO_PATH'}: {problem}.")
    return path


def torchvision_model(ctx: Context, repo: str | Path | None = None):
    """The build-torchvision repository as read: ``repo`` (checked to be one), else the first
    repository of ``TORCHBOT_REPO_PATH`` whose recipes build torchvision; None when there is none."""
    from release.recipes.reader import VISION_REPO, read_repository

    if repo:
        model = read_repository(repo_path(ctx, repo), load_catalog())
        if model.kind != VISION_REPO:
            raise UsageError(f"{repo} is a {model.kind} repository, not a build-torchvision one.")
        return model
    for path in ctx.settings.repositories()[1:]:
        model = read_repository(path, load_catalog())
        if model.kind == VISION_REPO:
            return model
    return None
