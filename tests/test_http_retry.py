"""One retry policy for every HTTP client (release.adapters.http over tenacity), against
loopback fakes that answer the way GitHub documents: 429 with Retry-After, 403 with
x-ratelimit-remaining: 0 and x-ratelimit-reset, 5xx. Waits are measured with the times the
fake recorded for each request, never with sleeps in the test."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from config.settings import Settings
from release.adapters.github import Actions
from release.adapters.http import RateLimited, Unavailable
from release.adapters.nixpkgs import NixpkgsClient
from tests.fakes_github import FakeGitHub
from tests.fakes_nixpkgs import FakeNixpkgs

RUNS = "/repos/acme/build-pytorch/actions/workflows/torchbot-build.yml/runs"


def _settings(gh: FakeGitHub, **over) -> Settings:
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, http_retries=3,
                http_backoff_seconds=0.05, http_retry_seconds=30, _env_file=None)
    return Settings(**{**base, **over})


def _since() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)


def test_429_retry_after_is_honoured_and_logged_once_without_the_token(caplog) -> None:
    with FakeGitHub() as gh:
        gh.throttle(1, status=429, retry_after=1)
        actions = Actions(_settings(gh))
        with caplog.at_level(logging.WARNING, logger="torchbot.http"):
            assert actions.find_runs({"nope"}, since=_since()) == {}
        first, second = [r for r in gh.log if r.path == RUNS]
    assert (first.status, second.status) == (429, 200)
    assert second.t - first.t >= 0.95  # the fake's own clock: the retry waited Retry-After
    assert actions.requests == 2
    retries = [r.getMessage() for r in caplog.records]
    assert len(retries) == 1 and "HTTP 429" in retries[0] and "in 1.0 s as the server asked" in retries[0]
    assert gh.token not in caplog.text and "Bearer" not in caplog.text


def test_every_client_uses_it_nixpkgs_too() -> None:
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url) as gh:
        nix.commits.add("a" * 40)
        gh.throttle(1, status=429, retry_after=1)
        client = NixpkgsClient(_settings(gh))
        assert client.resolve("a" * 40) == "a" * 40
        first, second = [r for r in gh.log if "/commits/" in r.path]
    assert (first.status, second.status) == (429, 200) and second.t - first.t >= 0.95
    assert client.http.requests == 2


def test_an_exhausted_rate_limit_waits_for_x_ratelimit_reset() -> None:
    with FakeGitHub(rate_limit=2, window=2.0) as gh:
        actions = Actions(_settings(gh))
        for _ in range(3):
            actions.find_runs({"nope"}, since=_since())
        log = [r for r in gh.log if r.path == RUNS]
    assert [r.status for r in log] == [200, 200, 403, 200]
    # the retry went out only after the fake's window (opened by the first request) had reset
    assert log[3].t >= log[0].t + 2.0
    assert actions.rate is not None and actions.rate.limit == 2 and actions.rate.remaining == 1


def test_a_rate_limit_longer_than_the_time_bound_is_not_waited_out() -> None:
    with FakeGitHub(rate_limit=1, window=30.0) as gh:
        actions = Actions(_settings(gh, http_retry_seconds=2))
        actions.find_runs({"nope"}, since=_since())
        t0 = time.monotonic()
        with pytest.raises(RateLimited, match="rate limit holds until") as err:
            actions.find_runs({"nope"}, since=_since())
    assert time.monotonic() - t0 < 1.5  # gave up at once: the reset is past the bound
    assert err.value.until > time.time() + 20


def test_server_errors_back_off_with_jitter_within_the_time_bound() -> None:
    with FakeGitHub() as gh:
        gh.throttle(100, status=503, retry_after=None)  # no Retry-After: our own backoff
        actions = Actions(_settings(gh, http_retries=50, http_backoff_seconds=0.1, http_retry_seconds=1.5))
        t0 = time.monotonic()
        with pytest.raises(Unavailable, match=r"GitHub did not answer GET .* after \d+ attempts \(HTTP 503\)"):
            actions.find_runs({"nope"}, since=_since())
        took = time.monotonic() - t0
        times = [r.t for r in gh.log]
    gaps = [b - a for a, b in pairwise(times)]
    assert took < 1.5 + 0.5 and 3 <= len(times) < 50  # bounded by time, not by attempts
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2  # exponential: 0.1, 0.2, ... plus jitter


def test_a_refusal_is_not_retried() -> None:
    with FakeGitHub() as gh:
        actions = Actions(_settings(gh, github_token="ghp-wrong"))
        with pytest.raises(Exception, match="HTTP 401"):
            actions.find_runs({"nope"}, since=_since())
        assert len(gh.log) == 1
