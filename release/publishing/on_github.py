"""Publishing what GitHub built, on GitHub: the torchbot host never runs ``flox publish``.

A variant built at a bump pull request's head is published after the merge by the build
workflow itself, dispatched at the branch (its merge commit: the tree that was built and passed,
``release.publishing.eligible``) with ``publish: true``: one matrix job per variant on a runner of
its platform (TORCHBOT_GITHUB_RUNNERS), where ``flox publish`` runs. With a build cache
(``TORCHBOT_BUILD_CACHE``) the dispatch says ``substitute: true``: the job builds nothing, and
``flox publish``'s build of the same derivations substitutes the outputs the pull request's jobs
pushed. Without one, the job builds again on its runner, and the plan says so.

Bad input changes nothing: a cache that does not answer stops the publish before anything is
dispatched (one line); a variant whose platform has no runner is left unpublished, named with
the setting to set; a job that fails (the catalog refused the upload) publishes nothing and its
variant is published by the next run. The builds the publish run tracks are removed once it
ends, so the variant's build history stays the build at the pull request's head (its duration
orders the next release; a failed publish does not stand for a failed build).

May import: config, release.state, release.adapters, release.builds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from release.builds.publish_run import publish_plan
from release.state import Build, state_for

Finish = Callable[[Build, bool | None, str], None]


def publish(ctx, path: Path, commit: str, builds: list[Build], finish: Finish, started: Callable[[str], None]) -> None:
    """Publish ``builds`` (GitHub builds of one branch, not yet published) on their runners."""
    from release.builds.github import dispatch_build

    by_name = {b.package: b for b in builds}
    plan, cannot = publish_plan(ctx, path, builds[0].branch, commit, sorted(by_name))
    for skip in cannot:
        finish(by_name[skip.package], None, f"not published: {skip.reason}")
    if not plan.items:
        return
    for i in plan.items:
        started(i.package)
    rows = dispatch_build(ctx, plan)
    how = ("substituted from the cache" if plan.substitute
           else "built again on its runner (no build cache)")
    for row in rows:
        b = by_name.get(row["package"])
        if b is None:
            continue
        if row["state"] == "succeeded":
            finish(b, True, f"published on GitHub ({how}) from {b.branch} at {commit[:12]}")
        else:
            finish(b, False, f"the publish job failed on GitHub ({row['state']}"
                   + (f"; log: {row['log']}" if row.get("log") else "")
                   + "): nothing recorded, the next publish run tries again")
    _forget(ctx, [r["id"] for r in rows if r.get("id") is not None])


def _forget(ctx, ids: list[int]) -> None:
    """The publish run's tracking rows go once it ended (see the module docstring)."""
    if not ids:
        return
    with state_for(ctx).session() as s:
        s.query(Build).filter(Build.id.in_(ids)).delete(synchronize_session=False)
