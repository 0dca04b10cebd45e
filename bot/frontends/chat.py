"""One chat dispatcher for every chat front end (console and Slack).

Parses slash commands (``/variant``, ``/pins``, ``/bump``, ``/build``, ``/publish``,
``/torchbot help|status``) and mentions, checks who may run mutating commands and where,
turns a mutating command into a *pending plan* that only its asker's Confirm applies, and
writes an audit line for every mutating command. Pending plans live in the state DB (with
what they expect not to move, and an expiry), so a Confirm after a restart still works, and
refuses, naming it, when something moved. A confirmed plan runs in the bounded job runner
(``bot/frontends/jobs.py``), never on the caller's thread. It returns result objects; rendering is the
front end's job (text for the console, Block Kit in ``bot/frontends/slack/blocks.py``).

The state DB is reached through ``bot.frontends.store`` (every call answers within
``TORCHBOT_STATE_TIMEOUT_SECONDS``): a store that does not answer makes a mutating command
say so plainly, and ``/torchbot status`` still answers, saying which part it could not read.
Admins are ``TORCHBOT_ADMINS``, plus whoever the front end's ``is_admin`` accepts (Slack: the
members of ``TORCHBOT_ADMIN_USERGROUP``).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from bot.frontends import pending as plans
from bot.frontends.commands import PinsResult, ask
from bot.frontends.incidents import report
from bot.frontends.jobs import Job, JobRunner
from bot.frontends.store import AnsweringStore, StateStoreNotAnswering, unreachable
from config.errors import ExternalError, PermissionDenied, TorchbotError, UsageError
from config.results import MessageResult
from release.context import Context

log = logging.getLogger("torchbot.chat")

HELP = (files("config") / "data" / "chat_help.txt").read_text().rstrip("\n")  # /torchbot help, as data

# Mutating commands -> (module, function) of the planner that returns a Plan.
def _plan_bump(*args, **opts):
    from release.pins.commands import plan_bump

    return plan_bump(*args, **opts)


def _plan_build(*args, **opts):
    from release.builds.commands import plan_build

    return plan_build(*args, **opts)


def _plan_publish(*args, **opts):
    from release.publishing.commands import plan_publish

    return plan_publish(*args, **opts)


# The commands that change the repository, each by its planner (imported when first used).
PLANNERS = {"bump": _plan_bump, "build": _plan_build, "publish": _plan_publish}
USAGE = {"bump": "Usage: /bump <branch|all> [rev] [--cuda A.B] [--from-pin OLD] [--channel C] [--force] "
                 "[--with-companions] [--pytorch X.Y.Z] [--torch-src REV,HASH]",
         "build": "Usage: /build <branch> [glob] [--resume]",
         "publish": "Usage: /publish <branch>"}
VERBS = {"build": "built", "publish": "published", "bump": "bumped"}  # "57/237 built"
APP_HOME = "app_home"  # a dashboard button of the Slack App Home: planned for an admin in their own DM

SHORT_HELP = ("Commands: /variant, /pins, /bump, /build, /publish, "
              "/torchbot help | status | dashboard | why-held | changes.")

_MENTION_RE = re.compile(r"<@[A-Z0-9]+>")
STATUS_SECONDS = 3.0  # what /torchbot status waits for the state DB at most: a busy store is said, not waited for


def _quoted(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class Pending:
    id: str
    command: str
    args: list[str]
    user: str
    channel: str
    plan: Any
    expires: datetime | None = None


@dataclass
class PlanReply:
    """A mutating command's plan, waiting for Confirm or Cancel."""

    pending: Pending

    exit_code = 0

    def to_dict(self) -> dict[str, Any]:
        return {"pending": self.pending.id, "command": self.pending.command, "plan": self.pending.plan.to_dict()}

    def text(self) -> str:
        """First line: the command and the plan's own first line (a bump's PyTorch change is there)."""
        head, _, rest = self.pending.plan.text().partition("\n")
        return f"Plan for /{self.pending.command} {' '.join(self.pending.args)}: {head}\n{rest}"


@dataclass
class JobReply:
    """A confirmed plan, handed to the job runner; ``wait()`` gives its result."""

    job: Job
    position: int
    running: int

    exit_code = 0
    ok = True

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job.id, "title": self.job.title, "state": self.job.state, "position": self.position}

    def text(self) -> str:
        if self.position:
            return (f"Confirmed {self.job.title}: queued as job {self.job.id}, number {self.position} in line "
                    f"({self.running} job(s) running). It starts when a worker is free.")
        return f"Confirmed {self.job.title}: running as job {self.job.id}."

    def wait(self, timeout: float | None = None):
        return self.job.wait(timeout)


def _title(command: str, args: list[str], limit: int = 200) -> str:
    """A job's title: the command as typed, at most ``limit`` characters of it."""
    text = " ".join(f"/{command} {' '.join(args)}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _job_key(command: str, args: list[str]) -> str:
    """Jobs with one key run one after another: a branch's builds, the repository's bumps."""
    return {"bump": "repository", "publish": "publish"}.get(command, f"{command} {args[0] if args else ''}")


@dataclass
class Chat:
    ctx: Context
    audit: Callable[[str], None] | None = None
    runner: JobRunner | None = None
    is_admin: Callable[[str], bool] | None = None  # admins beyond TORCHBOT_ADMINS (may raise ExternalError)
    admin_hint: str = ""  # said after "only admins may run it" (the console says how to be one)

    def __post_init__(self) -> None:
        if self.runner is None:
            self.runner = JobRunner(self.ctx.settings.job_workers)
        from release.state import state_for

        self.store = AnsweringStore(lambda: state_for(self.ctx), self.ctx.settings.state_timeout_seconds)

    @property
    def state(self) -> AnsweringStore:
        return self.store

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
                return PinsResult(self.ctx, args)
            if name == "torchbot":
                sub = args[0].lower() if args else "help"
                if sub == "status":
                    return self._status()
                if sub == "dashboard":
                    from release.dashboard.commands import dashboard

                    return dashboard(self.ctx)
                if sub == "why-held":
                    from bot.frontends.commands import why_held

                    return why_held(self.ctx, args[1:])
                if sub == "changes":
                    from bot.frontends.commands import changes

                    days = args[1] if len(args) > 1 else "7"
                    if not days.isdigit() or not 0 < int(days) <= 366:
                        raise UsageError("Usage: /torchbot changes [days]  (1 to 366; 7 unless said)")
                    return changes(self.ctx, int(days))
                if sub in PLANNERS or sub in ("variant", "pins"):
                    rest = text.split(None, 1)[1] if len(args) > 1 else ""
                    return self.command(sub, rest, user, channel)
                return MessageResult(HELP)
            if name in PLANNERS:
                return self._plan(name, args, user, channel)
            return MessageResult(f"Unknown command /{name}. {SHORT_HELP}", ok=False)
        except TorchbotError as err:
            return MessageResult(err.message, ok=False)
        except SQLAlchemyError as err:  # a planner reached the state DB itself, and it failed
            if not unreachable(err):
                return MessageResult(report(log, f"/{name}"), ok=False)
            return MessageResult(f"/{name} did nothing: {StateStoreNotAnswering().message}", ok=False)
        except Exception:  # noqa: BLE001  the traceback goes to the log under an id, the user gets a sentence
            return MessageResult(report(log, f"/{name}"), ok=False)

    def mention(self, text: str, user: str = "console", channel: str = "console"):
        """`@torchbot …`: a slash command's word routes to it; words it understands (help, pins,
        status, "bump main", "release pytorch 2.9": config/data/chat_intents.toml) run the same
        command, with the same plan and Confirm; a hardware question goes to /variant; anything
        else is said not understood, with the nearest command."""
        body = _MENTION_RE.sub(" ", text).strip()
        first, _, rest = body.partition(" ")
        word = first.lower()
        if first.startswith("/") or word == "variant" or (word in PLANNERS and "--" in rest):
            return self.command(word.lstrip("/"), rest, user, channel)  # the slash command as typed, options and all
        if word == "dashboard" and not rest:
            return self.command("torchbot", "dashboard", user, channel)
        return self.understood(body, user, channel)

    def understood(self, body: str, user: str, channel: str):
        from bot.engine.intents import read

        intent = read(body, self._branches())
        name = intent.command
        if name == "variant" or (name != "pins" and self._hardware(body, intent)):
            return self.command("variant", body, user, channel)
        if name in ("help", "status", "dashboard", "changes"):
            return self.command("torchbot", name, user, channel)
        if name == "held":
            return self.command("torchbot", " ".join(("why-held", *intent.args)), user, channel)
        if intent.choices:
            picks = ", ".join(f"`/{name} {b}`" for b in intent.choices)
            return MessageResult(f"Several branches fit “{_quoted(body)}”: which one? {picks}.", ok=False)
        if intent.missing or name == "unknown":
            what = f" ({intent.missing})" if intent.missing else ""
            nearest = (f"The nearest command is `{intent.usage}`; `/torchbot help` lists them all."
                       if intent.usage != "/torchbot help" else "`/torchbot help` lists what I understand.")
            return MessageResult(f"I did not understand “{_quoted(body)}”{what}. {nearest}", ok=False)
        return self.command(name, " ".join(intent.args), user, channel)

    def _hardware(self, body: str, intent) -> bool:
        """A message no intent fully took is a /variant question when it names any hardware; a
        release question ("why is X held?", "what changed this week?") that names no branch is one
        when it names a machine (a GPU, CPU or instance: "last week I got an RTX 4090")."""
        from bot.engine.intents import hardware_question, may_be_hardware

        if not may_be_hardware(intent):
            return False
        from bot.engine.hardware import parse

        try:
            hw = parse(self.ctx.catalog, body)
        except TorchbotError:
            return intent.command == "unknown"
        return hardware_question(intent, hw)

    def _branches(self) -> dict[str, str | None]:
        """Branch name -> its PyTorch, for reading branch names and "pytorch 2.9" in words: the
        catalog's branches and the repository's (local and the remote's)."""
        names: dict[str, str | None] = {}
        if self.ctx.settings.repo_path:
            from release.branches.commands import branch_names

            with suppress(TorchbotError):
                names = dict.fromkeys(branch_names(self.ctx))
        with suppress(TorchbotError):
            cat = self.ctx.catalog
            names.update({b.name: b.pytorch for b in cat.branches.values()})
            names.update({b.name: b.pytorch for b in cat.vision.values() if b.name not in names})
        return names

    def confirm(self, pending_id: str, user: str, on_start: Callable[[Job], None] | None = None,
                on_done: Callable[[Job], None] | None = None, on_progress: Callable | None = None,
                notice: Callable[[], dict | None] | None = None):
        """Claim the plan for its asker and hand it to the job runner (returns at once).
        ``on_progress`` hears the work's progress events (``config.progress``); ``notice()``
        says where the front end reports the job, kept with a build run so that a restart can
        tell it what became of the run."""
        try:
            outcome, row = self.state.take_plan(pending_id, user, "confirmed")
        except StateStoreNotAnswering as err:
            return MessageResult(f"Nothing was confirmed: {err.message}", ok=False)
        if outcome != "ok":
            return MessageResult(self._refusal(outcome, row), ok=False)
        args = json.loads(row.args)
        self._audit(user, row.channel, f"confirm /{row.command} {' '.join(args)}")
        job = Job(_title(row.command, args), lambda job: self._apply(row, job),
                  key=_job_key(row.command, args), user=user, on_start=on_start, on_done=on_done,
                  on_progress=on_progress, notice=notice)
        self.runner.submit(job)
        return JobReply(job, self.runner.position(job), self.runner.running())

    def cancel(self, pending_id: str, user: str):
        try:
            admin = self._is_admin(user)
        except ExternalError:
            admin = False
        try:
            outcome, row = self.state.take_plan(pending_id, user, "cancelled", others_may=admin)
        except StateStoreNotAnswering as err:
            return MessageResult(f"Nothing was cancelled: {err.message}", ok=False)
        if outcome != "ok":
            return MessageResult(self._refusal(outcome, row), ok=False)
        args = json.loads(row.args)
        self._audit(user, row.channel, f"cancel /{row.command} {' '.join(args)}")
        return MessageResult(f"Cancelled /{row.command} {' '.join(args)}. Nothing was changed.")

    def diff(self, pending_id: str, user: str):
        """The unified diff of the files a shown plan would write, made again from the plan's
        arguments (as a Confirm would); for its asker or an admin, while it is pending."""
        try:
            row = self.state.plan(pending_id)
        except StateStoreNotAnswering as err:
            return MessageResult(f"No diff: {err.message}", ok=False)
        if row is None or row.state != "pending":
            return MessageResult(self._refusal("unknown" if row is None else "handled", row), ok=False)
        if row.user != user and not self._is_admin(user):
            return MessageResult(f"Only the admin who asked ({row.user}) or another admin can see this diff.", ok=False)
        args, replay = json.loads(row.args), json.loads(row.replay)
        try:
            plan = self._make_plan(row.command, replay)
        except TorchbotError as err:
            return MessageResult(err.message, ok=False)
        if not hasattr(plan, "diff"):
            return MessageResult(f"/{row.command} writes no files in the repository: there is no diff.")
        changes = plans.moved(json.loads(row.expected), plans.expected_refs(row.command, plan.to_dict()))
        if changes:
            return MessageResult(plans.refused_moved(row.command, args, changes).replace("Refused", "No diff for"),
                                 ok=False)
        return plans.DiffResult(row.command, args, plan.diff() or "(no file would change)", plans.cli_diff(replay))

    # -- helpers -----------------------------------------------------------------------

    def _refusal(self, outcome: str, row) -> str:
        if row is None:
            return plans.refusal(outcome, None, "", [])
        return plans.refusal(outcome, row.state, row.command, json.loads(row.args), owner=row.user,
                             expires=row.expires, handled=row.handled,
                             ttl_seconds=int((row.expires - row.created).total_seconds()))

    def _is_admin(self, user: str) -> bool:
        return user in self.ctx.settings.admins or bool(self.is_admin and self.is_admin(user))

    def _authorize(self, user: str, channel: str, name: str) -> None:
        s = self.ctx.settings
        try:
            admin = self._is_admin(user)
        except ExternalError as err:
            raise PermissionDenied(f"/{name} changes the repository; only admins may run it, and {err.message}") \
                from None
        if not admin:
            raise PermissionDenied(f"/{name} changes the repository; only admins may run it.{self.admin_hint}")
        if s.allowed_channels and channel not in s.allowed_channels and channel != APP_HOME:
            raise PermissionDenied(f"/{name} is not allowed in this channel.")

    def _make_plan(self, name: str, args: list[str]):
        planner = PLANNERS[name]
        if name == "bump":
            rest, extra = plans.bump_options(args)
            if not rest or len(rest) > 2:
                raise UsageError(USAGE["bump"])
            # delivered as the schedule delivers (TORCHBOT_BUMP_DELIVERY: a pull request with GitHub, else local)
            return planner(self.ctx, rest[0], rest[1] if len(rest) > 1 else None, delivery="auto", **extra)
        if name == "build":
            rest = [a for a in args if a != "--resume"]
            if not rest:
                raise UsageError(USAGE["build"])
            return planner(self.ctx, rest[0], rest[1:] or None, resume=len(rest) < len(args))
        return planner(self.ctx, args[0])

    def _plan(self, name: str, args: list[str], user: str, channel: str):
        try:
            self._authorize(user, channel, name)
        except PermissionDenied:
            self._audit(user, channel, f"refused /{name} {' '.join(args)}")
            raise
        if not args:
            raise UsageError(USAGE[name])
        try:  # planners read the state DB themselves: a store that does not answer is said at once
            self.state.ping()
        except StateStoreNotAnswering as err:
            raise ExternalError(f"No plan was made for /{name}: {err.message}") from None
        plan = self._make_plan(name, args)
        shape = plan.to_dict()
        if plans.nothing_to_do(name, shape):
            return MessageResult(plan.text())
        from release.state import PendingPlan, utcnow

        now = utcnow()
        row = PendingPlan(
            id=secrets.token_hex(8), command=name, args=json.dumps(args),
            replay=json.dumps(plans.replay_args(name, args, shape)),
            expected=json.dumps(plans.expected_refs(name, shape)), summary=plan.text()[:20000],
            user=user, channel=channel, created=now,
            expires=now + timedelta(seconds=self.ctx.settings.plan_ttl_seconds),
        )
        try:
            self.state.add_plan(row)
        except StateStoreNotAnswering as err:
            raise ExternalError(f"No plan was made for /{name}: {err.message}") from None
        self._audit(user, channel, f"plan /{name} {' '.join(args)}")
        return PlanReply(Pending(row.id, name, args, user, channel, plan, row.expires.replace(tzinfo=UTC)))

    def _apply(self, row, job: Job | None = None):
        """In a job: make the plan again from the same arguments; apply it only if nothing it
        was made from has moved since it was shown. The job's progress listener hears it run."""
        args, replay = json.loads(row.args), json.loads(row.replay)
        plan = self._make_plan(row.command, replay)
        changes = plans.moved(json.loads(row.expected), plans.expected_refs(row.command, plan.to_dict()))
        if changes:
            return MessageResult(plans.refused_moved(row.command, args, changes), ok=False)
        if job is None:
            result = plan.apply()
        else:
            from config.progress import Progress

            progress = Progress(job.heard, verb=VERBS.get(row.command, "done"))
            result = plan.apply(progress, job.notice() if job.notice else None)
        from release.dashboard.commands import after_operation

        after_operation(self.ctx, f"/{row.command}")
        return result

    def _status(self):
        s = self.ctx.settings
        jobs = self.runner.jobs()
        running = [j for j in jobs if j.state == "running"]
        cat = self.ctx.catalog  # one read: each access may re-read the repositories
        lines = [
            f"catalog: {cat.source}, {len(cat.branches)} branches"
            + (f" (+ {len(cat.vision)} torchvision)" if cat.vision else ""),
            f"repository: {', '.join(map(str, s.repositories())) or 'not configured'}",
            f"announce channel: {s.announce_channel or 'not configured'}",
        ]
        pending, leader = self._stored()
        lines = [
            *lines,
            f"admins: {len(s.admins)}" + (f" and the members of {s.admin_usergroup}" if s.admin_usergroup else "")
            + f"; pending plans: {pending}",
            f"jobs: {len(running)} running, {len(jobs) - len(running)} queued ({self.runner.workers} workers)",
            leader,
        ]
        lines.extend(f"  {j.describe()}" for j in jobs)
        return MessageResult("\n".join(lines))

    def _stored(self) -> tuple[str, str]:
        """What the status reads from the state DB (pending plans, the schedule's leader), in one
        call given STATUS_SECONDS at most: a busy or locked store is said, not waited for."""
        from release.schedule.leader import status

        def read(st) -> tuple[str, str]:
            return str(len(st.pending_plans())), status(self.ctx)

        try:
            return self.state.run("the status", read, deadline=STATUS_SECONDS)
        except StateStoreNotAnswering as err:
            why = f"unknown: could not read the state DB: {err.message}"
            return why, f"schedule: leader {why}"

    def _audit(self, user: str, channel: str, what: str) -> None:
        from config import audit

        line = audit.line(user=user, channel=channel, what=what)  # JSON: the user's text is a field value
        log.info("audit: %s", line)
        if self.audit:
            self.audit(line)
            return
        audit.append(self.ctx.settings.audit_log, line)
