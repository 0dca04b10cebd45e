"""What people decided about torchbot's bump pull requests, kept so every run and every view
respects it (issue 34): one typed row per (repository, branch, kind, pull request).

Kinds:

- ``closed-unmerged``: a maintainer closed bump PR ``number`` (head ``head``: the target) without
  merging; the same target is not proposed again (a newer one is). ``by``/``at``: who and when.
- ``edited``: the PR's branch holds commits torchbot did not make (``by``: their authors);
  torchbot stops updating that PR. ``said``: the PR was told once.
- ``paused``: a maintainer paused the branch's bumps (a label, ``release bump-pause`` or the
  dashboard); no new PR until resumed. ``number`` 0.
- ``recreate``: a maintainer asked for a closed one's target again (the dashboard's box);
  it lifts ``closed-unmerged`` for that head.
- ``merge-refused``: GitHub refused the automerge of PR ``number`` at ``head`` (a conflict, a
  missing review); ``note`` says GitHub's words. ``said``: told on the PR once.

Written by the stage that knows (release.pins.deliver, release.builds.pr_status, the pause
command), read by the dashboard. May import config and release.state.tables only.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Integer, String, Text, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from release.state.tables import Base, utcnow

KINDS = ("closed-unmerged", "edited", "paused", "recreate", "merge-refused")


class PrDecision(Base):
    __tablename__ = "pr_decisions"
    __table_args__ = (UniqueConstraint("repo", "branch", "kind", "number", "head", name="uq_pr_decision"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(500), index=True)  # the repository's folder name
    branch: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))
    number: Mapped[int] = mapped_column(Integer, default=0)
    head: Mapped[str] = mapped_column(String(300), default="")
    by: Mapped[str] = mapped_column(String(300), default="")
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    note: Mapped[str] = mapped_column(Text, default="")
    said: Mapped[bool] = mapped_column(Boolean, default=False)


def record(state, repo: str, branch: str, kind: str, *, number: int = 0, head: str = "", by: str = "",
           at: datetime | None = None, note: str = "") -> PrDecision:
    """Insert the decision, or return the one already there (unchanged: the first word stands)."""
    assert kind in KINDS, kind
    with state.session() as s:
        row = s.scalars(select(PrDecision).where(
            PrDecision.repo == repo, PrDecision.branch == branch, PrDecision.kind == kind,
            PrDecision.number == number, PrDecision.head == head)).first()
        if row is None:
            row = PrDecision(repo=repo, branch=branch, kind=kind, number=number, head=head, by=by,
                             at=at or utcnow(), note=note)
            s.add(row)
            s.flush()
        s.expunge(row)
        return row


def mark_said(state, row_id: int) -> bool:
    """Mark decision ``row_id`` as told on its PR; True for the first caller only."""
    from sqlalchemy import update

    with state.session() as s:
        return s.execute(update(PrDecision).where(PrDecision.id == row_id, PrDecision.said.is_(False))
                         .values(said=True)).rowcount == 1


def decisions(state, repo: str | None = None, branch: str | None = None, kind: str | None = None
              ) -> list[PrDecision]:
    with state.session() as s:
        q = select(PrDecision).order_by(PrDecision.id)
        if repo:
            q = q.where(PrDecision.repo == repo)
        if branch:
            q = q.where(PrDecision.branch == branch)
        if kind:
            q = q.where(PrDecision.kind == kind)
        rows = list(s.scalars(q))
        for r in rows:
            s.expunge(r)
        return rows


def forget(state, repo: str, branch: str, kind: str, head: str | None = None) -> int:
    """Remove ``kind`` decisions of a branch (``head``: that one only); how many."""
    with state.session() as s:
        q = delete(PrDecision).where(PrDecision.repo == repo, PrDecision.branch == branch, PrDecision.kind == kind)
        if head is not None:
            q = q.where(PrDecision.head == head)
        return s.execute(q).rowcount


def paused(state, repo: str, branch: str) -> PrDecision | None:
    rows = decisions(state, repo, branch, "paused")
    return rows[0] if rows else None
