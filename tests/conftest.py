"""Fixtures shared by the `ask` tests: the embedded catalog, and a context that answers from it
(no repository, the default Flox organisation)."""

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
