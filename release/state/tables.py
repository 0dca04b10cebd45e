"""The state DB's tables (SQLAlchemy 2 models): builds and their runs and locks, the GitHub runs
being followed, publishes, releases (Slack threads), the announcement outbox, job-run locks,
pending chat plans and the Slack deliveries already answered (the release record's rows: ``record``).
May import nothing of torchbot."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

STATES = ("queued", "running", "succeeded", "failed", "interrupted")
ACTIVE = ("queued", "running")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


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
    # the GitHub repository (owner/name) of a build of a companion repository (build-torchvision);
    # None: TORCHBOT_GITHUB_REPO's (and every row written before repositories were recorded)
    repo: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)

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
            "commit": self.commit,
            "pin": self.pin,
            "message": self.message,
            "external_id": self.external_id,
            "repo": self.repo,
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
    (repository, branch, package) while a build of it is queued or running, with the process
    group of the build once it started. ``repo`` as ``Build.repo`` (None: the first repository):
    build-torchvision's ``main`` shares branch and package names with build-pytorch's, and a
    build of one never waits for the other's."""

    __tablename__ = "build_locks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200))
    package: Mapped[str] = mapped_column(String(200))
    build_id: Mapped[int] = mapped_column(Integer, index=True)
    run_key: Mapped[str] = mapped_column(String(64), index=True)
    owner: Mapped[str] = mapped_column(String(200))
    since: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    pgid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    repo: Mapped[str | None] = mapped_column(String(200), nullable=True)  # owner/name; None: the first repository


class GithubRun(Base):
    """One workflow_dispatch of the github build backend and what torchbot has seen of it, so a
    restarted torchbot resumes following where it was. ``request_id`` is in the run's name and
    is the ``run_key`` of its builds (whose rows hold each job's state); ``run_id`` is GitHub's,
    once seen. ``status``: torchbot's own ``dispatching`` (recorded, GitHub's answer to the
    dispatch not had) and ``dispatched``; then GitHub's (``requested``, ``pending``,
    ``waiting``, ``queued``, ``in_progress``) and ``ended`` (GitHub completed it, its results are
    being read) while it is followed; ``completed``, ``stale`` or ``gone`` (deleted on GitHub)
    once torchbot stopped following it (``release.builds.github_poll``). ``requests`` counts the
    API requests spent following it; ``next_poll`` is when any poller may poll it next.
    ``notice``: where a front end reports it (JSON, opaque here) and ``follower`` the process
    following it for that front end; ``outcome`` what became of it once closed, ``notified``
    when the front end was told (``release.builds.recover.pending_notices``)."""

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
    notice: Mapped[str | None] = mapped_column(Text, nullable=True)
    follower: Mapped[str | None] = mapped_column(String(200), nullable=True)
    outcome: Mapped[str | None] = mapped_column(Text, nullable=True)
    notified: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    repo: Mapped[str | None] = mapped_column(String(200), nullable=True)  # owner/name; None: TORCHBOT_GITHUB_REPO

    def to_dict(self) -> dict:
        iso = lambda d: d.isoformat(timespec="seconds") + "Z" if d else None  # noqa: E731
        return {"request_id": self.request_id, "branch": self.branch, "repo": self.repo, "ref": self.ref,
                "run_id": self.run_id,
                "html_url": self.html_url, "status": self.status, "conclusion": self.conclusion,
                "jobs": self.jobs, "dispatched": iso(self.dispatched), "last_poll": iso(self.last_poll),
                "polls": self.polls, "requests": self.requests, "last_error": self.last_error}


class Publish(Base):
    """A variant published to the catalog: one per (repository, package, branch, pin). ``repo``
    as ``Build.repo``: a companion's GitHub repository (owner/name), None for the first
    configured one (TORCHBOT_GITHUB_REPO's; every row written before repositories were
    recorded), so build-torchvision's ``main`` and build-pytorch's are apart."""

    __tablename__ = "publishes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    package: Mapped[str] = mapped_column(String(200))
    branch: Mapped[str] = mapped_column(String(200), index=True)
    pin: Mapped[str | None] = mapped_column(String(64), nullable=True)
    build_id: Mapped[int | None] = mapped_column(ForeignKey("builds.id"), nullable=True)
    published: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    repo: Mapped[str | None] = mapped_column(String(200), nullable=True)  # owner/name; None: the first repository


class Release(Base):
    """One Slack thread per (repository, branch, pin); ``repo`` as ``Publish.repo``."""

    __tablename__ = "releases"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200))
    pin: Mapped[str] = mapped_column(String(64))
    previous_pin: Mapped[str | None] = mapped_column(String(64), nullable=True)
    total: Mapped[int] = mapped_column(Integer, default=0)
    channel: Mapped[str | None] = mapped_column(String(64), nullable=True)
    thread_ts: Mapped[str | None] = mapped_column(String(64), nullable=True)
    info: Mapped[str] = mapped_column(Text, default="{}")  # JSON: pytorch, cuda, python
    created: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    repo: Mapped[str | None] = mapped_column(String(200), nullable=True)  # owner/name; None: the first repository


# Unique per repository, None counting as one repository (SQL's NULLs are all distinct, so a plain
# constraint over a nullable column would let the first repository's publish be recorded twice).
# ``release.state.upgrade`` puts these in place of the older (package, branch, pin) / (branch, pin)
# / (branch, package) of the build locks.
Index("uq_publish_repo", func.coalesce(Publish.repo, ""), Publish.package, Publish.branch,
      func.coalesce(Publish.pin, ""), unique=True)
Index("uq_release_repo", func.coalesce(Release.repo, ""), Release.branch, Release.pin, unique=True)
Index("uq_build_lock_repo", func.coalesce(BuildLock.repo, ""), BuildLock.branch, BuildLock.package, unique=True)


def same_repo(column, repo: str | None):
    """The SQL condition that ``column`` (a ``repo`` column) names ``repo`` (None: the first repository)."""
    return column.is_(None) if repo is None else column == repo


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
    claimed_by: Mapped[str | None] = mapped_column(String(200), nullable=True)  # the flusher sending it now
    claim_until: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)  # when another may take it


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


class Claim(Base):
    """Work that acts outside torchbot, taken by one process before it does it (a publish
    command: ``publish:[<repo>:]<branch>:<package>:<pin>``; the scheduler's leadership: ``leader:scheduler``).
    A row counts until ``until``; its owner renews it (a lease) or deletes it when done; a row
    whose owner died is taken over at once when that owner was on this host
    (``release.state.liveness``), else once it expired."""

    __tablename__ = "claims"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200))
    since: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    until: Mapped[datetime] = mapped_column(DateTime, index=True)


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
