"""The one HTTP retry policy of every httpx client torchbot uses (GitHub, nixpkgs, channels).

``HttpClient.request`` sends a request and retries what a server or the network says is
worth retrying: connection errors and timeouts, HTTP 5xx, 429, and GitHub's rate-limit 403
(one that carries ``Retry-After`` or ``x-ratelimit-remaining: 0``, or GitHub's
secondary-rate-limit message without either). A request that is not idempotent (a POST: a
workflow dispatch, a pull request) is sent again only when the first cannot have been acted
on: a connect error (it never left), 429 or a rate-limit 403 (refused unread). A 5xx or a
timeout after it was sent may come after GitHub did the work (a 502 from a gateway that timed
out while the dispatch created its run), so it is never resent; the :class:`Unavailable` it
raises says so (``may_have_acted``) and the caller finds out what happened. Any other answer
is returned to the adapter, which reads it. Between attempts it waits:

- what the server asked for: ``Retry-After`` (seconds or an HTTP date), else, when
  ``x-ratelimit-remaining`` is 0, until ``x-ratelimit-reset``; a secondary rate limit that
  says nothing of when: a minute, as GitHub asks;
- otherwise an exponential backoff with jitter (``TORCHBOT_HTTP_BACKOFF_SECONDS`` doubling
  per retry, plus up to as much again at random, capped at 30 s).

It gives up after ``TORCHBOT_HTTP_RETRIES`` attempts, or before a wait that would end past
``TORCHBOT_HTTP_RETRY_SECONDS`` from the first attempt (bounded total time), raising
:class:`Unavailable` (:class:`RateLimited` when the server's rate limit is why, with the time
it lifts); ``stopped_by`` says which bound ended the retries. Each retry is logged once,
naming method, host and path and why; never a header, so never a token. ``requests``
counts every request sent (retries included) and ``rate`` holds the last ``x-ratelimit-*``
headers seen, so callers can count and pace their polling.

Why tenacity, not stamina: stamina is a thin, opinionated layer over tenacity that computes
its own backoff; honouring a server's ``Retry-After``/``x-ratelimit-reset`` needs a wait that
reads the failed response, which tenacity's ``wait`` callable gets directly, together with
``stop_before_delay`` (never start a wait that would overrun the time bound) and
``before_sleep`` (one log line per retry). One dependency, the one both stand on.

May import: config.
"""

from __future__ import annotations

import functools
import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx
import tenacity

from config.errors import ExternalError

log = logging.getLogger("torchbot.http")
MAX_BACKOFF = 30.0  # seconds: the longest wait the backoff alone ever asks for
IDEMPOTENT = ("GET", "HEAD", "OPTIONS", "PUT", "DELETE")
SECONDARY_WAIT = 60.0  # seconds: GitHub's "wait at least one minute" for a secondary limit that names no time
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)  # the request never left
GITHUB_API_VERSION = "2022-11-28"  # the REST API version every GitHub request names
GITHUB_JSON = "application/vnd.github+json"


@functools.cache
def tls() -> ssl.SSLContext:
    """The one verifying TLS context of every httpx client in the process (httpx's own, with
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured as httpx does). Building one reads the whole CA
    bundle, about 20 ms of CPU: a client made per request, as each adapter call and each
    torchbot process makes, would pay it every time."""
    return httpx.create_ssl_context()


def github_headers(settings, accept: str = GITHUB_JSON) -> dict[str, str]:
    """The headers of every GitHub REST request: the media type, the API version, the token
    (when set)."""
    headers = {"Accept": accept, "X-GitHub-Api-Version": GITHUB_API_VERSION, "User-Agent": "torchbot"}
    if settings.github_token is not None:
        headers["Authorization"] = f"Bearer {settings.github_token.get_secret_value()}"
    return headers


def github_message(response: httpx.Response) -> str:
    """GitHub's ``message`` of an error answer ("" when it has none)."""
    try:
        data = response.json()
    except ValueError:
        return ""
    return str(data.get("message") or "").strip() if isinstance(data, dict) else ""


def no_such_commit(response: httpx.Response) -> bool:
    """GitHub's answer for a ref it does not know: 404, or 422 ``No commit found for SHA: ...``
    (what ``GET /repos/{owner}/{repo}/commits/{ref}`` gives for an unknown branch or sha)."""
    if response.status_code == 404:
        return True
    return response.status_code == 422 and github_message(response).lower().startswith("no commit found")


class Unavailable(ExternalError):
    """No usable answer after the retry policy ran out (network, 5xx, 429, rate limit).

    ``may_have_acted``: the last attempt reached the server and may have been carried out (a
    5xx, a read timeout, a dropped connection); False when it cannot have been (a connect error,
    a rate-limit refusal). ``stopped_by``: ``attempts`` (TORCHBOT_HTTP_RETRIES used up), ``time``
    (the next wait would end past TORCHBOT_HTTP_RETRY_SECONDS) or ``not retried`` (a request
    that is not idempotent and may have been acted on)."""

    def __init__(self, message: str, *, may_have_acted: bool = False, stopped_by: str = "attempts"):
        super().__init__(message)
        self.may_have_acted = may_have_acted
        self.stopped_by = stopped_by


class RateLimited(Unavailable):
    """The server's rate limit is exhausted until ``until`` (epoch seconds)."""

    def __init__(self, message: str, until: float, *, stopped_by: str = "attempts"):
        super().__init__(message, stopped_by=stopped_by)
        self.until = until


class Refused(ExternalError):
    """The server answered and said no (a 4xx that is not a rate limit): nothing was done."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RateLimit:
    """GitHub's ``x-ratelimit-*`` headers of one answer."""

    limit: int
    remaining: int
    reset: float  # epoch seconds when the window resets
    used: int
    resource: str = "core"

    @classmethod
    def from_headers(cls, headers: httpx.Headers) -> RateLimit | None:
        try:
            return cls(limit=int(headers["x-ratelimit-limit"]), remaining=int(headers["x-ratelimit-remaining"]),
                       reset=float(headers["x-ratelimit-reset"]), used=int(headers.get("x-ratelimit-used", 0)),
                       resource=headers.get("x-ratelimit-resource", "core"))
        except (KeyError, ValueError):
            return None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    backoff: float = 0.5  # the first backoff wait; it doubles per retry, plus jitter
    total: float = 60.0  # no wait may end later than this many seconds after the first attempt

    @classmethod
    def from_settings(cls, settings) -> RetryPolicy:
        return cls(attempts=max(1, int(settings.http_retries)), backoff=float(settings.http_backoff_seconds),
                   total=float(settings.http_retry_seconds))


class _Retryable(Exception):
    """A response worth retrying; ``hint`` is the wait the server asked for (seconds) or None."""

    def __init__(self, response: httpx.Response, reason: str, hint: float | None, limit_until: float | None):
        super().__init__(reason)
        self.response, self.reason, self.hint, self.limit_until = response, reason, hint, limit_until

    @property
    def refused(self) -> bool:
        """A rate-limit refusal: the server did not act on the request."""
        return self.limit_until is not None or self.response.status_code == 429


def server_wait(response: httpx.Response, now: float | None = None) -> tuple[float | None, float | None]:
    """(seconds the server asks us to wait, epoch when its rate limit lifts), each or None."""
    now = time.time() if now is None else now
    hint = until = None
    after = response.headers.get("retry-after")
    if after:
        try:
            hint = max(0.0, float(after))
        except ValueError:
            try:
                hint = max(0.0, parsedate_to_datetime(after).timestamp() - now)
            except (TypeError, ValueError):
                hint = None
    if response.headers.get("x-ratelimit-remaining") == "0":
        try:
            until = float(response.headers["x-ratelimit-reset"])
        except (KeyError, ValueError):
            until = None
        if hint is None and until is not None:
            hint = max(0.0, until - now) + 1.0  # the reset second itself, plus one for clock skew
    if hint is not None and until is None:
        until = now + hint
    return hint, until


def secondary_limit(response: httpx.Response) -> bool:
    """GitHub's secondary rate limit answered with neither ``Retry-After`` nor ``x-ratelimit-*``:
    a 403 whose message says so."""
    if response.status_code != 403 or "retry-after" in response.headers:
        return False
    try:
        message = str(response.json().get("message", ""))
    except (ValueError, AttributeError):
        return False
    return "secondary rate limit" in message.lower()


def _check(response: httpx.Response) -> httpx.Response:
    """The response, or _Retryable when the server says try again."""
    status = response.status_code
    hint, until = server_wait(response)
    if hint is None and secondary_limit(response):
        hint, until = SECONDARY_WAIT, time.time() + SECONDARY_WAIT
    limited = status in (403, 429) and (hint is not None or response.headers.get("x-ratelimit-remaining") == "0")
    if status >= 500 or status == 429 or limited:
        reason = f"HTTP {status}" + (" (rate limited)" if limited else "")
        return_until = until if limited else None
        raise _Retryable(response, reason, hint, return_until)
    return response


def _shown(url: httpx.URL | str) -> str:
    parts = urlsplit(str(url))
    return f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


class HttpClient:
    """An httpx client with torchbot's timeout and retry policy, counting requests."""

    def __init__(self, settings, *, headers: dict[str, str] | None = None, follow_redirects: bool = False,
                 client: httpx.Client | None = None, policy: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.policy = policy or RetryPolicy.from_settings(settings)
        self.sleep = sleep  # how it waits between attempts (tenacity's ``sleep``; a test records the waits)
        self.client = client or httpx.Client(timeout=settings.http_timeout, follow_redirects=follow_redirects,
                                              verify=tls())
        self.client.headers.update(headers or {})  # a given client (a test's, with event hooks) sends them too
        self.requests = 0
        self.rate: RateLimit | None = None

    def close(self) -> None:
        self.client.close()

    def _wait(self, state: tenacity.RetryCallState) -> float:
        err = state.outcome.exception() if state.outcome else None
        if isinstance(err, _Retryable) and err.hint is not None:
            return err.hint
        if self.policy.backoff <= 0:
            return 0.0
        return tenacity.wait_exponential_jitter(multiplier=self.policy.backoff, max=MAX_BACKOFF,
                                                jitter=self.policy.backoff)(state)

    def request(self, method: str, url: str, *, failure: str, then: str = "", **kwargs) -> httpx.Response:
        """Send with retries. ``failure`` starts the error message ("Could not get X"), ``then``
        ends it ("nothing was changed")."""
        shown = f"{method} {_shown(url)}"
        end = f"; {then}." if then else "."
        policy = self.policy

        def log_retry(state: tenacity.RetryCallState) -> None:
            err = state.outcome.exception() if state.outcome else None
            why = err.reason if isinstance(err, _Retryable) else type(err).__name__
            asked = " as the server asked" if isinstance(err, _Retryable) and err.hint is not None else ""
            log.info("%s: %s; retry %d of %d in %.1f s%s", shown, why, state.attempt_number,  # shown with -v
                        policy.attempts - 1, state.upcoming_sleep, asked)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_worth_retrying(method)),
            wait=self._wait,
            stop=tenacity.stop_after_attempt(policy.attempts) | _stop_before_total(policy.total),
            sleep=self.sleep,
            before_sleep=log_retry,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    self.requests += 1
                    response = self.client.request(method, url, **kwargs)
                    self.rate = RateLimit.from_headers(response.headers) or self.rate
                    _check(response)
        except _Retryable as err:
            tries = retrying.statistics.get("attempt_number", 1)
            stopped = _stopped_by(method, err, tries, policy)
            if err.limit_until is not None:
                at = datetime.fromtimestamp(err.limit_until, UTC).strftime("%H:%M:%S UTC")
                raise RateLimited(f"{failure}: the server's rate limit holds until {at} "
                                  f"({err.reason}, {_attempts(tries)}){end}", err.limit_until,
                                  stopped_by=stopped) from None
            raise Unavailable(f"{failure} after {_attempts(tries)} ({err.reason}){end}",
                              may_have_acted=not err.refused, stopped_by=stopped) from None
        except httpx.TransportError as err:
            tries = retrying.statistics.get("attempt_number", 1)
            raise Unavailable(f"{failure} after {_attempts(tries)} ({type(err).__name__}){end}",
                              may_have_acted=not isinstance(err, NOT_SENT),
                              stopped_by=_stopped_by(method, err, tries, policy)) from None
        return response


def _stop_before_total(total: float) -> Callable[[tenacity.RetryCallState], bool]:
    """tenacity's ``stop_before_delay(total)``, counting as time spent at least the waits already
    asked for (with real sleeps the same; with a recording ``sleep``, the time it would have taken)."""

    def stop(state: tenacity.RetryCallState) -> bool:
        spent = max(state.seconds_since_start or 0.0, state.idle_for)
        return spent + (state.upcoming_sleep or 0.0) >= total

    return stop


def _attempts(n: int) -> str:
    return f"{n} attempt" + ("" if n == 1 else "s")


def _worth_retrying(method: str):
    """Whether a failed attempt of ``method`` is sent again: for an idempotent method every
    network error and every retryable answer; for any other, only what cannot have been acted
    on (never left, or refused by a rate limit)."""
    idempotent = method.upper() in IDEMPOTENT

    def check(err: BaseException) -> bool:
        if isinstance(err, _Retryable):
            return idempotent or err.refused
        if isinstance(err, httpx.TransportError):
            return idempotent or isinstance(err, NOT_SENT)
        return False

    return check


def _stopped_by(method: str, err: BaseException, tries: int, policy: RetryPolicy) -> str:
    if not _worth_retrying(method)(err):
        return "not retried"
    return "attempts" if tries >= policy.attempts else "time"
