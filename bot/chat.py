"""One chat dispatcher for every chat front end (console and Slack).

Parses slash commands (``/variant``, ``/pins``, ``/bump``, ``/build``, ``/publish``,
``/torchbot help|status``) and mentions, checks who may run mutating commands and where,
turns a mutating command into a *pending plan* that only a Confirm applies, and writes an
audit line for every mutating command. It returns result objects; rendering is the front
end's job (text for the console, Block Kit in ``bot/slack_blocks.py``).
"""

from __future__ import annotations

import importlib
import logging
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from bot.commands import ask, catalog
from release.context import Context
from config.errors import PermissionDenied, TorchbotError, UsageError
from config.results import MessageResult

log = logging.getLogger("torchbot.chat")

HELP = """\
/variant <anything>          which variant for this hardware (names, nvidia-smi or lscpu output, instance types)
                             for exact facts paste the output of
                             `nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv` and `lscpu`
                             (what `torchbot ask --here` reads on the machine itself)
/pins                        branches with PyTorch / CUDA / Python and their nixpkgs pins
/bump <branch|all> [rev]     move branches to a newer nixpkgs (admins; shows the plan first)
/build <branch> [glob]       build variants of a branch (admins; shows the plan first)
/publish <branch>            publish built variants (admins; shows the plan first)
/torchbot help | status      this help; the bot's settings and recent builds
@torchbot <question>         same as /variant, answered in the thread"""

# Mutating commands -> (module, function) of the planner that returns a Plan.
PLANNERS: dict[str, tuple[str, str]] = {
    "bump": ("release.pins.commands", "plan_bump"),
    "build": ("release.builds.commands", "plan_build"),
    "publish": ("release.publishing.commands", "plan_publish"),
}

_MENTION_RE = re.compile(r"<@[A-Z0-9]+>")


@dataclass
class Pending:
    id: str
    command: str
    args: list[str]
    user: str
    channel: str
    plan: Any


@dataclass
class PlanReply:
    """A mutating command's plan, waiting for Confirm or Cancel."""

    pending: Pending

    exit_code = 0

    def to_dict(self) -> dict[str, Any]:
        return {"pending": self.pending.id, "command": self.pending.command, "plan": self.pending.plan.to_dict()}

    def text(self) -> str:
        return f"Plan for /{self.pending.command} {' '.join(self.pending.args)}:\n{self.pending.plan.text()}"


class PinsResult:
    def __init__(self, ctx: Context):
        self.data = catalog(ctx).to_dict()
        self.cron = ctx.settings.bump_cron
        self.vllm = ctx.settings.bump_vllm_branches

    def to_dict(self) -> dict[str, Any]:
        return {**self.data, "bump_cron": self.cron}

    def text(self) -> str:
        rows = [("branch", "pytorch", "cuda", "python", "pin", "next bump")]
        for b in self.data["branches"]:
            scheduled = self.vllm or b["purpose"] != "vllm-certified"
            rows.append((b["branch"], b["pytorch"], "/".join(b["cuda"]) or "-", b["python"],
                         ",".join(p[:7] for p in b["pins"]), f"cron '{self.cron}'" if scheduled else "manual (vLLM pin)"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


@dataclass
class Chat:
    ctx: Context
    audit: Callable[[str], None] | None = None
    pending: dict[str, Pending] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- entry points ------------------------------------------------------------------

    def command(self, name: str, text: str, user: str = "console", channel: str = "console"):
        """Run a slash command (name without the slash). Errors come back as a MessageResult."""
        name = name.lstrip("/").lower()
        args = text.split()
        try:
            if name == "variant":
                if not text.strip():
                    raise UsageError("Usage: /variant <GPU, CPU, instance, or pasted nvidia-smi / lscpu output>")
                return ask(self.ctx, text)
            if name == "pins":
                return PinsResult(self.ctx)
            if name == "torchbot":
                sub = args[0].lower() if args else "help"
                if sub == "status":
                    return self._status()
                if sub in PLANNERS or sub in ("variant", "pins"):
                    rest = text.split(None, 1)[1] if len(args) > 1 else ""
                    return self.command(sub, rest, user, channel)
                return MessageResult(HELP)
            if name in PLANNERS:
                return self._plan(name, args, user, channel)
            raise UsageError(f"Unknown command /{name}. Try /torchbot help.")
        except TorchbotError as err:
            return MessageResult(err.message, ok=False)
        except Exception:  # the traceback goes to the log, the user gets a sentence
            log.exception("command /%s failed", name)
            return MessageResult(f"/{name} failed unexpectedly; the details are in the bot's log.", ok=False)

    def mention(self, text: str, user: str = "console", channel: str = "console"):
        """`@torchbot …`: a command word routes to it, anything else is a /variant question."""
        body = _MENTION_RE.sub(" ", text).strip()
        first, _, rest = body.partition(" ")
        word = first.lstrip("/").lower()
        if word in PLANNERS or word in ("pins", "help", "status", "variant"):
            if word in ("help", "status"):
                return self.command("torchbot", word, user, channel)
            return self.command(word, rest, user, channel)
        return self.command("variant", body or "help", user, channel)

    def confirm(self, pending_id: str, user: str):
        with self._lock:
            p = self.pending.get(pending_id)
            if p is None:
                return MessageResult("That plan has expired or was already handled.", ok=False)
            if p.user != user:
                return MessageResult("Only the admin who asked can confirm this plan.", ok=False)
            del self.pending[pending_id]
        self._audit(user, p.channel, f"confirm /{p.command} {' '.join(p.args)}")
        try:
            return p.plan.apply()
        except TorchbotError as err:
            return MessageResult(err.message, ok=False)
        except Exception:
            log.exception("applying /%s failed", p.command)
            return MessageResult(f"/{p.command} failed; nothing further was done. Details are in the bot's log.", ok=False)

    def cancel(self, pending_id: str, user: str):
        with self._lock:
            p = self.pending.pop(pending_id, None)
        if p is None:
            return MessageResult("That plan has expired or was already handled.", ok=False)
        self._audit(user, p.channel, f"cancel /{p.command} {' '.join(p.args)}")
        return MessageResult(f"Cancelled /{p.command} {' '.join(p.args)}. Nothing was changed.")

    # -- helpers -----------------------------------------------------------------------

    def _authorize(self, user: str, channel: str, name: str) -> None:
        s = self.ctx.settings
        if user not in s.admins:
            raise PermissionDenied(f"/{name} changes the repository; only admins may run it.")
        if s.allowed_channels and channel not in s.allowed_channels:
            raise PermissionDenied(f"/{name} is not allowed in this channel.")

    def _plan(self, name: str, args: list[str], user: str, channel: str):
        try:
            self._authorize(user, channel, name)
        except PermissionDenied:
            self._audit(user, channel, f"refused /{name} {' '.join(args)}")
            raise
        if name in ("bump", "build", "publish") and not args:
            raise UsageError({"bump": "Usage: /bump <branch|all> [rev]", "build": "Usage: /build <branch> [glob]",
                              "publish": "Usage: /publish <branch>"}[name])
        module, func = PLANNERS[name]
        try:
            planner = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError):
            return MessageResult(f"/{name} is not available in this installation.", ok=False)
        if name == "bump":
            plan = planner(self.ctx, args[0], args[1] if len(args) > 1 else None)
        elif name == "build":
            plan = planner(self.ctx, args[0], args[1:] or None)
        else:
            plan = planner(self.ctx, args[0])
        p = Pending(secrets.token_hex(8), name, args, user, channel, plan)
        with self._lock:
            self.pending[p.id] = p
        self._audit(user, channel, f"plan /{name} {' '.join(args)}")
        return PlanReply(p)

    def _status(self):
        s = self.ctx.settings
        lines = [
            f"catalog: {self.ctx.catalog.source}, {len(self.ctx.catalog.branches)} branches",
            f"repository: {s.repo_path or 'not configured'}",
            f"announce channel: {s.announce_channel or 'not configured'}",
            f"admins: {len(s.admins)}; pending plans: {len(self.pending)}",
        ]
        return MessageResult("\n".join(lines))

    def _audit(self, user: str, channel: str, what: str) -> None:
        line = f"{datetime.now(timezone.utc).isoformat(timespec='seconds')} user={user} channel={channel} {what}"
        log.info("audit: %s", line)
        if self.audit:
            self.audit(line)
            return
        try:
            with open(self.ctx.settings.audit_log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError:
            log.warning("audit log %s is not writable", self.ctx.settings.audit_log)
