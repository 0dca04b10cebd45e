"""A bump of named branches (a revision, a PyTorch move, companions, the dashboard's Approve)
delivered the one way every bump is (``release.pins.deliver.deliver`` in the plan's mode), with
named branches moving together: all of them, or none.

May import: config, release.adapters, release.state, release.pins.
"""

from __future__ import annotations

import logging
from pathlib import Path

from config.progress import Progress
from release.adapters import git as gitops
from release.pins.deliver import deliver
from release.pins.sweep import BranchWork, SweepPlan

log = logging.getLogger("torchbot.pins.deliver")


def apply_named(plan, settings, progress: Progress | None = None):
    """Deliver a bump of named branches (``release.pins.bump.BumpPlanData``: a revision, a PyTorch
    move, companions, the dashboard's Approve) the one way every bump is delivered: as a
    :class:`SweepPlan` through :func:`deliver` in the plan's mode (``pr`` with ``--open-pr``,
    ``push`` with ``--push``, else ``local``). Named branches move together: every branch (and
    every README row about a moved PyTorch) is checked, committed, pushed and moved as one, or
    none is. The bump stage then writes one typed row per bumped group (release.pins.recorded)."""
    from release.pins.bump import BumpOutcome
    from release.pins.recorded import record_move

    opts = plan.options
    if opts.dry_run or not plan.to_commit:
        return BumpOutcome()
    if opts.open_pr:
        outcome = _as_pull_requests(plan, settings, progress)
    else:
        outcome = _together_outcome(plan, settings, "push" if opts.push else "local", progress)
    record_move(plan, outcome, settings)  # the bump stage keeps what it did in the release record
    return outcome


def _named_sweep(plan, settings, only_remote=()) -> SweepPlan:
    """The named bump as the sweep's plan: one BranchWork per branch, one outcome per group."""
    from release.pins.sweep import PinOutcome

    sweep = SweepPlan(Path(plan.repo_path))
    for bp in plan.to_commit:
        sweep.outcomes.append(PinOutcome(Path(plan.repo_path).name, bp.branch, ", ".join(bp.edit.group.labels),
                                         "bumped", bp.edit.group.pin, plan.new_rev, torch_old=bp.torch_old,
                                         torch_new=bp.torch_new))
        sweep.work.append(BranchWork(bp.branch, bp.tip, bp.branch in only_remote, "=" + plan.source, [bp],
                                     [len(sweep.outcomes) - 1]))
        sweep.tips[bp.branch] = bp.tip
    return sweep


def _together_outcome(plan, settings, mode: str, progress: Progress | None):
    from release.pins.bump import BumpOutcome

    sweep = _named_sweep(plan, settings)
    sweep.together, sweep.docs = True, list(plan.docs)
    delivered = deliver(sweep, settings, mode, progress)
    outcome = BumpOutcome(commits={d.branch: d.commit for d in delivered})
    if mode == "push":
        outcome.pushed = [d.branch for d in delivered]
    for d in delivered:
        outcome.notes.extend(d.notes)
    return outcome


def _as_pull_requests(plan, settings, progress: Progress | None = None):
    """A bump of named branches (a deliberate move, a revision, a dashboard Approve) delivered as
    the weekly bump delivers (release.pins.deliver, mode ``pr``): an open bump PR of the branch is
    updated rather than a second opened, and a person's decisions stand."""
    from config.errors import ExternalError
    from release.adapters.gitrefs import remote_only
    from release.pins.bump import BumpOutcome

    repo = gitops.open_repo(plan.repo_path)
    only_remote = remote_only(repo, [bp.branch for bp in plan.to_commit], settings.repo_remote)
    sweep = _named_sweep(plan, settings, only_remote)
    delivered = deliver(sweep, settings, "pr", progress)
    left = [o for o in sweep.outcomes if o.kind != "bumped"]
    if left and not delivered:
        raise ExternalError("; ".join(f"{o.branch}: {o.reason}" for o in left))
    outcome = BumpOutcome(commits={d.branch: d.commit for d in delivered},
                          pushed=[d.head for d in delivered if d.head],
                          pull_requests=[{"branch": d.branch, "head": d.head, "number": d.number, "url": d.url}
                                         for d in delivered])
    outcome.notes.append("Local branches were left as they were; the commits are on the pushed bump/ branches.")
    outcome.notes.extend(f"{o.branch}: {o.reason}" for o in left)
    if plan.docs:
        outcome.notes.append(f"README rows of {', '.join(d.branch for d in plan.docs)} still say the old PyTorch: "
                             "run `release docs --write` after merging.")
    return outcome
