"""What the schedule builds after the weekly bump: each bump as it was delivered, never the old
code (``release.pins.deliver.Delivered``, one per bumped branch).

- delivered as a pull request: a GitHub build of the PR's head branch (``bump/<branch>-<rev>``),
  whose results the PR shows as the ``torchbot/builds`` status; never published until merged;
- pushed to the branch: a GitHub build of the branch's remote head, published by the workflow;
- left on this machine (committed locally): a local build when the schedule builds locally;
  with GitHub, nothing (GitHub would build the old pin) and the line says why.

GitHub builds of build-pytorch run in ``TORCHBOT_GITHUB_REPO``'s workflow; a companion
build-torchvision's bumps run in its own repository's workflow (the GitHub repository its remote
names, ``release.builds.run.companion_github``), recorded under that repository, so its pull
requests are built at their heads and show their builds like build-pytorch's.

``targets`` sorts the deliveries (pure); ``build_after_bump`` runs the builds and returns one
line per delivery for the job's result.

A bump PR whose automerge GitHub refused because the branch moved under it (a conflict; the PR
holds only torchbot's commit) is planned again on the moved branch, its PR updated, built and
merged in the same run.

May import: config, release.state, release.pins, release.builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.errors import TorchbotError
from config.policy import FAILED, bucket


@dataclass(frozen=True)
class Target:
    branch: str
    head: str | None  # the PR's head branch; None: the branch itself
    how: str  # "pull request" | "pushed" | "local"
    repo: str = ""  # the repository's path ('' : the configured one)


def targets(delivered) -> list[Target]:
    """One build target per delivery (``Delivered`` objects or their ``to_dict()``) (pure)."""
    out = []
    for item in delivered:
        d = item if isinstance(item, dict) else item.to_dict()
        if d.get("head"):
            how = "pull request"
        elif d.get("how") == "pushed":
            how = "pushed"
        else:
            how = "local"
        out.append(Target(d["branch"], d.get("head"), how, d.get("repo") or ""))
    return out


def build_after_bump(ctx, delivered, backend: str) -> list[str]:
    """Run the build each delivery asks for with ``backend`` (github | local); one line each."""
    from release.builds.commands import plan_build

    lines = []
    for t in targets(delivered):
        if t.how == "pull request" and backend == "local":
            lines.append(f"{t.branch}: none (the bump is on {t.head}, a pull request; local builds "
                         "build local branches)")
            continue
        if t.how == "local" and backend == "github":
            lines.append(f"{t.branch}: none (the bump is only on this machine; GitHub would build "
                         "the old pin: deliver it as a pull request or push it)")
            continue
        where = f" at {t.head}" if t.head else ""
        try:
            built = plan_build(ctx, t.branch, None, repo=t.repo or None, backend=backend, changed_only=True,
                               head=t.head).apply()
        except TorchbotError as err:
            lines.append(f"{t.branch}{where}: not started ({err.message})")
            continue
        line = f"{t.branch}{where}: {_counts(built.rows)}"
        again = _rebased(ctx, t, built.rows) if t.how == "pull request" and backend == "github" else None
        if again is not None:  # its own bump over a moved base: rebased, built and merged in this run
            line += f"; merge refused (the branch moved): rebased onto it and built again: {again}"
        lines.append(line)
    return lines


def _rebased(ctx, t: Target, rows: list[dict]) -> str | None:
    """When automerge was refused for a conflict this run (the branch moved under the PR) and the
    PR holds only torchbot's bump, plan the branch's bump again on the moved branch (the same
    target: a rebase), deliver it (the PR is updated) and build it once more (automerge tries
    again). The second build's counts, or None when nothing was retried."""
    from release.builds.commands import plan_build
    from release.pins.commands import plan_bump
    from release.state import decisions, state_for

    heads = {r.get("commit") for r in rows if r.get("commit")}
    if not ctx.settings.bump_automerge or not heads:
        return None
    refused = [d for d in decisions.decisions(state_for(ctx), branch=t.branch, kind="merge-refused")
               if d.head in heads]
    if not refused or not _conflicts(ctx, t, refused[-1].head):
        return None
    try:
        result = plan_bump(ctx, [t.branch], None, delivery="pr", repo=t.repo or None,
                           force=ctx.settings.bump_vllm_branches).apply()
        moved = [d for d in result.delivered if d.branch == t.branch and d.head]
        if not moved or moved[0].how == "pull request already up to date":
            return None
        # every variant again: a build the change-detection calls unchanged would leave nothing to report,
        # and automerge acts on what was built at the new head
        built = plan_build(ctx, t.branch, None, repo=t.repo or None, backend="github", changed_only=False,
                           head=moved[0].head).apply()
    except TorchbotError as err:
        return f"not retried ({err.message})"
    return _counts(built.rows)


def _conflicts(ctx, t: Target, head: str) -> bool:
    """Whether ``head`` no longer merges into the remote's branch (fetched now): a conflict, not a
    missing review."""
    import subprocess

    repo = str(t.repo or ctx.settings.repo_path or "")
    remote = ctx.settings.repo_remote
    subprocess.run(["git", "-C", repo, "fetch", "--quiet", remote], check=False, capture_output=True, timeout=600)
    merged = subprocess.run(["git", "-C", repo, "merge-tree", "--write-tree", f"{remote}/{t.branch}", head],
                            check=False, capture_output=True, text=True)
    return merged.returncode == 1


def _counts(rows: list[dict]) -> str:
    skipped = sum(1 for r in rows if r.get("state") == "skipped")
    failed = sum(1 for r in rows if bucket(r.get("state")) == FAILED)
    ok = sum(1 for r in rows if r.get("state") == "succeeded")
    text = f"{len(rows) - skipped} variant(s), {ok} succeeded"
    if failed:
        text += f", {failed} failed"
    if skipped:
        text += f", {skipped} skipped (other platforms)"
    return text
