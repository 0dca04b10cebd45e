"""The result objects of a bump of every branch (``bump-pins --all``, the schedule, ``/bump all``):
:class:`SweepBump` is the plan (``text``/``to_dict`` say what will happen; nothing written) and
``apply()`` returns a :class:`SweepResult`. Both carry one :class:`~release.pins.sweep.PinOutcome`
per pin group of each branch of each repository.

Exit status of a result: 0 when every group is bumped, moved keeping its promise, current or
skipped by design; 1 when some are newly held (the text says which and why). A group held for
the same reason as at the last recorded run (``known_holds``: the state DB's bump outcomes) is
"still held": said again, with its reason, but not a failure again every week.

May import: config, release.adapters, release.state (the release record), release.pins.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from config.outcomes import BumpKind
from release.pins.deliver import Delivered, deliver
from release.pins.recorded import write_rows as _write
from release.pins.sweep import KINDS, SweepPlan

WHY_LOCAL = {
    "setting": "TORCHBOT_BUMP_DELIVERY=local",
    "default": "no TORCHBOT_GITHUB_TOKEN/TORCHBOT_GITHUB_REPO, so the default is local",
}
log = logging.getLogger("torchbot.pins")


def counts(outcomes) -> str:
    c = Counter(o.kind for o in outcomes)
    return ", ".join(f"{c[k]} {k}" for k in KINDS if c[k]) or "no pin groups"


class SweepBump:
    """The plan of a bump of every branch of one or more repositories."""

    def __init__(self, plans: list[SweepPlan], settings, mode: str, dry_run: bool = False, why_local: str = "",
                 only: tuple[str, ...] = (), known_holds: frozenset = frozenset()):
        self.plans, self.settings, self.mode, self.dry_run = plans, settings, mode, dry_run
        self.why_local, self.only = why_local, tuple(only)
        self.known_holds = known_holds  # (repo path, branch, group, reason) held at the last recorded run

    def still_held(self, plan: SweepPlan, o) -> bool:
        from release.state.record import repo_key

        return (repo_key(plan.repo_path), o.branch, o.group, o.reason) in self.known_holds

    def new_holds(self) -> list:
        return [o for p in self.plans for o in p.outcomes if o.kind == "held" and not self.still_held(p, o)]

    @property
    def outcomes(self):
        return [o for p in self.plans for o in p.outcomes]

    # the shape chat's pending plans read (release.pins.commands.Plan's): branches with tips and pins
    def to_dict(self) -> dict[str, Any]:
        branches = []
        for p in self.plans:
            for w in p.work:
                for bp in w.plans:
                    branches.append({**bp.to_dict(), "repo": str(p.repo_path)})
        held = [o for o in self.outcomes if o.kind == "held"]
        return {
            "ok": not held, "sweep": True, "dry_run": self.dry_run, "delivery": self.mode,
            "repos": [str(p.repo_path) for p in self.plans], "new_rev": None, "source": "tracked heads",
            "heads": {k: v for p in self.plans for k, v in p.heads.items()},
            "headline": self.headline(), "branches": branches,
            "tips": {(b if p.first else f"{p.repo_path.name}:{b}"): t for p in self.plans for b, t in p.tips.items()},
            "outcomes": [o.to_dict() for o in self.outcomes], "held": len(held),
        }

    def headline(self) -> str:
        what = f"Bump of {', '.join(self.only)}" if self.only else "Bump of every branch"
        return f"{what}: {counts(self.outcomes)}."

    def _delivery_line(self) -> str:
        if self.mode == "pr":
            return "Delivery: a pull request per bumped branch (bump/<branch>-<rev>; an open one is updated)."
        if self.mode == "push":
            return f"Delivery: pushed to each branch on '{self.settings.repo_remote}'."
        why = f" ({self.why_local})" if self.why_local else ""
        return f"Delivery: local commits only{why}: nothing leaves this machine."

    def text(self) -> str:
        lines = [self.headline()]
        for p in self.plans:
            if len(self.plans) > 1:
                lines.append(f"{p.repo_path.name}:")
            lines.extend("  " + o.line() for o in p.outcomes)
        lines.append(self._delivery_line())
        return "\n".join(lines)

    def changes(self):
        """Every file the bump would write, with its text now and after (``config.diffs``): per
        branch, what its chained commits leave (a later group's README already carries the earlier
        groups' edits)."""
        from config.diffs import planned
        from release.adapters.git import read_paths

        out = []
        for p in self.plans:
            edits = []
            for w in p.work:
                files: dict[str, str] = {}
                for bp in w.plans:
                    files.update(bp.edit.changes)
                where = w.branch if p.first else f"{w.branch} ({p.repo_path.name})"
                edits.append((where, w.tip, files))
            out += planned(edits, lambda names, p=p: read_paths(p.repo_path, names))
        return out

    def diff(self) -> str:
        """The unified diff of what the bump would write (``bump-pins --all --diff``, chat's diff)."""
        from config.diffs import unified

        return unified(self.changes())

    def apply(self, progress=None, notice=None) -> SweepResult:
        delivered: list[Delivered] = []
        if not self.dry_run:
            counted = progress is not None and len(self.plans) > 1
            if counted:
                progress.begin(sum(len(p.work) for p in self.plans))
            for p in self.plans:
                delivered.extend(deliver(p, self.settings, self.mode, progress, counted=counted))
            if counted:
                progress.end()
            record(self.plans, delivered, self.settings)
        return SweepResult(self, delivered)


def group_outcomes(plans: list[SweepPlan], delivered: list[Delivered]) -> list:
    """Each pin group's row of the release record (``release.state.record``): its outcome and
    where its branch went."""
    from release.state.record import GroupOutcome

    by_branch = {(d.repo, d.branch): d for d in delivered}
    out = []
    for p in plans:
        for o in p.outcomes:
            d = by_branch.get((str(p.repo_path), o.branch))
            how = "" if d is None else "pr" if d.number or d.head else "push" if d.how == "pushed" else "local"
            out.append(GroupOutcome(
                repo=str(p.repo_path), repo_name=p.repo_path.name, branch=o.branch, group=o.group,
                kind=BumpKind(o.kind), reason_kind=o.reason_kind, reason=o.reason, old_pin=o.old_pin,
                target=o.target, torch_old=o.torch_old, pytorch=o.torch_new, tracks=o.tracks, delivery=how,
                cuda=tuple(getattr(o, "cuda", ())),
                delivery_error=o.delivery_error, commit=d.commit if d else None,
                pr_number=d.number if d else None, pr_url=d.url if d else None, head_ref=d.head if d else None,
                head_sha=d.commit if d and how == "pr" else None))
    return out


def record(plans: list[SweepPlan], delivered: list[Delivered], settings) -> None:
    """The bump stage keeps its outcomes in the release record (the one writer of bump outcomes).
    The bump is done whatever happens here: a state DB that cannot be written is logged."""
    _write(group_outcomes(plans, delivered), settings)


class SweepResult:
    def __init__(self, plan: SweepBump, delivered: list[Delivered]):
        self.plan = plan
        self.delivered = delivered
        self.ok = not plan.new_holds()  # a group still held for the same reason is no new failure
        self.exit_code = 0 if self.ok else 1

    @property
    def outcomes(self):
        return self.plan.outcomes

    def to_dict(self) -> dict[str, Any]:
        d = self.plan.to_dict()
        d.update({"ok": self.ok, "applied": not self.plan.dry_run, "exit_code": self.exit_code,
                  "delivered": [x.to_dict() for x in self.delivered],
                  "pull_requests": [x.to_dict() for x in self.delivered if x.head]})
        return d

    def text(self) -> str:
        lines = [self.plan.text()]
        for d in self.delivered:
            lines.extend(f"  {d.branch}: {sha[:7]} {message}" for sha, message in d.commits)
        if self.plan.dry_run:
            lines.append("Dry run: nothing was written.")
        held = self.plan.new_holds()
        old = [o for o in self.outcomes if o.kind == "held" and o not in held]
        several = len(self.plan.plans) > 1
        if held:
            names = dict.fromkeys(f"{o.repo} {o.branch}" if several else o.branch for o in held)
            lines.append(f"Held: {', '.join(names)} (see why above).")
        if old:
            names = dict.fromkeys(f"{o.repo} {o.branch}" if several else o.branch for o in old)
            lines.append(f"Still held for the same reason as at the last run (not a new failure): {', '.join(names)}.")
        return "\n".join(lines)
