"""Fixtures shared by the tests.

- The `ask` tests: the embedded catalog, and a context that answers from it (no repository, the
  default Flox organisation).
- Test-wide: the persistent recipe-facts cache goes to a temporary directory (tests never read or
  write the user's cache), and repositories are re-checked on every call (a test that moves a
  branch sees it at once).
"""

import pytest

from config.catalog import load_catalog
from config.settings import Settings
from release.context import Context


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
