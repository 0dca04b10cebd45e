"""``State``: the state DB's operations (sessions, builds, plans, job runs, deliveries) and
``open_state`` / ``state_for``, one engine per URL per process, with the timeouts below.
May import config and the other modules of release.state."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from sqlalchemy import create_engine, delete, event, inspect, select, text, update
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from config.errors import ConfigError
from config.paths import redact_url
from release.state.liveness import owner_gone
from release.state.owners import RUNNING, alive, owner_id
from release.state.tables import (
    ACTIVE,
    Base,
    Build,
    BuildRun,
    Claim,
    Delivery,
    JobRun,
    Outbox,
    PendingPlan,
    utcnow,
)

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
        latest: dict[tuple[str, str, str], Build] = {}  # a branch and package of each repository
        for row in rows:
            latest[(row.repo or "", row.branch, row.package)] = row
        return sorted(latest.values(), key=lambda b: (b.repo or "", b.branch, b.package))

    def last_success(self, branch: str, repo: str | None = None) -> dict[str, Build]:
        """package -> its last succeeded build on the branch of ``repo`` (a GitHub owner/name;
        None: TORCHBOT_GITHUB_REPO's, whose rows hold no repository)."""
        with self.session() as s:
            where = Build.repo.is_(None) if repo is None else Build.repo == repo
            rows = s.scalars(
                select(Build).where(Build.branch == branch, Build.state == "succeeded", where).order_by(Build.id)
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
                if o_host == host and o_pid.isdigit() and int(o_pid) != os.getpid() and alive(int(o_pid)):
                    continue
                if o_host == host and o_pid.isdigit() and int(o_pid) == os.getpid() and RUNNING.get(b.id):
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

    def plan(self, plan_id: str) -> PendingPlan | None:
        """A plan's row as it is, read only (a Slack "Show diff" makes the plan again from it)."""
        with self.session() as s:
            return s.get(PendingPlan, plan_id)

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

    def untake_plan(self, plan_id: str, action: str, user: str, handled) -> bool:
        """Put a plan that ``take_plan`` claimed back to pending: only that very claim (same
        action, user and time), so nothing claimed since is undone. True when it was."""
        with self.session() as s:
            done = s.execute(update(PendingPlan).where(
                PendingPlan.id == plan_id, PendingPlan.state == action, PendingPlan.handled_by == user,
                PendingPlan.handled == handled).values(state="pending", handled=None, handled_by=None))
            return done.rowcount == 1

    def pending_plans(self) -> list[PendingPlan]:
        with self.session() as s:
            return list(
                s.scalars(
                    select(PendingPlan)
                    .where(PendingPlan.state == "pending", PendingPlan.expires > utcnow())
                    .order_by(PendingPlan.created)
                )
            )

    # -- job locks ----------------------------------------------------------------------

    def claim_run(self, job_id: str, slot: str) -> int | None:
        """Insert the (job, slot) row; None when another process already claimed it (and lives,
        or finished it): the run of a process that died before finishing is taken over."""
        try:
            with self.session() as s:
                run = JobRun(job_id=job_id, slot=slot, owner=owner_id())
                s.add(run)
                s.flush()
                return run.id
        except IntegrityError:
            pass
        with self.session() as s:  # a run whose process died unfinished (a kill) is run again
            row = s.scalars(select(JobRun).where(JobRun.job_id == job_id, JobRun.slot == slot)).first()
            if row is None or row.finished is not None or not owner_gone(row.owner):
                return None
            taken = s.execute(update(JobRun).where(JobRun.id == row.id, JobRun.owner == row.owner,
                                                   JobRun.finished.is_(None))
                              .values(owner=owner_id(), started=utcnow()))
            return row.id if taken.rowcount == 1 else None

    def finish_run(self, run_id: int, result: str) -> None:
        with self.session() as s:
            s.execute(update(JobRun).where(JobRun.id == run_id).values(finished=utcnow(), result=result[:2000]))

    def job_runs(self, job_id: str | None = None) -> list[JobRun]:
        with self.session() as s:
            q = select(JobRun).order_by(JobRun.id)
            if job_id:
                q = q.where(JobRun.job_id == job_id)
            return list(s.scalars(q))

    # -- claims: work done once across processes ----------------------------------------

    def claim(self, key: str, owner: str, ttl_seconds: float) -> bool:
        """Take (or renew) the claim ``key`` for ``owner`` until ``ttl_seconds`` from now: True
        when it is ``owner``'s now, False while another owner's claim has not expired. A
        compare-and-set on one row, so any number of processes agree on one owner."""
        now = utcnow()
        until = now + timedelta(seconds=ttl_seconds)
        try:
            with self.session() as s:
                s.add(Claim(key=key, owner=owner, since=now, until=until))
                s.flush()
            return True
        except IntegrityError:
            pass
        with self.session() as s:
            mine = s.execute(update(Claim).where(Claim.key == key, Claim.owner == owner).values(until=until))
            if mine.rowcount == 1:
                return True
            taken = s.execute(update(Claim).where(Claim.key == key, Claim.until <= now)
                              .values(owner=owner, since=now, until=until))
            if taken.rowcount == 1:
                return True
            held = s.get(Claim, key)
            if held is None or not owner_gone(held.owner):
                return False
            # its owner died (a kill): taken over now, not after its lease
            gone = s.execute(update(Claim).where(Claim.key == key, Claim.owner == held.owner)
                             .values(owner=owner, since=now, until=until))
            return gone.rowcount == 1

    def unclaim(self, key: str, owner: str) -> None:
        """Give up ``owner``'s claim ``key`` (the work is done or failed; another may take it)."""
        with self.session() as s:
            s.execute(delete(Claim).where(Claim.key == key, Claim.owner == owner))

    def claim_holder(self, key: str) -> Claim | None:
        """The live claim ``key`` (None when nobody holds it or it expired)."""
        with self.session() as s:
            row = s.get(Claim, key)
            return row if row is not None and row.until > utcnow() else None

    def claim_outbox(self, row_id: int, owner: str, ttl_seconds: float) -> bool:
        """Take the unsent announcement ``row_id`` for ``owner`` (True), unless it was sent or
        another flusher's claim on it has not expired (False)."""
        now = utcnow()
        with self.session() as s:
            done = s.execute(update(Outbox).where(
                Outbox.id == row_id, Outbox.sent.is_(None),
                (Outbox.claim_until.is_(None)) | (Outbox.claim_until <= now) | (Outbox.claimed_by == owner),
            ).values(claimed_by=owner, claim_until=now + timedelta(seconds=ttl_seconds)))
            if done.rowcount == 1:
                return True
            row = s.get(Outbox, row_id)
            if row is None or row.sent is not None or not owner_gone(row.claimed_by):
                return False
            # its flusher died (a kill): taken over now, not after its claim
            done = s.execute(update(Outbox).where(Outbox.id == row_id, Outbox.sent.is_(None),
                                                  Outbox.claimed_by == row.claimed_by)
                             .values(claimed_by=owner, claim_until=now + timedelta(seconds=ttl_seconds)))
            return done.rowcount == 1

    def unclaim_outbox(self, row_id: int, owner: str) -> None:
        with self.session() as s:
            s.execute(update(Outbox).where(Outbox.id == row_id, Outbox.claimed_by == owner)
                      .values(claimed_by=None, claim_until=None))
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


_STATES: dict[str, State] = {}
_LOCK = threading.Lock()


def _shown(url: str) -> str:
    """The URL with any password hidden, also one given as ``?password=`` (secrets never reach
    logs or chat)."""
    try:
        return redact_url(make_url(url).render_as_string(hide_password=True))
    except (ArgumentError, ValueError):
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
    _add_missing_columns(engine)
    from release.state.upgrade import rekey

    rekey(engine, Base.metadata.tables)  # publishes, releases, failed publishes, build locks: per repository since


def _add_missing_columns(engine: Engine) -> None:
    """Give a state DB made by an older torchbot the nullable columns added since
    (``create_all`` creates missing tables, never missing columns). A missing column that
    must hold a value cannot be added: one line naming the table and column."""
    insp = inspect(engine)
    for table in Base.metadata.sorted_tables:
        have = {c["name"] for c in insp.get_columns(table.name)}
        for column in (c for c in table.columns if c.name not in have):
            if not column.nullable:
                raise ConfigError(f"TORCHBOT_STATE_DB: its table {table.name} lacks the column {column.name}, "
                                  "which an older torchbot did not make and which must hold a value; "
                                  "point TORCHBOT_STATE_DB at a new database")
            kind = column.type.compile(dialect=engine.dialect)
            try:
                with engine.begin() as conn:
                    conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))
            except SQLAlchemyError as err:  # another process starting at once added it first
                if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                    raise ConfigError(f"TORCHBOT_STATE_DB: cannot add the column {column.name} to its table "
                                      f"{table.name}: {str(err.orig if hasattr(err, 'orig') else err)[:200]}") from None


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
