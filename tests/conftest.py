"""Test-wide settings: the persistent recipe-facts cache goes to a temporary directory (tests
never read or write the user's cache), and repositories are re-checked on every call (a test
that moves a branch sees it at once)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_reader_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCHBOT_CACHE_DIR", str(tmp_path_factory.mktemp("torchbot-cache")))
    from release.recipes import repos

    mp.setattr(repos, "RECHECK_SECONDS", 0.0)
    yield
    mp.undo()
