"""Command layer for builds, shared by the CLI and Slack: ``plan_build(ctx, branch, glob) ->
Plan``; a Plan
has ``to_dict()``, ``text()`` and ``apply() -> Result`` (``to_dict()``/``text()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class BuildsResult:
    action: str
    rows: list[dict]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.get("state") not in ("failed", "interrupted") for r in self.rows)

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
    _apply: Callable[[], BuildsResult]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, **self.summary}

    def text(self) -> str:
        return self.summary_text

    def apply(self) -> BuildsResult:
        return self._apply()


def plan_build(ctx, branch: str, glob: str | list[str] | None = None, *, repo=None, backend: str | None = None,
               jobs: int | None = None, changed_only: bool = False, resume: bool = False) -> Plan:
    from release.builds import run as builds

    globs = [glob] if isinstance(glob, str) else list(glob or [])
    bp = builds.prepare(ctx, branch, globs, repo=repo, changed_only=changed_only, resume=resume,
                        backend=backend or "local")

    def apply() -> BuildsResult:
        if not bp.items:
            return BuildsResult("build", [], {"message": "Nothing to build: every selected variant is unchanged."})
        return BuildsResult("build", builds.build(ctx, bp, jobs))

    return Plan("build", bp.to_dict(), bp.text(), apply)
