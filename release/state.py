"""The state DB: builds, the GitHub runs being followed, publishes, releases (Slack threads),
the announcement outbox, job-run locks, the pending plans of chat commands (waiting for
Confirm) and the Slack deliveries already answered (``claim_delivery``). SQLAlchemy 2 models; the URL comes from ``Settings.state_db`` (SQLite file by
default, PostgreSQL works the same). ``open_state(url)`` gives a :class:`State` whose
``session()`` is a context manager committing on success and rolling back on error.

Nothing waits on the database for ever: ``timeout`` seconds (``Settings.state_timeout_seconds``
through ``state_for``) bound a PostgreSQL connection (``connect_timeout``), each statement
(``statement_timeout``) and the wait for a pooled connection, and a SQLite lock
(``busy_timeout``). A server that stops answering altogether (frozen, a partition) is not
noticed by any of these; the chat front ends add a deadline of their own
(``bot.frontends.store``).
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    select,
    update,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from config.errors import ConfigError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

STATES = ("queued", "running", "succeeded", "failed", "interrupted")
ACTIVE = ("queued", "running")


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def owner_id() -> str:
    """Who runs a build: host and pid, so a restart can tell dead owners from live ones."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_start(pid: int | None = None) -> str | None:
    """When a process started (clock ticks since boot, from /proc), so a pid reused by another
    process is not taken for the owner; None where /proc is missing."""
    try:
        text = Path(f"/proc/{pid or os.getpid()}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def owner_alive(owner: str | None, start: str | None = None) -> bool | None:
    """True/False for an owner on this host (``host:pid``, with its process start time when
    known); None for an owner on another host (its liveness cannot be seen from here)."""
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None if host and host != socket.gethostname() else False
    if not _alive(int(pid)):
        return False
    return start is None or process_start(int(pid)) in (None, start)


class Base(DeclarativeBase):
    pass


class Build(Base):
    __tablename__ = "builds"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    package: Mapped[str] = mapped_column(String(200), index=True)
    branch: Mapped[str] = mapped_column(String(200), index=True)
    state: Mapped[str] = mapped_column(String(20), index=True, default="queued")
    backend: Mapped[str] = mapped_column(String(20), default="local")
    created: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    finished: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    log: Mapped[str | None] = mapped_column(Text, nullable=True)
    recipe_blob: Mapped[str | None] = mapped_column(String(64), nullable=True)
    commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    pin: Mapped[str | None] = mapped_column(String(64), nullable=True)
    out_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    run_key: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)  # one build invocation
    external_id: Mapped[str | None] = mapped_column(String(64), nullable=True)  # GitHub run id

    def to_dict(self) -> dict:
        iso = lambda d: d.isoformat(timespec="seconds") + "Z" if d else None  # noqa: E731
        return {
            "id": self.id,
            "package": self.package,
            "branch": self.branch,
            "state": self.state,
            "backend": self.backend,
            "started": iso(self.started),
            "finished": iso(self.finished),
            "log": self.log,
            "recipe_blob": self.recipe_blob,
            "pin": self.pin,
            "message": self.message,
            "external_id": self.external_id,
        }


class BuildRun(Base):
    """One local build run (one ``release build`` or confirmed ``/build``): who runs it, its
    worktree and spool file, and where a front end reports it (``notice``: JSON, opaque here,
    e.g. a Slack message). ``state``: running | finished | interrupted. A restarted torchbot
    resolves the runs of a dead owner (``release.builds.recover``); ``notified`` is set once the
    front end has told its users."""

    __tablename__ = "build_runs"

    run_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    branch: Mapped[str] = mapped_column(String(200), index=True)
    state: Mapped[str] = mapped_column(String(20), index=True, default="running")
    owner: Mapped[str] = mapped_column(String(200))
    owner_start: Mapped[str | None] = mapped_column(String(40), nullable=True)  # the owner's process start time
    repo: Mapped[str | None] = mapped_column(Text, nullable=True)
    worktree: Mapped[str | None] = mapped_column(Text, nullable=True)
    spool: Mapped[str | None] = mapped_column(Text, nullable=True)
    notice: Mapped[str | None] = mapped_column(Text, nullable=True)
    created: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    outcome: Mapped[str | None] = mapped_column(Text, nullable=True)  # what a restart found and did
    notified: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class BuildLock(Base):
    """The lock that keeps two builds of one variant from running at once: one row per
    (branch, package) while a build of it is queued or running, with the process group of the
    build once it started."""

    __tablename__ = "build_locks"
    __table_args__ = (UniqueConstraint("branch", "package", name="uq_build_lock"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200))
    package: Mapped[str] = mapped_column(String(200))
    build_id: Mapped[int] = mapped_column(Integer, index=True)
    run_key: Mapped[str] = mapped_column(String(64), index=True)
    owner: Mapped[str] = mapped_column(String(200))
    since: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    pgid: Mapped[int | None] = mapped_column(Integer, nullable=True)


class GithubRun(Base):
    """One workflow_dispatch of the github build backend and what torchbot has seen of it, so a
    restarted torchbot resumes following where it was. ``request_id`` is in the run's name and
    is the ``run_key`` of its builds (whose rows hold each job's state); ``run_id`` is GitHub's,
    once seen. ``status``: dispatching | dispatched | queued | in_progress | completed | stale.
    ``requests`` counts the API requests spent following it; ``next_poll`` paces polling to
    the rate limit."""

    __tablename__ = "github_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    request_id: Mapped[str] = mapped_column(String(64), unique=True)
    branch: Mapped[str] = mapped_column(String(200), index=True)
    ref: Mapped[str] = mapped_column(String(200))
    workflow: Mapped[str] = mapped_column(String(200))
    jobs: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    html_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    status: Mapped[str] = mapped_column(String(20), index=True, default="dispatching")
    conclusion: Mapped[str | None] = mapped_column(String(40), nullable=True)
    dispatched: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_poll: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    last_change: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    next_poll: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    finished: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    polls: Mapped[int] = mapped_column(Integer, default=0)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)

    def to_dict(self) -> dict:
        iso = lambda d: d.isoformat(timespec="seconds") + "Z" if d else None  # noqa: E731
        return {"request_id": self.request_id, "branch": self.branch, "run_id": self.run_id,
                "html_url": self.html_url, "status": self.status, "conclusion": self.conclusion,
                "jobs": self.jobs, "dispatched": iso(self.dispatched), "last_poll": iso(self.last_poll),
                "polls": self.polls, "requests": self.requests, "last_error": self.last_error}


class Publish(Base):
    __tablename__ = "publishes"
    __table_args__ = (UniqueConstraint("package", "branch", "pin", name="uq_publish"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    package: Mapped[str] = mapped_column(String(200))
    branch: Mapped[str] = mapped_column(String(200), index=True)
    pin: Mapped[str | None] = mapped_column(String(64), nullable=True)
    build_id: Mapped[int | None] = mapped_column(ForeignKey("builds.id"), nullable=True)
    published: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Release(Base):
    """One Slack thread per (branch, pin)."""

    __tablename__ = "releases"
    __table_args__ = (UniqueConstraint("branch", "pin", name="uq_release"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200))
    pin: Mapped[str] = mapped_column(String(64))
    previous_pin: Mapped[str | None] = mapped_column(String(64), nullable=True)
    total: Mapped[int] = mapped_column(Integer, default=0)
    channel: Mapped[str | None] = mapped_column(String(64), nullable=True)
    thread_ts: Mapped[str | None] = mapped_column(String(64), nullable=True)
    info: Mapped[str] = mapped_column(Text, default="{}")  # JSON: pytorch, cuda, python
    created: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Outbox(Base):
    """An announcement to send. kind: parent | variant | summary."""

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    package: Mapped[str | None] = mapped_column(String(200), nullable=True)
    client_msg_id: Mapped[str] = mapped_column(String(64), unique=True)
    created: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    attempted: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    sent: Mapped[datetime | None] = mapped_column(DateTime, nullable=True, index=True)
    ts: Mapped[str | None] = mapped_column(String(64), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class JobRun(Base):
    """One scheduled run of a job; the unique (job, slot) row is the cross-process lock that
    keeps two torchbot processes on one DB from running the same run twice."""

    __tablename__ = "job_runs"
    __table_args__ = (UniqueConstraint("job_id", "slot", name="uq_job_slot"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(String(200), index=True)
    slot: Mapped[str] = mapped_column(String(64))
    owner: Mapped[str] = mapped_column(String(200))
    started: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    result: Mapped[str | None] = mapped_column(Text, nullable=True)


class PendingPlan(Base):
    """A plan shown in chat and waiting for its Confirm: what to run again (``replay``), what
    must not have moved when it is confirmed (``expected``: name -> value), who may confirm it
    and until when. ``state``: pending | confirmed | cancelled | expired."""

    __tablename__ = "pending_plans"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    command: Mapped[str] = mapped_column(String(40))
    args: Mapped[str] = mapped_column(Text, default="[]")  # JSON list, as typed
    replay: Mapped[str] = mapped_column(Text, default="[]")  # JSON list, with resolved revisions
    expected: Mapped[str] = mapped_column(Text, default="{}")  # JSON object
    summary: Mapped[str] = mapped_column(Text, default="")
    user: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(64))
    created: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires: Mapped[datetime] = mapped_column(DateTime, index=True)
    state: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    handled: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    handled_by: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Delivery(Base):
    """A Slack delivery (an event, a slash command, a button click) that torchbot took on: the
    unique ``key`` is the claim that keeps a retried or re-sent delivery from being answered
    twice, across restarts and processes. A row counts until ``expires``."""

    __tablename__ = "slack_deliveries"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    seen: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires: Mapped[datetime] = mapped_column(DateTime, index=True)


DEFAULT_TIMEOUT = 10.0  # seconds; Settings.state_timeout_seconds


class State:
    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT):
        self.url = url
        self.timeout = timeout
        kwargs: dict = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": timeout}
            _sqlite_dir(url)
        else:
            kwargs["pool_pre_ping"] = True  # a restarted PostgreSQL server does not break the bot
            kwargs["pool_timeout"] = timeout
            if url.startswith("postgresql"):
                kwargs["connect_args"] = {"connect_timeout": max(2, round(timeout)),
                                          "options": f"-c statement_timeout={int(timeout * 1000)}"}
        try:
            self.engine: Engine = create_engine(url, **kwargs)
            if url.startswith("sqlite"):
                event.listen(self.engine, "connect", _sqlite_pragmas(timeout))
            _create_tables(self.engine)
        except (ImportError, SQLAlchemyError) as err:
            raise ConfigError(f"TORCHBOT_STATE_DB: cannot open {_shown(url)}: {_reason(err)}") from None
        self._factory = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        s = self._factory()
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()

    # -- builds -------------------------------------------------------------------------

    def builds(self, branch: str | None = None, latest_only: bool = True) -> list[Build]:
        with self.session() as s:
            q = select(Build).order_by(Build.id)
            if branch:
                q = q.where(Build.branch == branch)
            rows = list(s.scalars(q))
        if not latest_only:
            return rows
        latest: dict[tuple[str, str], Build] = {}
        for row in rows:
            latest[(row.branch, row.package)] = row
        return sorted(latest.values(), key=lambda b: (b.branch, b.package))

    def last_success(self, branch: str) -> dict[str, Build]:
        """package -> its last succeeded build on the branch."""
        with self.session() as s:
            rows = s.scalars(
                select(Build).where(Build.branch == branch, Build.state == "succeeded").order_by(Build.id)
            )
            return {b.package: b for b in rows}

    def mark_interrupted(self) -> int:
        """Builds left queued/running by a process that no longer exists become interrupted.
        Returns how many rows changed. Live owners on this host (or any other host) keep theirs."""
        host = socket.gethostname()
        changed = 0
        with self.session() as s:
            runs = select(BuildRun.run_key)  # builds of a recorded run are resolved with it (release.builds.recover)
            for b in s.scalars(select(Build).where(Build.state.in_(ACTIVE), Build.backend == "local",
                                                   Build.run_key.is_(None) | Build.run_key.not_in(runs))):
                owner = b.owner or ""
                o_host, _, o_pid = owner.rpartition(":")
                if o_host == host and o_pid.isdigit() and int(o_pid) != os.getpid() and _alive(int(o_pid)):
                    continue
                if o_host == host and o_pid.isdigit() and int(o_pid) == os.getpid() and _RUNNING.get(b.id):
                    continue
                if o_host and o_host != host:
                    continue
                b.state = "interrupted"
                b.finished = utcnow()
                b.message = "torchbot stopped while this build was " + ("running" if b.started else "queued")
                changed += 1
        return changed

    # -- pending plans --------------------------------------------------------------------

    def add_plan(self, plan: PendingPlan) -> None:
        with self.session() as s:
            s.add(plan)

    def take_plan(self, plan_id: str, user: str, action: str = "confirmed",
                  others_may: bool = False) -> tuple[str, PendingPlan | None]:
        """Claim a pending plan for ``action`` (confirmed | cancelled) by ``user`` (only its asker
        unless ``others_may``), at most once across processes. Returns (outcome, row):
        ok | unknown | handled | expired | not_owner."""
        now = utcnow()
        with self.session() as s:
            row = s.get(PendingPlan, plan_id)
            if row is None:
                return "unknown", None
            if row.state != "pending":
                return "handled", row
            if row.user != user and not others_may:
                return "not_owner", row
            if row.expires <= now:
                s.execute(update(PendingPlan).where(PendingPlan.id == plan_id, PendingPlan.state == "pending")
                          .values(state="expired", handled=now))
                return "expired", row
            done = s.execute(update(PendingPlan).where(PendingPlan.id == plan_id, PendingPlan.state == "pending")
                             .values(state=action, handled=now, handled_by=user))
            if done.rowcount != 1:
                return "handled", s.get(PendingPlan, plan_id)
            row.state, row.handled, row.handled_by = action, now, user
            return "ok", row

    def pending_plans(self) -> list[PendingPlan]:
        with self.session() as s:
            return list(s.scalars(select(PendingPlan).where(PendingPlan.state == "pending",
                                                            PendingPlan.expires > utcnow()).order_by(PendingPlan.created)))

    # -- job locks ----------------------------------------------------------------------

    def claim_run(self, job_id: str, slot: str) -> int | None:
        """Insert the (job, slot) row; None when another process already claimed it."""
        try:
            with self.session() as s:
                run = JobRun(job_id=job_id, slot=slot, owner=owner_id())
                s.add(run)
                s.flush()
                return run.id
        except IntegrityError:
            return None

    def finish_run(self, run_id: int, result: str) -> None:
        with self.session() as s:
            s.execute(update(JobRun).where(JobRun.id == run_id).values(finished=utcnow(), result=result[:2000]))

    def job_runs(self, job_id: str | None = None) -> list[JobRun]:
        with self.session() as s:
            q = select(JobRun).order_by(JobRun.id)
            if job_id:
                q = q.where(JobRun.job_id == job_id)
            return list(s.scalars(q))

    # -- Slack deliveries ---------------------------------------------------------------

    def claim_delivery(self, key: str, ttl_seconds: float) -> bool:
        """True for the first claim of ``key`` (or the first after its row expired), False
        when it was claimed before, by this process or another."""
        now = utcnow()
        until = now + timedelta(seconds=ttl_seconds)
        try:
            with self.session() as s:
                s.add(Delivery(key=key, seen=now, expires=until))
                s.flush()
            return True
        except IntegrityError:
            pass
        with self.session() as s:  # an expired claim may be taken again, once
            done = s.execute(update(Delivery).where(Delivery.key == key, Delivery.expires <= now)
                             .values(seen=now, expires=until))
            return done.rowcount == 1

    def prune_deliveries(self) -> int:
        """Forget expired delivery claims; returns how many."""
        with self.session() as s:
            return s.execute(delete(Delivery).where(Delivery.expires <= utcnow())).rowcount


_RUNNING: dict[int, bool] = {}  # build ids this process is running right now
_STATES: dict[str, State] = {}
_LOCK = threading.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _shown(url: str) -> str:
    """The URL with any password hidden (secrets never reach logs or chat)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("://", 1)[0] + "://…"


def _reason(err: BaseException) -> str:
    orig = getattr(err, "orig", None) or err
    text = " ".join(str(orig).split())
    if isinstance(err, ImportError) or type(err).__name__ == "NoSuchModuleError":
        return f"its driver is not installed ({text}); torchbot supports sqlite:/// and postgresql+psycopg://"
    return text[:300] or type(orig).__name__


def _sqlite_dir(url: str) -> None:
    """Create the SQLite file's directory, or say in one line why it cannot be."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    directory = Path(database).expanduser().parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"TORCHBOT_STATE_DB: cannot create the directory {directory}: "
                          f"{err.strerror or err}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"TORCHBOT_STATE_DB: the directory {directory} is not writable") from None


def _create_tables(engine: Engine) -> None:
    """Create missing tables; two processes starting at once on one PostgreSQL DB may race,
    and the loser only has to see the winner's tables."""
    try:
        Base.metadata.create_all(engine)
    except IntegrityError:
        Base.metadata.create_all(engine)
    except SQLAlchemyError as err:
        if "already exists" not in str(err):
            raise
        Base.metadata.create_all(engine)


def _sqlite_pragmas(timeout: float):
    def on_connect(dbapi_conn, _record) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        cur.close()

    return on_connect


def open_state(url: str, timeout: float | None = None) -> State:
    """One State (engine) per URL per process (the first opener's ``timeout`` holds)."""
    with _LOCK:
        st = _STATES.get(url)
        if st is None:
            st = _STATES[url] = State(url, DEFAULT_TIMEOUT if timeout is None else timeout)
        return st


def state_for(ctx) -> State:
    return open_state(ctx.settings.state_db, getattr(ctx.settings, "state_timeout_seconds", None))
