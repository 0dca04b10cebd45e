"""What a restart finds: local build runs whose torchbot is gone, resolved.

``reconcile`` runs when torchbot starts (``serve``) and before every local build plan and
status. For each run still marked running whose owner process is gone (on this host; another
host's runs are left to that host):

1. what is left of its processes is stopped (the builds die with torchbot, see
   ``release.adapters.flox``; this catches the rest): SIGTERM, then SIGKILL;
2. its spool file (results kept while the state DB did not answer) is written into the DB,
   so a build that succeeded is recorded ``succeeded``;
3. its builds that had not ended become ``interrupted``, its variant locks are released;
4. its git worktree is removed and the repository's worktree list pruned;
5. the run records what happened (``outcome``) for the front end that reported it:
   ``pending_notices`` lists those not yet told, ``mark_notified`` records that they were.

``pending_notices`` lists GitHub runs too (``release.builds.github``): a run that ended (or was
given up) after the process following it for its front end was gone, with what became of it.
The runs of one notice (one ``/build`` dispatched as several runs) are told together, once
they have all ended.

May import: config, release.state, release.adapters, release.builds.journal, release.builds.local,
release.builds.github.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, select

from release.adapters.flox import stop_run_processes
from release.adapters.worktrees import remove_worktree
from release.builds.journal import UNAVAILABLE, replay
from release.builds.local import ACTIVE_RUNS
from release.state import ACTIVE, Build, BuildLock, BuildRun, GithubRun, owner_alive, owner_id, state_for, utcnow

log = logging.getLogger("torchbot.builds")


@dataclass
class Resolved:
    """One dead run, resolved."""

    run_key: str
    branch: str
    notice: dict | None
    states: dict[str, str] = field(default_factory=dict)  # package -> state after resolving
    interrupted: list[str] = field(default_factory=list)
    recovered: int = 0  # spooled changes written
    stopped: int = 0  # processes found still running and stopped

    def text(self) -> str:
        return outcome_text(self.branch, self.states, self.interrupted, self.recovered)


def outcome_text(branch: str, states: dict[str, str], interrupted: list[str], recovered: int) -> str:
    counts: dict[str, int] = {}
    for s in states.values():
        counts[s] = counts.get(s, 0) + 1
    ended = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "interrupted")
    if interrupted:
        names = ", ".join(interrupted[:5]) + (f" and {len(interrupted) - 5} more" if len(interrupted) > 5 else "")
        lines = [f"interrupted: torchbot stopped during this build of {branch}; {len(interrupted)} build(s) did not "
                 f"end and were stopped ({names})" + (f"; before that {ended}" if ended else "") + "."]
        lines.append(f"Resume with `/build {branch} --resume` "
                     f"(or `torchbot release build --branch {branch} --resume`).")
    else:
        lines = [f"ended while torchbot was stopped: {ended or 'nothing built'}."]
    if recovered:
        lines.append(f"{recovered} result(s) kept while the state DB did not answer were recorded.")
    return " ".join(lines)


def _dead(run: BuildRun) -> bool:
    if run.owner == owner_id():
        return run.run_key not in ACTIVE_RUNS
    return owner_alive(run.owner, run.owner_start) is False


def reconcile(ctx) -> list[Resolved]:
    """Resolve every dead local build run (see the module docstring); the runs resolved."""
    st = state_for(ctx)
    try:
        with st.session() as ses:
            runs = [r for r in ses.scalars(select(BuildRun).where(BuildRun.state == "running")) if _dead(r)]
        resolved = [_resolve(st, run) for run in runs]
        st.mark_interrupted()  # builds recorded without a run (older torchbot versions)
    except UNAVAILABLE as err:
        log.warning("cannot look for interrupted builds: the state DB does not answer (%s)", err)
        return []
    return resolved


def _resolve(st, run: BuildRun) -> Resolved:
    with st.session() as ses:
        pgids = [lk.pgid for lk in ses.scalars(select(BuildLock).where(BuildLock.run_key == run.run_key))]
    stopped = stop_run_processes(run.run_key, pgids)
    recovered = replay(st, Path(run.spool)) if run.spool else 0
    now = utcnow()
    with st.session() as ses:
        builds = list(ses.scalars(select(Build).where(Build.run_key == run.run_key).order_by(Build.id)))
        for b in builds:
            if b.state in ACTIVE:
                b.state, b.finished = "interrupted", now
                b.message = (f"torchbot stopped while this build was {'running' if b.started else 'queued'}; "
                             "what was left of it was stopped; resume with --resume")
        interrupted = [b.package for b in builds if b.state == "interrupted"]
        ses.execute(delete(BuildLock).where(BuildLock.run_key == run.run_key))
        states = {b.package: b.state for b in builds}
        row = ses.get(BuildRun, run.run_key)
        row.state = "interrupted" if interrupted else "finished"
        row.finished = row.finished or now
        row.outcome = outcome_text(run.branch, states, interrupted, recovered)
    if run.worktree:
        remove_worktree(Path(run.repo) if run.repo else None, Path(run.worktree))
    done = Resolved(run.run_key, run.branch, json.loads(run.notice) if run.notice else None, states, interrupted,
                    recovered, stopped)
    log.warning("build run %s of %s (torchbot %s): %s", run.run_key[:8], run.branch, run.owner, done.text())
    return done


def pending_notices(ctx) -> list[tuple[str, dict, str]]:
    """(run key, notice, what happened) of resolved runs whose front end has not told its users."""
    with state_for(ctx).session() as ses:
        rows = ses.scalars(select(BuildRun).where(BuildRun.outcome.is_not(None), BuildRun.notice.is_not(None),
                                                  BuildRun.notified.is_(None)).order_by(BuildRun.created))
        local = [(r.run_key, json.loads(r.notice), r.outcome) for r in rows]
        return local + _github_notices(ses)


GITHUB_KEY = "github:"  # a notice key naming GitHub runs: "github:<request id>,<request id>..."


def _github_notices(ses) -> list[tuple[str, dict, str]]:
    """The GitHub runs of each notice not yet told, once every one of them is closed and no
    live process follows them for their front end."""
    groups: dict[str, list[GithubRun]] = {}
    for r in ses.scalars(select(GithubRun).where(GithubRun.notice.is_not(None), GithubRun.notified.is_(None))
                         .order_by(GithubRun.id)):
        groups.setdefault(r.notice, []).append(r)
    if not groups:
        return []  # without GitHub's client and httpx: `release status` of local builds starts faster
    from release.builds.github import following
    from release.builds.github_poll import CLOSED

    out = []
    for notice, rows in groups.items():
        if any(r.status not in CLOSED or _followed_live(r, following) for r in rows):
            continue
        out.append((GITHUB_KEY + ",".join(r.request_id for r in rows), json.loads(notice),
                    " ".join(r.outcome or "" for r in rows).strip()))
    return out


def _followed_live(run: GithubRun, following) -> bool:
    """Whether the process that follows the run for its front end is still at it."""
    if run.follower == owner_id():
        return following(run.request_id)
    return owner_alive(run.follower) is not False


def mark_notified(ctx, run_key: str) -> None:
    with state_for(ctx).session() as ses:
        if run_key.startswith(GITHUB_KEY):
            keys = run_key[len(GITHUB_KEY):].split(",")
            ses.query(GithubRun).filter(GithubRun.request_id.in_(keys)).update({"notified": utcnow()})
            return
        row = ses.get(BuildRun, run_key)
        if row is not None:
            row.notified = utcnow()
