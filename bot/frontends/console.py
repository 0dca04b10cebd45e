"""`torchbot chat`: the Slack commands and mentions in a terminal, with no Slack at all.
Plans are confirmed by typing `confirm` (or `cancel`); a confirmed plan runs in the job
runner like in Slack, and the console prints its result when it ends. `confirm` or `cancel`
with no plan waiting says so (it is never read as a question).

Who you are: the console user is ``console`` unless ``torchbot chat --as U0123ABCD`` names a
Slack user ID; mutating commands need that user in ``TORCHBOT_ADMINS`` (``TORCHBOT_ADMINS=console``
for the plain console), and the audit log names it."""

from __future__ import annotations

import sys
from typing import IO

from bot.frontends.chat import Chat, JobReply, PlanReply
from release.context import Context

PROMPT = "torchbot> "
YES, NO = ("confirm", "yes", "y"), ("cancel", "no", "n")
NOTHING_PENDING = "Nothing is waiting for {word}: /bump, /build and /publish show a plan to confirm or cancel first."


def admin_hint(user: str) -> str:
    if user == "console":
        return (" The console user is 'console': set TORCHBOT_ADMINS=console to act as an admin here, "
                "or run `torchbot chat --as <your Slack user ID>` with that ID in TORCHBOT_ADMINS.")
    return f" You are {user} here (torchbot chat --as): add {user} to TORCHBOT_ADMINS to act as an admin."


def run(ctx: Context, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout, user: str = "console") -> int:
    chat = Chat(ctx, admin_hint=admin_hint(user))
    interactive = stdin.isatty()
    print("torchbot chat — /torchbot help for commands, Ctrl-D to quit.", file=stdout)
    waiting: PlanReply | None = None
    while True:
        if interactive:
            stdout.write(PROMPT)
            stdout.flush()
        line = stdin.readline()
        if not line:
            return 0
        line = line.strip()
        if not line:
            continue
        word = line.lower()
        if word in ("confirm", "cancel") and waiting is None:
            print(NOTHING_PENDING.format(word=word), file=stdout)
            stdout.flush()
            continue
        if waiting is not None and word in YES + NO:
            pid = waiting.pending.id
            waiting = None
            result = chat.confirm(pid, user) if word in YES else chat.cancel(pid, user)
        elif line.startswith("/"):
            name, _, rest = line[1:].partition(" ")
            result = chat.command(name, rest, user=user, channel="console")
        elif line.lower() in ("quit", "exit"):
            return 0
        else:
            result = chat.mention(line, user=user, channel="console")
        print(result.text(), file=stdout)
        if isinstance(result, JobReply):
            stdout.flush()
            result = result.wait()
            print(result.text(), file=stdout)
        if isinstance(result, PlanReply):
            waiting = result
            print("Type 'confirm' to apply or 'cancel'.", file=stdout)
        stdout.flush()
