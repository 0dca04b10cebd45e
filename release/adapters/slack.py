"""The Slack Web API adapter for the release manager (slack_sdk): a client with torchbot's
base URL, timeout and retry handlers (connection errors, 429 Retry-After). The chat front
end's Slack code lives in bot/.

May import: config.
"""

from __future__ import annotations


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
