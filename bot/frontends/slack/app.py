"""The Slack bot: a slack-bolt App whose listeners call the shared chat dispatcher.

Listeners only plan, ack and enqueue. Every listener acks first (well inside Slack's 3 s):
fast answers (/variant, /pins, help) are the ack itself; plans ack at once and arrive through
``respond`` (the command's response URL); a Confirm hands the plan to the job runner and the
job reports in a thread of the channel (``bot/frontends/slack/jobs.py``). Unknown commands and buttons
are acked with a short help. An error after the ack reaches the user as an apology with an
error id that is in the log; tracebacks only go to the log. The Web API base URL comes from
settings. HTTP serving is in ``bot/frontends/slack/http_mode.py``, Socket Mode in ``bot/frontends/slack/socket_mode.py``.
"""

from __future__ import annotations

import logging
import re

from slack_bolt import App
from slack_sdk import WebClient

from bot.frontends.chat import PLANNERS, SHORT_HELP, Chat, JobReply
from bot.frontends.commands import ask
from bot.frontends.incidents import report
from bot.frontends.slack.blocks import render
from bot.frontends.slack.jobs import JobReport
from release.context import Context

log = logging.getLogger("torchbot.slack")

COMMANDS = ("/variant", "/pins", "/bump", "/build", "/publish", "/torchbot")


def web_client(settings) -> WebClient:
    from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return WebClient(token=token, base_url=settings.slack_api_url, timeout=int(settings.http_timeout),
                     retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=1),
                                     RateLimitErrorRetryHandler(max_retry_count=max(1, settings.http_retries))])


def create_app(ctx: Context, chat: Chat | None = None) -> App:
    s = ctx.settings
    secret = s.slack_signing_secret.get_secret_value() if s.slack_signing_secret else None
    app = App(
        client=web_client(s),
        signing_secret=secret or "socket-mode-only",  # HTTP mode refuses to start without the real one
        token_verification_enabled=False,
        process_before_response=False,
        logger=log,
    )
    chat = chat or Chat(ctx)
    app._torchbot_chat = chat  # type: ignore[attr-defined]  # for tests and the console bridge
    app._torchbot_signing_secret = secret  # type: ignore[attr-defined]  # for the HTTP guard

    def is_slow(name: str, text: str) -> bool:
        word = (text.split() or [""])[0].lower()
        return name in PLANNERS or (name == "torchbot" and word in PLANNERS)

    def apologise(respond, what: str) -> None:
        try:
            respond(replace_original=False, response_type="ephemeral", text=report(log, what))
        except Exception:
            log.exception("could not deliver the apology for %s", what)

    @app.command(re.compile("^(" + "|".join(map(re.escape, COMMANDS)) + ")$"))
    def on_command(ack, command, respond):
        name = command["command"].lstrip("/")
        text = command.get("text") or ""
        user, channel = command.get("user_id", ""), command.get("channel_id", "")
        if not is_slow(name, text):
            try:
                out = render(chat.command(name, text, user=user, channel=channel))
            except Exception:
                ack(response_type="ephemeral", text=report(log, f"/{name}"))
                return
            ack(response_type="ephemeral", text=out.text, blocks=out.blocks)
            return
        ack(response_type="ephemeral", text=f"Working on /{name} {text}…")
        try:
            out = render(chat.command(name, text, user=user, channel=channel))
            respond(response_type="ephemeral", replace_original=True, text=out.text, blocks=out.blocks)
        except Exception:
            apologise(respond, f"/{name}")

    @app.command(re.compile(r".*"))
    def on_unknown_command(ack, command):
        ack(response_type="ephemeral", text=f"torchbot does not know {command.get('command', 'that command')}. {SHORT_HELP}")

    @app.action("confirm_plan")
    def on_confirm(ack, body, respond, client):
        ack()
        try:
            pid = body["actions"][0].get("value", "")
            user = body.get("user", {}).get("id", "")
            channel = (body.get("channel") or {}).get("id") or body.get("container", {}).get("channel_id", "")
            reporter = JobReport(client, respond, channel, user)
            result = chat.confirm(pid, user, on_start=reporter.started, on_done=reporter.done)
            if isinstance(result, JobReply):
                reporter.attach(result)
                respond(replace_original=True, text=result.text() + reporter.where())
            else:
                respond(replace_original=True, text=result.text())
        except Exception:
            apologise(respond, "Confirm")

    @app.action("cancel_plan")
    def on_cancel(ack, body, respond):
        ack()
        try:
            result = chat.cancel(body["actions"][0].get("value", ""), body.get("user", {}).get("id", ""))
            respond(replace_original=True, text=result.text())
        except Exception:
            apologise(respond, "Cancel")

    @app.action("share_answer")
    def on_share(ack, body, respond):
        ack()
        try:
            answer = ask(ctx, body["actions"][0].get("value", ""))
            out = render(answer, shareable=False)
            respond(response_type="in_channel", replace_original=False, text=out.text, blocks=out.blocks)
        except Exception:
            apologise(respond, "Share in channel")

    @app.action(re.compile(r".*"))
    def on_unknown_action(ack, body, respond):
        ack()
        action = (body.get("actions") or [{}])[0].get("action_id", "?")
        respond(replace_original=False, response_type="ephemeral",
                text=f"torchbot has no button '{action}' (an old message?). {SHORT_HELP}")

    @app.event("app_mention")
    def on_mention(event, say):
        thread = event.get("thread_ts") or event.get("ts")
        try:
            result = chat.mention(event.get("text", ""), user=event.get("user", ""), channel=event.get("channel", ""))
            out = render(result, shareable=False)
            say(text=out.text, blocks=out.blocks, thread_ts=thread)
        except Exception:
            say(text=report(log, "@torchbot"), thread_ts=thread)

    @app.event(re.compile(r".*"))
    def on_other_event(event):  # subscribed by mistake or new: acked, nothing to do
        log.debug("ignoring a %s event", event.get("type"))

    @app.error
    def on_error(error, body, logger):
        text = report(logger, "handling a Slack request", error)
        url = body.get("response_url") if isinstance(body, dict) else None
        if url:
            from slack_sdk.webhook import WebhookClient

            try:
                WebhookClient(url).send(text=text, response_type="ephemeral", replace_original=False)
            except Exception:
                logger.warning("could not deliver the apology to the response URL")

    return app
