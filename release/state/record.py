"""The release record: one typed row per repository x branch x pin group, written by the stage
that knows and read by every view (the dashboard, its JSON, Slack, the GitHub issue, the page).

- the bump stage (``release.pins.weekly``) writes each group's outcome: its kind, the revision it
  moved to or would move to (``target``), the PyTorch there (``pytorch``), the reason's kind
  (:class:`ReasonKind`, an enum: views word it; the ``reason`` text is for people and is never
  parsed back), and the delivery (how, the pull request's number, head branch and head sha);
- whoever sees a pull request change (automerge, the dashboard's look at GitHub and the remote)
  sets its :class:`PrState` (open, merged, closed and by whom, conflict);
- automerge holds a build-torchvision bump PR until its build-pytorch pair (the branch it pairs
  with, by versions or else by name; the same target) merged, and says why in its row
  (:class:`PairWait`, ``pair_of`` finds the pair);
- publishing records the publishes that failed (:class:`PublishFailure`), and clears them when
  the package publishes.

Builds are looked up by the commit they ran at (``release.state.Build.commit``), publishes in
``release.state.Publish``; what needs a human is read from these typed facts by the views.
May import config and the state package's tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import DateTime, Index, Integer, String, Text, UniqueConstraint, delete, func, select, update
from sqlalchemy.orm import Mapped, mapped_column

from config.outcomes import BumpKind, PairWait, PrState, ReasonKind
from release.state.tables import Base, same_repo, utcnow


class ReleaseRow(Base):
    """One pin group of one branch of one repository, as the stages last left it."""

    __tablename__ = "release_record"
    __table_args__ = (UniqueConstraint("repo", "branch", "grp", name="uq_release_record"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(500), index=True)  # the repository's resolved path
    repo_name: Mapped[str] = mapped_column(String(200), default="")
    branch: Mapped[str] = mapped_column(String(200))
    grp: Mapped[str] = mapped_column(String(200), default="")  # "CUDA 12.8, CPU"
    cuda: Mapped[str] = mapped_column(String(200), default="")  # the group's CUDA versions, comma-separated
    # the bump
    bump_kind: Mapped[str] = mapped_column(String(20))
    reason_kind: Mapped[str] = mapped_column(String(30), default="")
    reason: Mapped[str] = mapped_column(Text, default="")  # for people; never parsed back
    old_pin: Mapped[str | None] = mapped_column(String(40), nullable=True)
    target: Mapped[str | None] = mapped_column(String(40), nullable=True)  # moved to / would move to
    torch_old: Mapped[str | None] = mapped_column(String(40), nullable=True)
    pytorch: Mapped[str | None] = mapped_column(String(40), nullable=True)  # nixpkgs' torch at ``target``
    tracks: Mapped[str] = mapped_column(String(200), default="")
    bumped: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # the delivery (one per branch; every group of the branch carries it)
    delivery: Mapped[str] = mapped_column(String(20), default="")  # pr | push | local | ""
    delivery_error: Mapped[str] = mapped_column(Text, default="")
    commit: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the last commit it made
    pr_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pr_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    head_ref: Mapped[str | None] = mapped_column(String(300), nullable=True)
    head_sha: Mapped[str | None] = mapped_column(String(64), nullable=True)
    pr_state: Mapped[str] = mapped_column(String(20), default="")
    closed_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    pr_seen: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # a companion's (build-torchvision's) bump PR held back for its build-pytorch pair: why (PairWait)
    # and the pair's number; None once merged or never held
    waits_for: Mapped[str | None] = mapped_column(String(30), nullable=True)
    pair_pr: Mapped[int | None] = mapped_column(Integer, nullable=True)


class PublishFailure(Base):
    """A package of a branch at a pin whose publish failed, until it publishes; ``repo`` as
    ``release.state.Publish.repo`` (None: the first repository)."""

    __tablename__ = "publish_failures"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200), index=True)
    package: Mapped[str] = mapped_column(String(200))
    pin: Mapped[str] = mapped_column(String(64), default="")
    commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    when: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    repo: Mapped[str | None] = mapped_column(String(200), nullable=True)


Index("uq_publish_failure_repo", func.coalesce(PublishFailure.repo, ""), PublishFailure.branch,
      PublishFailure.package, PublishFailure.pin, unique=True)


def repo_key(path: str | Path) -> str:
    return str(Path(path).resolve())


@dataclass(frozen=True)
class GroupOutcome:
    """What the bump stage writes for one group (``PinOutcome`` plus where its branch went)."""

    repo: str  # path
    repo_name: str
    branch: str
    group: str
    kind: BumpKind
    reason_kind: ReasonKind = ReasonKind.NONE
    reason: str = ""
    old_pin: str | None = None
    target: str | None = None
    torch_old: str | None = None
    pytorch: str | None = None
    tracks: str = ""
    delivery: str = ""
    delivery_error: str = ""
    commit: str | None = None
    pr_number: int | None = None
    pr_url: str | None = None
    head_ref: str | None = None
    head_sha: str | None = None
    cuda: tuple[str, ...] = ()


_CARRIED = ("delivery", "commit", "pr_number", "pr_url", "head_ref", "head_sha", "pr_state", "closed_by", "pr_seen",
            "waits_for", "pair_pr")


def write_bump(st, outcomes: Iterable[GroupOutcome], groups_only: bool = False, at: datetime | None = None) -> int:
    """The bump stage's rows: each (repository, branch) it went through gets its groups' rows, in
    one transaction (``groups_only``: only the rows of the groups given are replaced, as a move of
    one pin group by hand does). A branch with nothing delivered this time keeps its last delivery
    (the pull request of a week before, merged or still open). ``at``: when the bump ran (UTC without
    a zone, as the DB keeps it; now by default)."""
    outcomes = list(outcomes)
    branches = {(repo_key(o.repo), o.branch) for o in outcomes}
    groups = {(repo_key(o.repo), o.branch, o.group) for o in outcomes}
    now = at or utcnow()
    with st.session() as s:
        before: dict[tuple[str, str], ReleaseRow] = {}
        for repo, branch in branches:
            rows = list(s.scalars(select(ReleaseRow).where(ReleaseRow.repo == repo, ReleaseRow.branch == branch)))
            if groups_only:
                rows = [r for r in rows if (repo, branch, r.grp) in groups]
            delivered = [r for r in rows if r.delivery]
            if delivered:
                before[(repo, branch)] = delivered[0]
            for r in rows:
                s.delete(r)
        s.flush()
        for o in outcomes:
            key = (repo_key(o.repo), o.branch)
            row = ReleaseRow(repo=key[0], repo_name=o.repo_name, branch=o.branch, grp=o.group, cuda=",".join(o.cuda),
                             bump_kind=str(o.kind),
                             reason_kind=str(o.reason_kind), reason=o.reason, old_pin=o.old_pin, target=o.target,
                             torch_old=o.torch_old, pytorch=o.pytorch, tracks=o.tracks, bumped=now,
                             delivery=o.delivery, delivery_error=o.delivery_error, commit=o.commit,
                             pr_number=o.pr_number, pr_url=o.pr_url, head_ref=o.head_ref, head_sha=o.head_sha,
                             pr_state=str(PrState.OPEN) if o.pr_number else "")
            old = before.get(key)
            if not o.delivery and old is not None:
                for name in _CARRIED:
                    setattr(row, name, getattr(old, name))
            s.add(row)
    return len(outcomes)


def rows(st, repo: str | Path | None = None) -> list[ReleaseRow]:
    with st.session() as s:
        q = select(ReleaseRow).order_by(ReleaseRow.id)
        if repo is not None:
            q = q.where(ReleaseRow.repo == repo_key(repo))
        return list(s.scalars(q))


def set_pr_state(st, repo: str | Path, branch: str, number: int, state: PrState, closed_by: str | None = None,
                 head_sha: str | None = None) -> None:
    """What a stage saw of a branch's pull request ``number``: its state (and head, when it moved)."""
    values: dict = {"pr_state": str(state), "pr_seen": utcnow()}
    if closed_by is not None:
        values["closed_by"] = closed_by
    if head_sha:
        values["head_sha"] = head_sha
    with st.session() as s:
        s.execute(update(ReleaseRow).where(ReleaseRow.repo == repo_key(repo), ReleaseRow.branch == branch,
                                           ReleaseRow.pr_number == number).values(**values))


def pair_of(st, repo: str | Path, first: str | Path, branch: str, number: int,
            pair_branches: Iterable[str] | None = None) -> ReleaseRow | None:
    """The build-pytorch bump PR that companion ``repo``'s bump PR ``number`` into ``branch`` pairs
    with: the first repository's (``first``) row of a branch of ``pair_branches`` (the first of
    them that has one; None: ``branch``) whose target is the companion's, delivered as a pull
    request. None when there is none (build-pytorch's branch did not move to that pin by a pull
    request: nothing to wait for)."""
    with st.session() as s:
        mine = list(s.scalars(select(ReleaseRow).where(ReleaseRow.repo == repo_key(repo), ReleaseRow.branch == branch,
                                                       ReleaseRow.pr_number == number)))
        targets = {r.target for r in mine if r.target}
        if not targets:
            return None
        for name in dict.fromkeys(pair_branches or [branch]):
            found = s.scalars(select(ReleaseRow).where(
                ReleaseRow.repo == repo_key(first), ReleaseRow.branch == name, ReleaseRow.target.in_(targets),
                ReleaseRow.pr_number.is_not(None)).order_by(ReleaseRow.id.desc())).first()
            if found is not None:
                return found
        return None


def set_pair_wait(st, repo: str | Path, branch: str, number: int, wait: PairWait, pair_pr: int | None) -> None:
    """Why companion ``repo``'s bump PR ``number`` waits for its pair (``PairWait.NONE``: it does not)."""
    with st.session() as s:
        s.execute(update(ReleaseRow).where(ReleaseRow.repo == repo_key(repo), ReleaseRow.branch == branch,
                                           ReleaseRow.pr_number == number)
                  .values(waits_for=str(wait) or None, pair_pr=pair_pr if wait else None))


def waiting_for(st, pair_pr: int) -> list[ReleaseRow]:
    """The companions' bump PRs held back for build-pytorch's PR ``pair_pr`` (into their own
    branches, whose names may differ from build-pytorch's)."""
    with st.session() as s:
        return list(s.scalars(select(ReleaseRow).where(ReleaseRow.pair_pr == pair_pr,
                                                       ReleaseRow.waits_for.is_not(None))))


def publish_failed(st, branch: str, package: str, pin: str | None, commit: str | None, message: str,
                   repo: str | None = None) -> None:
    with st.session() as s:
        row = s.scalars(select(PublishFailure).where(PublishFailure.branch == branch, PublishFailure.package == package,
                                                     PublishFailure.pin == (pin or ""),
                                                     same_repo(PublishFailure.repo, repo))).first()
        if row is None:
            s.add(PublishFailure(branch=branch, package=package, pin=pin or "", commit=commit, message=message,
                                 repo=repo))
        else:
            row.commit, row.message, row.when = commit, message, utcnow()


def publish_succeeded(st, branch: str, package: str, pin: str | None, repo: str | None = None) -> None:
    with st.session() as s:
        s.execute(delete(PublishFailure).where(PublishFailure.branch == branch, PublishFailure.package == package,
                                               PublishFailure.pin == (pin or ""), same_repo(PublishFailure.repo, repo)))


def publish_failures(st, branches: Iterable[str], repo: str | bool | None = False) -> list[PublishFailure]:
    """The failed publishes of ``branches`` (``repo``: only that repository's, None the first's;
    False: every repository's)."""
    with st.session() as s:
        q = select(PublishFailure).where(PublishFailure.branch.in_(list(branches)))
        if repo is not False:
            q = q.where(same_repo(PublishFailure.repo, repo))
        return list(s.scalars(q.order_by(PublishFailure.id)))
