"""A repository owned by another user (mounted into a container) is refused by git's ownership
check; torchbot says so in one line naming the check and the fix, never "not a git
repository", and the repository works once it is a safe.directory (what the image sets)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.errors import RefusedError
from release.adapters.git import run_git
from release.recipes.reader import find_git_dir
from tests.support import ci
from tests.support import fixtures_builds as fx


@pytest.fixture(autouse=True)
def _root() -> None:
    ci.needs(os.getuid() == 0, "giving a repository to another user needs root")


@pytest.fixture
def foreign_repo(tmp_path: Path, monkeypatch) -> Path:
    work = fx.make_repo(tmp_path)
    for root, dirs, files in os.walk(work):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), 65534, 65534)
    os.lchown(work, 65534, 65534)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")  # no safe.directory from this host's own config
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    (tmp_path / "gitconfig").write_text("")
    return work


def test_another_owners_repository_is_named_as_git_refusing_it(foreign_repo: Path, tmp_path: Path) -> None:
    for read in (find_git_dir, lambda p: run_git(p, "rev-parse", "HEAD")):
        with pytest.raises(RefusedError) as err:
            read(foreign_repo)
        message = err.value.message
        assert "\n" not in message and "not a git repository" not in message
        assert message.startswith(f"git refuses {foreign_repo}: it is owned by another user (git's safe.directory")
        assert f"git config --global --add safe.directory {foreign_repo}" in message
    (tmp_path / "gitconfig").write_text(f"[safe]\n\tdirectory = {foreign_repo}\n")
    assert find_git_dir(foreign_repo) == foreign_repo / ".git"


def test_a_directory_that_is_no_repository_is_still_said_plainly(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RefusedError, match=r"is not a git repository\.$"):
        find_git_dir(plain)
