"""The Slack listeners: each acks first, then answers.

Every listener acks before anything slow or anything that touches the state DB: fast
read-only answers (/variant, /pins, help) are the ack itself; everything else (plans, status,
Confirm, Cancel, Share, mentions) acks at once and answers through ``respond`` (the
response URL) or in the thread, after claiming the delivery (``deliveries``: one answer per
delivery, whatever Slack re-sends). What the user typed is read back from Slack's entities
and escaped again in anything echoed (``text``); an ack quotes at most a short excerpt of it.
An error after the ack reaches the user as an apology with an error id that is in the log."""

from __future__ import annotations

import logging
import re
from typing import Any

from bot.frontends.chat import APP_HOME, PLANNERS, SHORT_HELP, Chat, JobReply
from bot.frontends.commands import ask
from bot.frontends.incidents import report
from bot.frontends.slack import dashboard
from bot.frontends.slack.blocks import render
from bot.frontends.slack.deliveries import Deliveries
from bot.frontends.slack.jobs import JobReport
from bot.frontends.slack.text import escape, from_slack, quoted
from release.context import Context

log = logging.getLogger("torchbot.slack")

COMMANDS = ("/variant", "/pins", "/bump", "/build", "/publish", "/torchbot")


READERS = ("status", "dashboard", "why-held", "changes")  # /torchbot words that read the state DB or the remote


def answers_later(name: str, text: str) -> bool:
    """Whether a command is answered after its ack (it plans, or reads the state DB), rather
    than in the ack itself."""
    word = (text.split() or [""])[0].lower()
    return name in PLANNERS or (name == "torchbot" and (word in PLANNERS or word in READERS))


def _status(name: str, text: str) -> bool:
    return name == "torchbot" and (text.split() or [""])[0].lower() == "status"


def _first_action(body: dict[str, Any]) -> dict[str, Any]:
    return (body.get("actions") or [{}])[0]


def _from_home(body: dict[str, Any]) -> bool:
    """A click in the App Home tab: Slack sends a ``view`` container, no channel, no response_url."""
    return (body.get("container") or {}).get("type") == "view" or not body.get("response_url")


def reply(body: dict[str, Any], respond, client, text: str, blocks: list | None = None) -> None:
    """Answer a click where its person sees it: ephemerally through its response URL, or, for an App
    Home click (which has none), in their direct message with torchbot."""
    if not _from_home(body):
        respond(replace_original=False, response_type="ephemeral", text=text, blocks=blocks)
        return
    user = (body.get("user") or {}).get("id", "")
    im = client.conversations_open(users=user)["channel"]["id"]
    client.chat_postMessage(channel=im, text=text, blocks=blocks)


class Listeners:
    def __init__(self, ctx: Context, chat: Chat, deliveries: Deliveries):
        self.ctx, self.chat, self.deliveries = ctx, chat, deliveries

    def register(self, app) -> None:
        app.command(re.compile("^(" + "|".join(map(re.escape, COMMANDS)) + ")$"))(self.on_command)
        app.command(re.compile(r".*"))(self.on_unknown_command)
        app.action("confirm_plan")(self.on_confirm)
        app.action("cancel_plan")(self.on_cancel)
        app.action("show_diff")(self.on_diff)
        app.action("share_answer")(self.on_share)
        app.action(dashboard.ACTION_ID)(self.on_dashboard_act)
        app.action(re.compile(r".*"))(self.on_unknown_action)
        app.event("app_mention")(self.on_mention)
        app.event("app_home_opened")(self.on_home_opened)
        app.event(re.compile(r".*"))(self.on_other_event)
        app.error(self.on_error)

    @staticmethod
    def apologise(respond, what: str, body: dict | None = None, client=None) -> None:
        try:
            if body is not None and client is not None:
                reply(body, respond, client, report(log, what))
            else:
                respond(replace_original=False, response_type="ephemeral", text=report(log, what))
        except Exception:
            log.exception("could not deliver the apology for %s", what)

    # -- slash commands ------------------------------------------------------------------

    def on_command(self, ack, command, respond, request):
        name = command["command"].lstrip("/")
        text = from_slack(command.get("text") or "")
        user, channel = command.get("user_id", ""), command.get("channel_id", "")
        if not answers_later(name, text):  # read-only and fast: the ack is the answer
            try:
                out = render(self.chat.command(name, text, user=user, channel=channel))
            except Exception:  # noqa: BLE001  (a listener's boundary: an apology with an error id)
                ack(response_type="ephemeral", text=report(log, f"/{name}"))
                return
            ack(response_type="ephemeral", text=out.text, blocks=out.blocks)
            return
        ack(response_type="ephemeral", text=f"Working on /{name} {quoted(text)}".rstrip() + "…")
        try:  # a read-only status is answered again rather than wait on a busy store for the claim
            if not _status(name, text) and not self.deliveries.first(command, request.headers):
                return
            out = render(self.chat.command(name, text, user=user, channel=channel))
            respond(response_type="ephemeral", replace_original=True, text=out.text, blocks=out.blocks)
        except Exception:  # noqa: BLE001  (a listener's boundary)
            self.apologise(respond, f"/{name}")

    def on_unknown_command(self, ack, command):
        ack(response_type="ephemeral",
            text=f"torchbot does not know {quoted(command.get('command') or 'that command', 40)}. {SHORT_HELP}")

    # -- buttons -------------------------------------------------------------------------

    def _button(self, ack, body, request, respond, what: str, answer, client=None) -> None:
        """Ack a button click, answer it once (``answer()``; a repeated delivery is not), and
        apologise for a failure under ``what``."""
        ack()
        try:
            if self.deliveries.first(body, request.headers):
                answer()
        except Exception:  # noqa: BLE001  (a listener's boundary)
            self.apologise(respond, what, body, client)

    def on_confirm(self, ack, body, respond, client, request):
        def answer():
            pid = _first_action(body).get("value", "")
            user = body.get("user", {}).get("id", "")
            channel = (body.get("channel") or {}).get("id") or body.get("container", {}).get("channel_id", "")
            reporter = JobReport(client, respond, channel, user, interval=self.ctx.settings.progress_seconds)
            result = self.chat.confirm(pid, user, on_start=reporter.started, on_done=reporter.done,
                                       on_progress=reporter.progress, notice=reporter.notice)
            where = ""
            if isinstance(result, JobReply):
                reporter.attach(result)
                where = reporter.where()
            respond(replace_original=True, text=escape(result.text()) + where)

        self._button(ack, body, request, respond, "Confirm", answer)

    def on_cancel(self, ack, body, respond, request):
        def answer():
            result = self.chat.cancel(_first_action(body).get("value", ""), body.get("user", {}).get("id", ""))
            respond(replace_original=True, text=escape(result.text()))

        self._button(ack, body, request, respond, "Cancel", answer)

    def on_diff(self, ack, body, respond, client, request):
        """A plan's "Show diff": the diff to the asker alone; a long one goes as a file in the
        plan's channel (said as theirs), else as pages in the reply (``blocks.diff_blocks``)."""
        def answer():
            user = body.get("user", {}).get("id", "")
            channel = (body.get("channel") or {}).get("id") or body.get("container", {}).get("channel_id", "")
            result = self.chat.diff(_first_action(body).get("value", ""), user)
            out = render(result, can_attach=bool(channel))
            if out.file is not None and not self._upload(client, channel, out.file, f"<@{user}>: {out.text}"):
                out = render(result, can_attach=False)
            respond(replace_original=False, response_type="ephemeral", text=out.text, blocks=out.blocks)

        self._button(ack, body, request, respond, "Show diff", answer)

    @staticmethod
    def _upload(client, channel: str, file: tuple[str, str], comment: str) -> bool:
        name, content = file
        try:
            client.files_upload_v2(channel=channel, content=content, filename=name, title=name,
                                   initial_comment=comment)
            return True
        except Exception as err:  # noqa: BLE001  (not in the channel, or files:write missing: the pages instead)
            log.warning("could not upload %s to %s: %s", name, channel, err)
            return False

    def on_share(self, ack, body, respond, request):
        def answer():
            out = render(ask(self.ctx, _first_action(body).get("value", "")), shareable=False)
            respond(response_type="in_channel", replace_original=False, text=out.text, blocks=out.blocks)

        self._button(ack, body, request, respond, "Share in channel", answer)

    def on_dashboard_act(self, ack, body, respond, client, request):
        """A dashboard button: the chat command of its row, planned as typed (admins only), with
        the usual Confirm and Cancel; from a message, answered there; from the App Home tab (no
        channel, no response URL), in the admin's DM with torchbot, where Confirm then runs it."""
        def answer():
            from release.dashboard.commands import dashboard as current

            model = current(self.ctx).model
            action = dashboard.find_action(model, _first_action(body).get("value", ""))
            if action is None:
                reply(body, respond, client, "That row has nothing to do any more (the dashboard moved on).")
                if _from_home(body):  # the tab showed a stale row: show it as it is now
                    user = body.get("user", {}).get("id", "")
                    client.views_publish(user_id=user, view=dashboard.home_view(model, admin=self._admin(user)))
                return
            user = body.get("user", {}).get("id", "")
            channel = (body.get("channel") or {}).get("id") or body.get("container", {}).get("channel_id", "")
            name, _, rest = action.command.partition(" ")
            out = render(self.chat.command(name, rest, user=user, channel=APP_HOME if _from_home(body) else channel))
            reply(body, respond, client, out.text, out.blocks)

        self._button(ack, body, request, respond, "a dashboard button", answer, client)

    def on_unknown_action(self, ack, body, respond, client):
        ack()
        action = _first_action(body).get("action_id", "?")
        reply(body, respond, client,
              f"torchbot has no button '{quoted(str(action), 60)}' (an old message?). {SHORT_HELP}")

    # -- events (Bolt acks them before the listener runs) ---------------------------------

    def on_mention(self, event, say, body, request):
        thread = event.get("thread_ts") or event.get("ts")
        try:
            if not self.deliveries.first(body, request.headers):
                return
            text = from_slack(event.get("text", ""))
            result = self.chat.mention(text, user=event.get("user", ""), channel=event.get("channel", ""))
            out = render(result, shareable=False)
            say(text=out.text, blocks=out.blocks, thread_ts=thread)
        except Exception:  # noqa: BLE001  (a listener's boundary)
            say(text=report(log, "@torchbot"), thread_ts=thread)

    def on_home_opened(self, event, client, body, request):
        """The App Home tab: the dashboard, published for the user who opened it."""
        if event.get("tab", "home") != "home":
            return
        try:
            from release.dashboard.commands import dashboard as current

            view = dashboard.home_view(current(self.ctx).model, admin=self._admin(event.get("user", "")))
        except Exception:  # noqa: BLE001  (a listener's boundary: the tab says so, with an error id)
            view = {"type": "home", "blocks": [{"type": "section", "text": {
                "type": "mrkdwn", "text": escape(report(log, "the App Home dashboard"))}}]}
        client.views_publish(user_id=event.get("user", ""), view=view)

    def _admin(self, user: str) -> bool:
        from config.errors import ExternalError

        try:
            return self.chat._is_admin(user)
        except ExternalError:  # who is in the admin group cannot be told now: read-only
            return False

    def on_other_event(self, event):  # subscribed by mistake or new: acked, nothing to do
        log.debug("ignoring a %s event", event.get("type"))

    def on_error(self, error, body, logger):
        text = report(logger, "handling a Slack request", error)
        url = body.get("response_url") if isinstance(body, dict) else None
        if url:
            from slack_sdk.webhook import WebhookClient

            try:
                WebhookClient(url).send(text=text, response_type="ephemeral", replace_original=False)
            except Exception:  # noqa: BLE001  (the apology itself failed)
                logger.warning("could not deliver the apology to the response URL")
