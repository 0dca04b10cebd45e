"""One retry policy for every HTTP client (release.adapters.http over tenacity), against
loopback fakes that answer the way GitHub documents: 429 with Retry-After, 403 with
x-ratelimit-remaining: 0 and x-ratelimit-reset, a secondary-limit 403 with neither, 5xx, and
a 5xx or a dropped connection after the request was carried out. Waits the policy must honour
are measured with the times the fake recorded for each request (lower bounds) or as the waits
asked of the client's ``sleep`` (recorded, not slept); when it stops is read from its attempts
and the bound it names, never from the wall clock."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest

from config.settings import Settings
from release.adapters.github import Actions
from release.adapters.http import RateLimited, Refused, Unavailable
from release.adapters.nixpkgs import NixpkgsClient
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs

RUNS = "/repos/acme/build-pytorch/actions/workflows/torchbot-build.yml/runs"
DISPATCHES = "/repos/acme/build-pytorch/actions/workflows/torchbot-build.yml/dispatches"
INPUTS = {"branch": "b", "pytorch": "[]", "companions": "[]", "request_id": "r1"}


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
        with caplog.at_level(logging.INFO, logger="torchbot.http"):  # retries are said with -v
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
        with pytest.raises(RateLimited, match=r"rate limit holds until .*1 attempt\)") as err:
            actions.find_runs({"nope"}, since=_since())
        statuses = [r.status for r in gh.log]
    assert statuses == [200, 403]  # gave up at once, without a second try: the reset is past the bound
    assert err.value.stopped_by == "time" and err.value.until > time.time() + 20


def test_server_errors_back_off_with_jitter_within_the_time_bound() -> None:
    with FakeGitHub() as gh:
        gh.throttle(100, status=503, retry_after=None)  # no Retry-After: our own backoff
        actions = Actions(_settings(gh, http_retries=50, http_backoff_seconds=0.1, http_retry_seconds=1.5))
        waits: list[float] = []
        actions.http.sleep = waits.append  # the waits asked for, not slept: no wall clock involved
        with pytest.raises(Unavailable, match=r"GitHub did not answer GET .* after \d+ attempts \(HTTP 503\)") as err:
            actions.find_runs({"nope"}, since=_since())
    # exponential, 0.1 s doubling, plus up to 0.1 s of jitter: 0.1-0.2, 0.2-0.3, 0.4-0.5, (0.8-0.9 > what is left)
    for n, wait in enumerate(waits):
        assert 0.1 * 2 ** n <= wait <= 0.1 * 2 ** n + 0.1, waits
    assert err.value.stopped_by == "time" and len(waits) in (3, 4) and sum(waits) < 1.5  # bounded by time
    assert actions.requests == len(gh.log) == len(waits) + 1  # one attempt more than waits


def test_a_wait_the_server_asks_for_is_the_wait_asked_of_sleep() -> None:
    with FakeGitHub() as gh:
        gh.secondary_limit(1)  # a minute, as GitHub asks; within a bound of two minutes it is waited
        actions = Actions(_settings(gh, http_retry_seconds=120))
        waits: list[float] = []
        actions.http.sleep = waits.append
        assert actions.find_runs({"nope"}, since=_since()) == {}
    assert waits == [60.0] and [r.status for r in gh.log] == [403, 200]


def test_attempts_run_out_before_the_time_bound_and_say_so() -> None:
    with FakeGitHub() as gh:
        gh.throttle(10, status=502, retry_after=None)
        actions = Actions(_settings(gh, http_retries=3, http_backoff_seconds=0.01))
        with pytest.raises(Unavailable, match=r"after 3 attempts \(HTTP 502\)") as err:
            actions.find_runs({"nope"}, since=_since())
    assert err.value.stopped_by == "attempts" and len(gh.log) == 3


def test_a_dispatch_answered_502_after_github_made_the_run_is_not_sent_again() -> None:
    with FakeGitHub() as gh:
        gh.answer_after(1, status=502)  # the run is created; the gateway's answer is a 502
        actions = Actions(_settings(gh))
        with pytest.raises(Unavailable, match=r"POST .*dispatches after 1 attempt \(HTTP 502\)") as err:
            actions.dispatch(INPUTS, ref="b")
    assert [(r.method, r.path) for r in gh.log] == [("POST", DISPATCHES)] and len(gh.runs) == 1
    assert err.value.may_have_acted and err.value.stopped_by == "not retried"


def test_a_dispatch_whose_answer_never_came_is_not_sent_again() -> None:
    with FakeGitHub() as gh:
        gh.answer_after(1, status=None)  # carried out, then the connection closes without an answer
        actions = Actions(_settings(gh))
        with pytest.raises(Unavailable, match="RemoteProtocolError") as err:
            actions.dispatch(INPUTS, ref="b")
    assert len(gh.log) == 1 and len(gh.runs) == 1 and err.value.may_have_acted


def test_a_dispatch_refused_by_a_rate_limit_is_sent_again_after_the_wait() -> None:
    with FakeGitHub() as gh:
        gh.throttle(1, status=429, retry_after=0.2)  # refused unread: safe to send again
        actions = Actions(_settings(gh))
        made = actions.dispatch(INPUTS, ref="b")
        first, second = gh.log
    assert (first.status, second.status) == (429, 200) and second.t - first.t >= 0.15 and len(gh.runs) == 1
    assert made == {"id": 1000, "html_url": "https://github.com/acme/build-pytorch/actions/runs/1000"}


def test_a_dispatch_that_never_left_is_sent_again() -> None:
    with FakeGitHub() as gh:
        closed = gh.url  # a port nobody listens on once this server is gone
    with FakeGitHub() as gh:
        actions = Actions(_settings(gh, github_api_url=closed, http_retries=2, http_backoff_seconds=0.01))
        with pytest.raises(Unavailable, match=r"after 2 attempts \(ConnectError\)") as err:
            actions.dispatch(INPUTS, ref="b")
    assert actions.requests == 2 and not err.value.may_have_acted and err.value.stopped_by == "attempts"


def test_a_secondary_limit_without_headers_waits_a_minute_as_github_asks() -> None:
    with FakeGitHub() as gh:
        gh.secondary_limit(1)  # 403, GitHub's message, no Retry-After and no x-ratelimit-*
        actions = Actions(_settings(gh))  # a minute is past the 30 s bound: not waited out here
        with pytest.raises(RateLimited, match="rate limit holds until") as err:
            actions.find_runs({"nope"}, since=_since())
    assert len(gh.log) == 1 and err.value.until >= time.time() + 50 and err.value.stopped_by == "time"


def test_a_404_is_a_refusal_and_is_not_retried() -> None:
    with FakeGitHub() as gh:
        actions = Actions(_settings(gh))
        with pytest.raises(Refused, match="HTTP 404") as err:
            actions.run("4242")  # no such run
    assert err.value.status == 404 and len(gh.log) == 1


def test_a_refusal_is_not_retried() -> None:
    with FakeGitHub() as gh:
        actions = Actions(_settings(gh, github_token="ghp-wrong"))
        with pytest.raises(Exception, match="HTTP 401"):
            actions.find_runs({"nope"}, since=_since())
        assert len(gh.log) == 1
