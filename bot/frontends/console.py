"""`torchbot chat`: the Slack commands and mentions in a terminal, with no Slack at all.
Plans are confirmed by typing `confirm` (or `cancel`); a confirmed plan runs in the job
runner like in Slack, and the console prints its result when it ends."""

from __future__ import annotations

import sys
from typing import IO

from bot.frontends.chat import Chat, JobReply, PlanReply
from release.context import Context

PROMPT = "torchbot> "


def run(ctx: Context, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout, user: str = "console") -> int:
    chat = Chat(ctx)
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
        if waiting is not None and line.lower() in ("confirm", "yes", "y", "cancel", "no", "n"):
            pid = waiting.pending.id
            waiting = None
            result = chat.confirm(pid, user) if line.lower() in ("confirm", "yes", "y") else chat.cancel(pid, user)
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
