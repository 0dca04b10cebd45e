"""Fixtures shared by the tests.

- The `ask` tests: the embedded catalog, and a context that answers from it (no repository, the
  default Flox organisation).
- Test-wide: torchbot's own files (state DB, audit log, logs, the recipe-facts cache, created
  branches) default to a temporary home (``XDG_DATA_HOME``, ``XDG_STATE_HOME``,
  ``XDG_CACHE_HOME``, set before any test module is imported, inherited by the torchbot
  processes tests start), so no test reads or writes the user's; the cache has its own
  temporary directory; repositories are re-checked on every call (a test that moves a branch
  sees it at once); what one test's CLI run chose as its paths does not leak into the next.
- GitHub conformance: every exchange with a GitHub stand-in is checked against GitHub's
  OpenAPI description as it happens (tests/support/github_conformance.py); a test during which
  one was off the spec fails, and so does the session if any problem is left; the terminal
  summary says how many exchanges were checked.
- Slack conformance: the same for every exchange with the Slack stand-in, against Slack's
  documented methods (tests/support/slack_conformance.py, registered as a plugin below).
- Order: the files tests/slow_files.txt lists are collected first, longest first, so that in a
  parallel run (``--dist loadfile`` hands files out in collection order) no long file starts
  last while the other workers are idle.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from config.catalog_data import load_catalog
from config.settings import Settings
from release.context import Context
from tests.support.github_conformance import (  # noqa: F401  (the GitHub conformance check's hooks)
    github_conformance_check,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
)

XDG = ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
# Git's housekeeping, off for the throwaway repositories of the tests: after each commit, fetch
# or push git starts `git maintenance run --auto` and `git gc --auto` (about 3,100 processes a
# run of the suite, the pushed-to side's included) that only matter to repositories that live for months.
NO_HOUSEKEEPING = {"GIT_CONFIG_COUNT": "3", "GIT_CONFIG_KEY_0": "maintenance.auto", "GIT_CONFIG_VALUE_0": "false",
                   "GIT_CONFIG_KEY_1": "gc.auto", "GIT_CONFIG_VALUE_1": "0",
                   "GIT_CONFIG_KEY_2": "receive.autogc", "GIT_CONFIG_VALUE_2": "false"}
_saved: dict[str, str | None] = {}


def pytest_configure(config):
    from tests.support import slack_conformance

    if not config.pluginmanager.is_registered(slack_conformance):
        config.pluginmanager.register(slack_conformance, "slack_conformance")
    home = tempfile.mkdtemp(prefix="torchbot-test-home-")
    _saved["home"] = home
    for var in XDG:
        _saved[var] = os.environ.get(var)
        os.environ[var] = os.path.join(home, var.split("_")[1].lower())
    for var, value in NO_HOUSEKEEPING.items():
        _saved[var] = os.environ.get(var)
        os.environ[var] = value


def slow_files() -> list[str]:
    """tests/slow_files.txt's paths (relative to the checkout), longest first."""
    text = (Path(__file__).parent / "slow_files.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(slow_files())}
    root = Path(str(config.rootpath))

    def key(item) -> int:
        try:
            return rank.get(Path(str(item.path)).relative_to(root).as_posix(), len(rank))
        except ValueError:
            return len(rank)

    items.sort(key=key)  # stable: each file's tests, and the other files, keep their order


def pytest_unconfigure(config):
    for var in (*XDG, *NO_HOUSEKEEPING):
        if _saved.get(var) is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = _saved[var]
    shutil.rmtree(_saved.get("home", ""), ignore_errors=True)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(scope="module")
def ctx():
    return Context(Settings(repo_path=None))


@pytest.fixture(autouse=True, scope="session")
def _isolated_reader_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCHBOT_CACHE_DIR", str(tmp_path_factory.mktemp("torchbot-cache")))
    from release.recipes import repos

    mp.setattr(repos, "RECHECK_SECONDS", 0.0)
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _paths_from_the_environment():
    from config import paths

    paths.forget()
    yield
    paths.forget()
