"""`torchbot chat`: the Slack commands and mentions in a terminal, with no Slack at all.
Plans are confirmed by typing `confirm` (or `cancel`; `diff` shows a bump's file changes
first); a confirmed plan runs in the job runner like in Slack, and the console prints its
result when it ends, answering other commands meanwhile. `confirm` or `cancel`
with no plan waiting says so (it is never read as a question).

Who you are: the console user is ``console`` unless ``torchbot chat --as U0123ABCD`` names a
Slack user ID; mutating commands need that user in ``TORCHBOT_ADMINS`` (``TORCHBOT_ADMINS=console``
for the plain console), and the audit log names it."""

from __future__ import annotations

import sys
import threading
from typing import IO

from bot.frontends.chat import Chat, JobReply, PlanReply
from bot.frontends.jobs import Job
from release.context import Context

PROMPT = "torchbot> "
YES, NO = ("confirm", "yes", "y"), ("cancel", "no", "n")
NOTHING_PENDING = "Nothing is waiting for {word}: /bump, /build and /publish show a plan to confirm or cancel first."


def admin_hint(user: str) -> str:
    if user == "console":
        return (" The console user is 'console': set TORCHBOT_ADMINS=console to act as an admin here, "
                "or run `torchbot chat --as <your Slack user ID>` with that ID in TORCHBOT_ADMINS.")
    return f" You are {user} here (torchbot chat --as): add {user} to TORCHBOT_ADMINS to act as an admin."


class _Out:
    """Lines to the terminal from the prompt's thread and from the job workers, one at a time."""

    def __init__(self, stdout: IO[str], interactive: bool):
        self.stdout, self.interactive = stdout, interactive
        self.lock = threading.Lock()

    def say(self, text: str, prompt: bool = False) -> None:
        with self.lock:
            print(text, file=self.stdout)
            if prompt and self.interactive:
                self.stdout.write(PROMPT)
            self.stdout.flush()


def run(ctx: Context, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout, user: str = "console") -> int:
    """Read commands until EOF. A confirmed plan runs in the job runner and its result is printed
    when it ends, so the prompt keeps answering meanwhile (``/torchbot status`` shows the job's
    progress); at EOF the console waits for the jobs it started."""
    chat = Chat(ctx, admin_hint=admin_hint(user))
    out = _Out(stdout, stdin.isatty())
    out.say("torchbot chat — /torchbot help for commands, Ctrl-D to quit.")
    jobs: list[Job] = []
    waiting: PlanReply | None = None

    def done(job: Job) -> None:  # on the job's worker thread
        out.say(f"{job.id} finished ({job.title}):\n{job.result.text()}", prompt=True)

    while True:
        if out.interactive:
            with out.lock:
                stdout.write(PROMPT)
                stdout.flush()
        line = stdin.readline()
        if not line or line.strip().lower() in ("quit", "exit"):
            break
        line = line.strip()
        if not line:
            continue
        word = line.lower()
        if word in ("confirm", "cancel") and waiting is None:
            out.say(NOTHING_PENDING.format(word=word))
            continue
        if waiting is not None and word == "diff":  # the files the waiting plan would write (a bump's)
            diff = getattr(waiting.pending.plan, "diff", None)
            out.say((diff() or "(no file would change)") if diff else "This plan writes no files.")
            continue
        if waiting is not None and word in YES + NO:
            pid = waiting.pending.id
            waiting = None
            result = chat.confirm(pid, user, on_done=done) if word in YES else chat.cancel(pid, user)
        elif line.startswith("/"):
            name, _, rest = line[1:].partition(" ")
            result = chat.command(name, rest, user=user, channel="console")
        else:
            result = chat.mention(line, user=user, channel="console")
        out.say(result.text())
        if isinstance(result, JobReply):
            jobs.append(result.job)
        if isinstance(result, PlanReply):
            waiting = result
            more = " ('diff' shows the files it would change)" if hasattr(result.pending.plan, "diff") else ""
            out.say(f"Type 'confirm' to apply or 'cancel'{more}.")
    running = [j for j in jobs if j.state != "done"]
    if running:
        out.say(f"Waiting for {len(running)} job(s) to finish (Ctrl-C to stop).")
    for job in running:
        job.wait()
    return 0
