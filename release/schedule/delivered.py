"""What the schedule builds after a bump: the bump as it was delivered, never the old code.

- delivered as a pull request: a GitHub build of the PR's head branch (``bump/<branch>-<rev>``),
  whose results the PR shows as the ``torchbot/builds`` status; never published until merged;
- pushed to the branch: a GitHub build of the branch's remote head, published by the workflow;
- left on this machine (committed locally): a local build when the schedule builds locally;
  with GitHub, nothing (GitHub would build the old pin) and the line says why;
- nothing bumped (already current): a ``--changed-only`` build of the branch, as before.

``targets`` reads a bump result (pure); ``build_after_bump`` runs the builds and returns one
line per target for the job's result.

May import: config, release.builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.errors import TorchbotError


@dataclass(frozen=True)
class Target:
    branch: str
    head: str | None  # the PR's head branch; None: the branch itself
    how: str  # "pull request" | "pushed" | "local" | "current"
    number: int | None = None  # the PR's number


def targets(result: dict, branches: list[str]) -> list[Target]:
    """The builds a bump result asks for, one per bumped branch of ``branches`` (the branches
    the job is about); a branch the bump left as it was is ``current`` (pure)."""
    prs = {p["branch"]: p for p in result.get("pull_requests") or [] if p.get("branch") and p.get("head")}
    pushed = set(result.get("pushed") or [])
    commits = dict(result.get("commits") or {})
    for d in result.get("delivered") or []:  # a bump of every branch: where each one went
        if d.get("how") == "pushed":
            pushed.add(d["branch"])
        commits.setdefault(d["branch"], d.get("commit"))
    out = []
    for name in branches:
        if name in prs:
            out.append(Target(name, prs[name].get("head"), "pull request", prs[name].get("number")))
        elif name in pushed:
            out.append(Target(name, None, "pushed"))
        elif name in commits:
            out.append(Target(name, None, "local"))
        else:
            out.append(Target(name, None, "current"))
    return out


def build_after_bump(ctx, result: dict, branches: list[str], backend: str) -> list[str]:
    """Run the build each target asks for with ``backend`` (github | local); one line each."""
    from release.builds.commands import plan_build

    lines = []
    for t in targets(result, branches):
        if t.how == "pull request" and backend == "local":
            lines.append(f"{t.branch}: build: none (the bump is on {t.head}, a pull request; local builds "
                         "build local branches)")
            continue
        if t.how == "local" and backend == "github":
            lines.append(f"{t.branch}: build: none (the bump is only on this machine; GitHub would build "
                         "the old pin: deliver it as a pull request or push it)")
            continue
        where = f" of {t.head}" if t.head else ""
        try:
            built = plan_build(ctx, t.branch, None, backend=backend, changed_only=True,
                               head=t.head).apply()
        except TorchbotError as err:
            lines.append(f"{t.branch}: build{where}: not started ({err.message})")
            continue
        lines.append(f"{t.branch}: build{where}: {_counts(built.rows)}")
    return lines


def _counts(rows: list[dict]) -> str:
    skipped = sum(1 for r in rows if r.get("state") == "skipped")
    failed = sum(1 for r in rows if r.get("state") in ("failed", "interrupted"))
    ok = sum(1 for r in rows if r.get("state") == "succeeded")
    text = f"{len(rows) - skipped} variant(s), {ok} succeeded"
    if failed:
        text += f", {failed} failed"
    if skipped:
        text += f", {skipped} skipped (other platforms)"
    return text
