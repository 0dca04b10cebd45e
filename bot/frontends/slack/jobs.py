"""Where a confirmed job reports in Slack.

A message in the command's channel is the job's thread parent: posted when the job is
queued and edited in place (``chat.update``) when it starts and when it ends; the result goes
in its thread, summary and failures first, a long full list attached as a file
(``files_upload_v2``). When the bot cannot post in the channel (not invited), everything goes
to the command's response URL instead."""

from __future__ import annotations

import logging
import threading
import time

from slack_sdk.errors import SlackApiError, SlackClientError

from bot.frontends.chat import JobReply
from bot.frontends.jobs import Job
from bot.frontends.slack.blocks import render

log = logging.getLogger("torchbot.slack")


def _hhmm(t: float | None) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(t or time.time()))


class JobReport:
    def __init__(self, client, respond, channel: str, user: str):
        self.client, self.respond, self.channel, self.user = client, respond, channel, user
        self.ts: str | None = None
        self._ready = threading.Event()

    def _line(self, job: Job, what: str) -> str:
        return f"`{job.title}` (job {job.id}, confirmed by <@{self.user}>): {what}"

    def attach(self, reply: JobReply) -> None:
        """Post the thread parent (in the listener, right after the Confirm was accepted)."""
        job = reply.job
        what = (f"queued, number {reply.position} in line" if reply.position and job.state == "queued"
                else "running")
        try:
            resp = self.client.chat_postMessage(channel=self.channel, text=self._line(job, what))
            self.ts = resp["ts"]
        except (SlackApiError, SlackClientError, OSError) as err:
            log.warning("job %s: cannot post in %s (%s); reporting to the response URL", job.id, self.channel, err)
        finally:
            self._ready.set()

    def where(self) -> str:
        return " Progress and the result follow in its thread in this channel." if self.ts else \
            " The result will replace this message."

    def _update(self, job: Job, what: str) -> None:
        if self.ts is None:
            return
        try:
            self.client.chat_update(channel=self.channel, ts=self.ts, text=self._line(job, what))
        except (SlackApiError, SlackClientError, OSError) as err:
            log.warning("job %s: cannot update its message (%s)", job.id, err)

    def started(self, job: Job) -> None:
        self._ready.wait(15)
        self._update(job, f"running since {_hhmm(job.started)}")

    def done(self, job: Job) -> None:
        self._ready.wait(15)
        out = render(job.result, can_attach=self.ts is not None, name=f"{job.id}-{job.title.split()[0][1:]}.txt")
        minutes = int(((job.finished or time.time()) - (job.started or job.created)) // 60)
        self._update(job, f"{'done' if getattr(job.result, 'ok', True) else 'ended'} after {minutes} min: {out.text}")
        if self.ts is None:
            self.respond(replace_original=False, response_type="ephemeral", text=out.text, blocks=out.blocks)
            return
        self.client.chat_postMessage(channel=self.channel, thread_ts=self.ts, text=out.text, blocks=out.blocks)
        if out.file:
            name, content = out.file
            self.client.files_upload_v2(channel=self.channel, thread_ts=self.ts, content=content, filename=name,
                                        title=f"{job.title}: full list", initial_comment="The full list:")
