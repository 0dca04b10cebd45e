"""The Slack bot: a slack-bolt App whose listeners (``bot/frontends/slack/listeners.py``) call
the shared chat dispatcher. ``create_app`` makes it in three steps: the Bolt app with a Web
API client from settings, the chat dispatcher with who counts as an admin
(``TORCHBOT_ADMINS`` and ``TORCHBOT_ADMIN_USERGROUP``), and the listeners with the record of
deliveries already answered. HTTP serving is in ``bot/frontends/slack/http_mode.py``, Socket
Mode in ``bot/frontends/slack/socket_mode.py``."""

from __future__ import annotations

import logging

from slack_bolt import App
from slack_sdk import WebClient

from bot.frontends.chat import Chat
from bot.frontends.slack.deliveries import Deliveries
from bot.frontends.slack.listeners import COMMANDS, Listeners
from bot.frontends.slack.workspace import Workspace
from config.setting_values import whole_seconds
from release.context import Context

log = logging.getLogger("torchbot.slack")

__all__ = ["COMMANDS", "create_app", "web_client"]


def web_client(settings) -> WebClient:
    from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return WebClient(token=token, base_url=settings.slack_api_url, timeout=whole_seconds(settings.http_timeout),
                     retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=1),
                                     RateLimitErrorRetryHandler(max_retry_count=max(1, settings.http_retries))])


def bolt_app(settings) -> App:
    """The Bolt app: listeners run after the ack (``process_before_response=False``)."""
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else None
    app = App(
        client=web_client(settings),
        signing_secret=secret or "socket-mode-only",  # HTTP mode refuses to start without the real one
        token_verification_enabled=False,
        process_before_response=False,
        logger=log,
    )
    app._torchbot_signing_secret = secret  # type: ignore[attr-defined]  # for the HTTP guard
    return app


def chat_for(ctx: Context, client: WebClient, chat: Chat | None = None) -> Chat:
    """The chat dispatcher, with the members of TORCHBOT_ADMIN_USERGROUP as admins too."""
    chat = chat or Chat(ctx)
    usergroup = ctx.settings.admin_usergroup
    if usergroup and chat.is_admin is None:
        from bot.frontends.slack.admins import UsergroupAdmins

        chat.is_admin = UsergroupAdmins(client, usergroup)
    return chat


def create_app(ctx: Context, chat: Chat | None = None) -> App:
    app = bolt_app(ctx.settings)
    chat = chat_for(ctx, app.client, chat)
    deliveries = Deliveries(chat.store)
    workspace = Workspace()  # learned from auth.test when serving starts
    app.use(workspace.middleware)
    Listeners(ctx, chat, deliveries).register(app)
    app._torchbot_workspace = workspace  # type: ignore[attr-defined]
    app._torchbot_chat = chat  # type: ignore[attr-defined]  # for tests and the console bridge
    app._torchbot_deliveries = deliveries  # type: ignore[attr-defined]  # for tests
    return app
