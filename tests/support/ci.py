"""Skips CI cannot afford: CI (``.ci/run``: ``make test`` on a fresh clone, as root, with
``CI=true``) has root, nix-instantiate, chromium and the console script, so a test that would
skip for want of one of them fails there instead of passing unseen."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def skip(reason: str) -> None:
    """Skip the running test for ``reason``; under ``CI=true`` fail it, naming the reason."""
    if IN_CI:
        pytest.fail(f"CI must run this test, but: {reason}", pytrace=False)
    pytest.skip(reason)


def needs(condition: bool, reason: str):
    """A fixture body (``@pytest.fixture(autouse=True)`` in a module) or a call at the top of a
    test: ``skip(reason)`` unless ``condition`` holds."""
    if not condition:
        skip(reason)
