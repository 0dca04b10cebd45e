"""A Slack job's progress edits, throttled: at most one chat.update per interval, an edit held
back made when the interval ends with the newest counts. Stepped with the report's own clock
and timer (a test clock; timers fired by the test), so nothing depends on how fast the machine
is; the edits go to the loopback fake Slack."""

from __future__ import annotations

import time

from slack_sdk import WebClient

from bot.frontends.chat import JobReply
from bot.frontends.jobs import Job
from bot.frontends.slack.jobs import JobReport
from config.progress import Progress
from tests.support.fakes_slack import FakeSlack


class SteppedTimers:
    """threading.Timer's shape; each timer waits until the test fires it."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.pending: list = []

    def __call__(self, wait: float, fn):
        timers = self

        class Timer:
            daemon = False

            def start(self) -> None:
                timers.asked.append(wait)
                timers.pending.append(fn)

            def cancel(self) -> None:
                if fn in timers.pending:
                    timers.pending.remove(fn)

        return Timer()

    def fire(self) -> None:
        (fn,) = self.pending
        self.pending.clear()
        fn()


def test_progress_is_edited_at_most_once_per_interval_with_the_newest_counts() -> None:
    now = [100.0]
    timers = SteppedTimers()
    with FakeSlack() as slack:
        report = JobReport(WebClient(token=slack.token, base_url=slack.url), None, "CREL", "UADMIN", interval=5.0,
                           clock=lambda: now[0], timer=timers)
        job = Job(title="/build b", fn=lambda j: None, started=time.time())
        report.attach(JobReply(job=job, position=0, running=1))
        progress = Progress(listener=report.progress, verb="built", clock=lambda: now[0])

        def edits() -> list[str]:
            return [c["text"] for c in slack.method_calls("chat.update")]

        progress.begin(4)
        assert timers.asked == [0.0]  # the first edit goes at once
        timers.fire()
        assert len(edits()) == 1 and "0/4 built" in edits()[-1]

        now[0] += 1.0
        progress.started("a")
        assert timers.asked == [0.0, 4.0]  # held back until the interval since the last edit ends
        now[0] += 1.0
        progress.finished("a", "succeeded")
        progress.started("b")
        assert timers.asked == [0.0, 4.0] and len(edits()) == 1  # coalesced: no second timer, no edit
        now[0] += 3.0
        timers.fire()
        assert len(edits()) == 2 and "1/4 built, 1 running" in edits()[-1]  # the newest counts

        now[0] += 7.0  # long after: the next edit goes at once
        progress.finished("b", "failed", "boom")
        assert timers.asked[-1] == 0.0
        timers.fire()
        assert len(edits()) == 3 and "1/4 built, 1 failed" in edits()[-1]
