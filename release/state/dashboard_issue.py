"""The dashboard issue's record in the state DB: which issue is each repository's dashboard (the
number torchbot created, never a cache file) and which of its actions were acted on (a typed row
per action key, claimed once: the primary key makes two processes, or two runs, agree that only
the first acts). Nothing here is read back from a log line: an audit line anybody can make
cannot stand for "acted on".

May import config and release.state.tables.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from release.state.tables import Base, utcnow


class DashboardIssue(Base):
    """``repository`` (``owner/name`` on GitHub) -> the number of the issue torchbot created as
    its dashboard, and the login that created it."""

    __tablename__ = "dashboard_issues"

    repository: Mapped[str] = mapped_column(String(200), primary_key=True)
    number: Mapped[int] = mapped_column(Integer)
    creator: Mapped[str] = mapped_column(String(200))
    since: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class DashboardAction(Base):
    """An action of the dashboard issue, claimed by the process that acts on it (once, ever):
    ``key`` names the action and its target (``retry-builds:main:<head>``,
    ``approve-bump:main:<group>:<rev>``); ``ticked_by`` is who ticked it (or "" when that could not
    be established and a confirmation was asked for instead); ``outcome`` what came of it."""

    __tablename__ = "dashboard_actions"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    issue: Mapped[int] = mapped_column(Integer)
    ticked_by: Mapped[str] = mapped_column(String(200), default="")
    state: Mapped[str] = mapped_column(String(20), default="acting")  # acting | done | refused | asked
    outcome: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


def issue_number(st, repository: str) -> tuple[int, str] | None:
    """(number, creator) of ``repository``'s dashboard issue, None when none was recorded."""
    with st.session() as s:
        row = s.get(DashboardIssue, repository)
        return (row.number, row.creator) if row is not None else None


def keep_issue(st, repository: str, number: int, creator: str) -> None:
    with st.session() as s:
        row = s.get(DashboardIssue, repository)
        if row is None:
            s.add(DashboardIssue(repository=repository, number=number, creator=creator))
        else:
            row.number, row.creator = number, creator


def claim_action(st, key: str, repository: str, issue: int, ticked_by: str, state: str = "acting") -> bool:
    """True for the one claim of ``key`` there will ever be; False when it was claimed before."""
    try:
        with st.session() as s:
            s.add(DashboardAction(key=key, repository=repository, issue=issue, ticked_by=ticked_by, state=state))
            s.flush()
        return True
    except IntegrityError:
        return False


def finish_action(st, key: str, state: str, outcome: str) -> None:
    with st.session() as s:
        row = s.get(DashboardAction, key)
        if row is not None:
            row.state, row.outcome = state, outcome[:2000]


def acted_keys(st, repository: str | None = None) -> set[str]:
    """The keys claimed so far (of one repository, or all)."""
    with st.session() as s:
        q = select(DashboardAction.key)
        if repository is not None:
            q = q.where(DashboardAction.repository == repository)
        return set(s.scalars(q))
