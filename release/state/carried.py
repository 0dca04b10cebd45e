"""Variants counted as built at a bump pull request's new head without being built again: the
changed-only rule (``release.builds.changes``) found them unchanged since their success at an
earlier head of the same pull request (a rebase, a maintainer's comment-only commit). One typed
row per (branch, commit, package), written by the build plan that decided, read by the PR status
(``release.builds.pr_status``), which counts them as built and says so.

May import config and release.state.tables only.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, mapped_column

from release.state.tables import Base, Build, GithubRun, utcnow


class CarriedBuild(Base):
    __tablename__ = "carried_builds"
    __table_args__ = (UniqueConstraint("branch", "commit", "package", name="uq_carried_build"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch: Mapped[str] = mapped_column(String(200), index=True)
    ref: Mapped[str] = mapped_column(String(300))  # the pull request's head branch
    commit: Mapped[str] = mapped_column(String(64), index=True)  # the new head: counted as built here
    package: Mapped[str] = mapped_column(String(300))
    from_commit: Mapped[str] = mapped_column(String(64))  # the earlier head whose success it carries
    rule: Mapped[str] = mapped_column(Text, default="")  # the changed-only rule that decided
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


def earlier_successes(state, branch: str, ref: str, commit: str, repo: str | None = None) -> dict[str, str]:
    """package -> the commit of its last success at an earlier head of ``ref`` (a PR's head
    branch, GitHub runs from it), other than ``commit``; ``repo``: a companion's GitHub
    repository (None: TORCHBOT_GITHUB_REPO's builds, which hold no repository)."""
    where = Build.repo.is_(None) if repo is None else Build.repo == repo
    with state.session() as s:
        rows = s.execute(select(Build.package, Build.commit).join(GithubRun, GithubRun.request_id == Build.run_key)
                         .where(Build.branch == branch, Build.state == "succeeded", Build.backend == "github",
                                GithubRun.ref == ref, Build.commit.is_not(None), Build.commit != commit, where)
                         .order_by(Build.id)).all()
    return dict(rows)


def record(state, branch: str, ref: str, commit: str, carried: dict[str, str], rule: str = "") -> None:
    """Keep ``carried`` (package -> earlier head) as counted built at ``commit`` (idempotent)."""
    if not carried:
        return
    with state.session() as s:
        have = set(s.scalars(select(CarriedBuild.package).where(CarriedBuild.branch == branch,
                                                                CarriedBuild.commit == commit)))
        s.add_all(CarriedBuild(branch=branch, ref=ref, commit=commit, package=p, from_commit=c, rule=rule or "")
                  for p, c in sorted(carried.items()) if p not in have)


def at(state, branch: str, commit: str) -> dict[str, str]:
    """package -> the earlier head it was carried from, for the variants counted as built at ``commit``."""
    with state.session() as s:
        return {r.package: r.from_commit for r in s.scalars(
            select(CarriedBuild).where(CarriedBuild.branch == branch, CarriedBuild.commit == commit))}
