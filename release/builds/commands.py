"""Command layer for builds, shared by the CLI and Slack: ``plan_build(ctx, branch, glob) ->
Plan``; a Plan has ``to_dict()``, ``text()`` and ``apply(progress=None, notice=None) -> Result``
(``to_dict()``/``text()``); progress is the plain event stream of ``config.progress`` that the
CLI and Slack render alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from config.policy import FAILED, bucket


@dataclass
class BuildsResult:
    action: str
    rows: list[dict]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(bucket(r.get("state")) != FAILED for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        key = "builds" if self.action == "build" else "publishes"
        return {"ok": self.ok, "action": self.action, key: self.rows, **self.extra}

    def text(self) -> str:
        if not self.rows:
            return self.extra.get("message") or f"Nothing to {self.action}."
        lines = []
        for r in self.rows:
            tail = f"  {r['message']}" if r.get("message") else ""
            lines.append(f"{r['state']:<11} {r['package']}{tail}")
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        lines.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        return "\n".join(lines)


@dataclass
class Plan:
    action: str
    summary: dict[str, Any]
    summary_text: str
    _apply: Callable[..., BuildsResult]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, **self.summary}

    def text(self) -> str:
        return self.summary_text

    def apply(self, progress=None, notice: dict | None = None) -> BuildsResult:
        """Run it; ``progress`` (a :class:`config.progress.Progress`) hears of each item as it
        starts and ends, ``notice`` is where the caller reports it (kept for a restart)."""
        return self._apply(progress, notice)


def plan_build(ctx, branch: str, glob: str | list[str] | None = None, *, repo=None, backend: str | None = None,
               jobs: int | None = None, changed_only: bool = False, resume: bool = False,
               head: str | None = None) -> Plan:
    from release.builds import run as builds

    globs = [glob] if isinstance(glob, str) else list(glob or [])
    bp = builds.prepare(ctx, branch, globs, repo=repo, changed_only=changed_only, resume=resume,
                        backend=backend or "local", head=head)

    def apply(progress=None, notice=None) -> BuildsResult:
        if bp.carried:  # unchanged since an earlier head of the same PR: counted as built at this one
            from release.state import carried, state_for

            carried.record(state_for(ctx), bp.branch, bp.ref, bp.commit, bp.carried, bp.rule or "")
        if not bp.items and not bp.skipped:
            extra = {"message": "Nothing to build: every selected variant is unchanged."}
            if bp.carried:
                extra["status"] = _carried_status(ctx, bp)
            return BuildsResult("build", [], extra)
        rows = builds.build(ctx, bp, jobs, progress=progress, notice=notice)
        return BuildsResult("build", rows, {"status": _carried_status(ctx, bp)} if bp.carried and not bp.items else {})

    return Plan("build", bp.to_dict(), bp.text(), apply)


def _carried_status(ctx, bp) -> list[dict]:
    """Nothing dispatched at a bump PR's head, every variant carried from an earlier head: its
    status posted (and automerge tried) now, as a dispatching run would have."""
    from release.adapters.github import Actions
    from release.builds import pr_status

    gh = Actions(ctx.settings, repo=bp.github)
    try:
        return pr_status.report_head(ctx, gh, bp.branch, bp.ref, bp.commit, bp.github)
    finally:
        gh.close()
