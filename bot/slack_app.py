"""The Slack bot: a slack-bolt App whose listeners call the shared chat dispatcher.

Every listener acks first (well inside Slack's 3 s): fast answers (/variant, /pins, help)
are the ack itself; slow ones (plans, applying a plan) ack at once and report through
``respond`` to the command's response_url, replacing the message in place. Errors reach
the user as a sentence; tracebacks only the log. The Web API base URL comes from settings.
"""

from __future__ import annotations

import logging
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt import App
from slack_sdk import WebClient

from bot.answer import Answer
from bot.chat import PLANNERS, Chat, PlanReply
from bot.commands import ask
from release.context import Context
from config.errors import UsageError
from bot.slack_blocks import answer_blocks, blocks_for

log = logging.getLogger("torchbot.slack")

COMMANDS = ("/variant", "/pins", "/bump", "/build", "/publish", "/torchbot")


def _fallback(result) -> str:
    return result.text()[:3000]


def create_app(ctx: Context, chat: Chat | None = None) -> App:
    s = ctx.settings
    if s.slack_signing_secret is None and s.slack_app_token is None:
        raise UsageError("Set TORCHBOT_SLACK_SIGNING_SECRET (HTTP mode) or TORCHBOT_SLACK_APP_TOKEN (Socket Mode).")
    token = s.slack_bot_token.get_secret_value() if s.slack_bot_token else None
    app = App(
        client=WebClient(token=token, base_url=s.slack_api_url),
        signing_secret=s.slack_signing_secret.get_secret_value() if s.slack_signing_secret else None,
        token_verification_enabled=False,
        process_before_response=False,
        logger=log,
    )
    chat = chat or Chat(ctx)
    app._torchbot_chat = chat  # type: ignore[attr-defined]  # for tests and the console bridge

    def is_slow(name: str, text: str) -> bool:
        word = (text.split() or [""])[0].lower()
        return name in PLANNERS or (name == "torchbot" and word in PLANNERS)

    @app.command(COMMANDS[0])
    @app.command(COMMANDS[1])
    @app.command(COMMANDS[2])
    @app.command(COMMANDS[3])
    @app.command(COMMANDS[4])
    @app.command(COMMANDS[5])
    def on_command(ack, command, respond):
        name = command["command"].lstrip("/")
        text = command.get("text") or ""
        user, channel = command.get("user_id", ""), command.get("channel_id", "")
        if not is_slow(name, text):
            result = chat.command(name, text, user=user, channel=channel)
            ack(response_type="ephemeral", text=_fallback(result), blocks=blocks_for(result))
            return
        ack(response_type="ephemeral", text=f"Working on /{name} {text}…")
        result = chat.command(name, text, user=user, channel=channel)
        respond(response_type="ephemeral", replace_original=True, text=_fallback(result), blocks=blocks_for(result))

    @app.action("confirm_plan")
    def on_confirm(ack, body, respond):
        ack()
        pid = body["actions"][0]["value"]
        user = body.get("user", {}).get("id", "")
        respond(replace_original=True, text="Applying…")
        result = chat.confirm(pid, user)
        respond(replace_original=True, text=_fallback(result), blocks=blocks_for(result))

    @app.action("cancel_plan")
    def on_cancel(ack, body, respond):
        ack()
        result = chat.cancel(body["actions"][0]["value"], body.get("user", {}).get("id", ""))
        respond(replace_original=True, text=_fallback(result))

    @app.action("share_answer")
    def on_share(ack, body, respond):
        ack()
        answer = ask(ctx, body["actions"][0]["value"])
        respond(response_type="in_channel", replace_original=False, text=_fallback(answer),
                blocks=answer_blocks(answer, shareable=False))

    @app.event("app_mention")
    def on_mention(event, say):
        result = chat.mention(event.get("text", ""), user=event.get("user", ""), channel=event.get("channel", ""))
        blocks = answer_blocks(result, shareable=False) if isinstance(result, Answer) else blocks_for(result)
        say(text=_fallback(result), blocks=blocks, thread_ts=event.get("thread_ts") or event.get("ts"))

    @app.error
    def on_error(error, body, logger):
        logger.error("listener failed: %s", type(error).__name__, exc_info=error)

    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 resets connections under concurrent load


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # request lines go to debug, not stderr
        log.debug("%s - %s", self.address_string(), format % args)


def make_http_server(app: App, host: str = "127.0.0.1", port: int = 3000):
    """Request-signed HTTP mode: bolt's WSGI adapter on ``/slack/events`` in a threading server."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    handler = SlackRequestHandler(app, path="/slack/events")
    return make_server(host, port, handler, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)


def serve_http(app: App, host: str, port: int) -> None:
    server = make_http_server(app, host, port)
    log.warning("torchbot listening on http://%s:%d/slack/events", host, server.server_port)
    server.serve_forever()


def serve_socket(app: App, app_token: str) -> None:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    SocketModeHandler(app, app_token).start()


def start_in_thread(server) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return t
