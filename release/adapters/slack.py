"""The Slack Web API adapter for the release manager (slack_sdk): a client with torchbot's
base URL, timeout and retry handlers (connection errors, 429 Retry-After). The chat front
end's Slack code lives in bot/.

May import: config.
"""

from __future__ import annotations

from typing import ClassVar


def make_client(settings):
    from slack_sdk import WebClient
    from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

    from config.setting_values import whole_seconds

    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return WebClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=whole_seconds(settings.http_timeout),
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=1),
            RateLimitErrorRetryHandler(max_retry_count=max(1, settings.http_retries)),
        ],
    )


class Paced:
    """A client that keeps within Slack's rate tiers before Slack has to say so: per method (and
    channel), a token bucket of ``burst`` calls refilled at the tier's rate (Tier 3, 50 a minute,
    for ``conversations.history``/``replies``/``join`` and ``chat.update``; about one message a
    second per channel for ``chat.postMessage``). A 429 that comes anyway is waited out by the
    client's own Retry-After handler. ``clock``/``sleep`` are injectable for tests."""

    RATES: ClassVar[dict[str, float]] = {  # calls a second, per method and channel
        "chat_update": 50 / 60, "conversations_history": 50 / 60, "conversations_replies": 50 / 60,
        "conversations_join": 50 / 60, "chat_postMessage": 1.0}

    def __init__(self, client, burst: int = 20, clock=None, sleep=None):
        import threading
        import time

        self.client, self.burst = client, burst
        self.clock, self.sleep = clock or time.monotonic, sleep or time.sleep
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (method, channel) -> tokens, when
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds spent waiting (for the bench and tests)

    def _take(self, method: str, channel: str) -> None:
        rate = self.RATES[method]
        with self._lock:
            now = self.clock()
            tokens, since = self._buckets.get((method, channel), (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - since) * rate)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / rate
            self._buckets[(method, channel)] = (tokens - 1 + wait * rate, now + wait)
        if wait:
            self.waited += wait
            self.sleep(wait)

    def __getattr__(self, name: str):
        attr = getattr(self.client, name)
        if name not in self.RATES:
            return attr

        def paced(*args, **kwargs):
            self._take(name, str(kwargs.get("channel", "")))
            return attr(*args, **kwargs)

        return paced
