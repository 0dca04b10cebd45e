"""Where a confirmed job reports in Slack.

A message in the command's channel is the job's thread parent: posted when the job is
queued and edited in place (``chat.update``) when it starts, as it progresses ("57/237 built,
2 failed, 4 running, ETA 3 h", failures linked to their logs; at most every
``TORCHBOT_PROGRESS_SECONDS``, the latest counts always shown) and when it ends; the result goes
in its thread, summary and failures first, a long full list attached as a file
(``files_upload_v2``). When the bot cannot post in the channel (not invited), everything goes
to the command's response URL instead; and since Slack honours a response URL at most 5 times
within 30 minutes while builds run for hours, a result the response URL no longer takes (or that
has none: an App Home click) goes to the person who asked by direct message
(``conversations.open`` + ``chat.postMessage``, scope ``im:write``). File titles are plain text
(Slack shows them as typed): they are not escaped. The message's place is kept with a build run
(``notice()``), so after a restart ``report_restarts`` edits it to say what became of the run
and how to resume it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError, SlackClientError

from bot.frontends.chat import JobReply
from bot.frontends.jobs import Job
from bot.frontends.slack.blocks import render
from bot.frontends.slack.text import escape, excerpt, quoted

log = logging.getLogger("torchbot.slack")


def _hhmm(t: float | None) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(t or time.time()))


def _failures(snapshot, limit: int = 5) -> str:
    """``failed: <log|pkg>, pkg2`` with links where a log URL is known (TORCHBOT_LOG_URL)."""
    if not snapshot.failures:
        return ""
    shown = [f"<{f.url}|{escape(f.item)}>" if f.url else f"`{escape(f.item)}`" for f in snapshot.failures[:limit]]
    more = f" and {len(snapshot.failures) - limit} more" if len(snapshot.failures) > limit else ""
    text = "; failed: " + ", ".join(shown) + more
    first = snapshot.failures[0]
    if not first.url and first.log:
        text += f" (logs: `{first.log.rsplit('/', 1)[0]}/`)"
    if first.message:  # why the first one failed: its error lines and the retry command
        why = first.message if len(first.message) <= 400 else first.message[:399] + "…"
        text += f"\n`{escape(first.item)}`: {escape(why)}" + (f" (log: `{first.log}`)" if first.log else "")
    return text


class JobReport:
    def __init__(self, client, respond, channel: str, user: str, interval: float = 5.0, *,
                 clock: Callable[[], float] = time.monotonic, timer: Callable[..., threading.Timer] = threading.Timer):
        self.client, self.respond, self.channel, self.user = client, respond, channel, user
        self.clock, self.timer = clock, timer  # what the throttle reads and how it waits (a test steps both)
        self.ts: str | None = None
        self.job: Job | None = None
        self.interval = interval
        self._ready = threading.Event()
        self._progress_lock = threading.Lock()
        self._last_edit = float("-inf")
        self._latest = None  # the newest progress snapshot
        self._timer: threading.Timer | None = None
        self._ended = False
        self._edit_lock = threading.Lock()

    def _line(self, job: Job, what: str) -> str:
        """``what`` is message text (escaped); the title holds what the user typed."""
        return f"`{quoted(job.title)}` (job {job.id}, confirmed by <@{self.user}>): {what}"

    def attach(self, reply: JobReply) -> None:
        """Post the thread parent (in the listener, right after the Confirm was accepted)."""
        job = self.job = reply.job
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
            " The result will follow here, or by direct message if that is no longer possible."

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

    def notice(self) -> dict | None:
        """Where this job's message is (for a restart to edit it), once it was posted."""
        self._ready.wait(15)
        if self.ts is None or self.job is None:
            return None
        return {"channel": self.channel, "ts": self.ts, "title": self.job.title, "job": self.job.id,
                "user": self.user}

    def progress(self, event) -> None:
        """A progress event of the job's work: the message shows the counts, edited at most
        every ``interval`` seconds and never on the work's own thread (a slow Slack must not
        slow the builds); an edit held back is made when the interval ends, so the newest
        counts always show."""
        with self._progress_lock:
            self._latest = event.snapshot
            if self._ended or self.ts is None or self._timer is not None:
                return
            wait = max(0.0, self._last_edit + self.interval - self.clock())
            self._timer = self.timer(wait, self._show_latest)
            self._timer.daemon = True
            self._timer.start()

    def _show_latest(self) -> None:
        with self._progress_lock:
            self._timer = None
            self._last_edit = self.clock()
            snapshot = self._latest
        job = self.job
        if job is None or snapshot is None:
            return
        with self._edit_lock:  # one edit at a time; none after the job's final one
            if not self._ended:
                self._update(job, f"running since {_hhmm(job.started)}: {escape(snapshot.line())}{_failures(snapshot)}")

    def done(self, job: Job) -> None:
        self._ready.wait(15)
        with self._progress_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        with self._edit_lock:
            self._ended = True
        out = render(job.result, can_attach=self.ts is not None, name=f"{job.id}-{job.title.split()[0][1:]}.txt")
        minutes = int(((job.finished or time.time()) - (job.started or job.created)) // 60)
        self._update(job, f"{'done' if getattr(job.result, 'ok', True) else 'ended'} after {minutes} min: {out.text}")
        if self.ts is None:
            if not self._responded(text=out.text, blocks=out.blocks):
                self.direct(*self._titled(job, out))
            return
        try:
            self.client.chat_postMessage(channel=self.channel, thread_ts=self.ts, text=out.text, blocks=out.blocks)
        except (SlackApiError, SlackClientError, OSError) as err:  # the channel refuses now: the asker hears it
            log.warning("job %s: cannot post its result in %s (%s); sending it by direct message", job.id,
                        self.channel, err)
            self.direct(*self._titled(job, out))
            return
        if out.file:
            name, content = out.file
            self.client.files_upload_v2(channel=self.channel, thread_ts=self.ts, content=content, filename=name,
                                        title=excerpt(job.title) + ": full list", initial_comment="The full list:")

    def _titled(self, job: Job, out) -> tuple[str, list | None]:
        """The result as a message of its own (a DM): which job it is first."""
        head = f"`{quoted(job.title)}` (job {job.id}) {'done' if getattr(job.result, 'ok', True) else 'ended'}:"
        if not out.blocks:
            return f"{head} {out.text}", None
        return f"{head} {out.text}", [{"type": "section", "text": {"type": "mrkdwn", "text": head}},
                                      *out.blocks][:50]

    def _responded(self, **message) -> bool:
        """Whether the response URL took ``message`` (Slack answers 404 ``expired_url`` or
        ``used_url`` once it is past 30 minutes or 5 uses; an App Home click has none)."""
        if self.respond is None:
            return False
        try:
            resp = self.respond(replace_original=False, response_type="ephemeral", **message)
        except Exception as err:  # noqa: BLE001  (no response URL, or it is unreachable: the DM instead)
            log.warning("job %s: the response URL refused its result (%s)", getattr(self.job, "id", "?"), err)
            return False
        status = getattr(resp, "status_code", 200)
        if status != 200:
            log.info("job %s: the response URL answered %s %s; sending the result by direct message",
                     getattr(self.job, "id", "?"), status, getattr(resp, "body", ""))
        return status == 200

    def direct(self, text: str, blocks: list | None = None) -> bool:
        """``text`` to the person who asked, in their direct message with torchbot."""
        try:
            im = self.client.conversations_open(users=self.user)["channel"]["id"]
            self.client.chat_postMessage(channel=im, text=text, blocks=blocks)
            return True
        except (SlackApiError, SlackClientError, OSError) as err:
            log.warning("cannot send %s a direct message (%s): the result is in the log only", self.user, err)
            return False


def report_restarts(client, ctx) -> int:
    """After a restart: edit the job message of every build run a stopped torchbot left behind
    (resolved by ``release.builds.recover``) to say what became of it and how to resume it, and
    say it in the job's thread. A message that cannot be edited now is tried at the next start.
    Returns how many were told."""
    from release.builds.recover import mark_notified, pending_notices

    told = 0
    for run_key, notice, outcome in pending_notices(ctx):
        channel, ts = notice.get("channel"), notice.get("ts")
        if not channel or not ts:
            mark_notified(ctx, run_key)
            continue
        who = f", confirmed by <@{notice['user']}>" if notice.get("user") else ""
        line = f"`{quoted(notice.get('title') or '/build')}` (job {notice.get('job') or '?'}{who}): {escape(outcome)}"
        try:
            client.chat_update(channel=channel, ts=ts, text=line)
            client.chat_postMessage(channel=channel, thread_ts=ts, text=escape(outcome))
        except (SlackApiError, SlackClientError, OSError) as err:
            log.warning("cannot tell %s what became of build run %s (%s); trying again at the next start",
                        channel, run_key[:8], err)
            continue
        mark_notified(ctx, run_key)
        told += 1
    return told
