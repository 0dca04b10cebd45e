"""Issue 35: after several weeks of the loop (bump -> pull requests -> builds at their heads ->
automerge -> publish, a failing build, a pull request a person closes, a push that leaves a pull
request in conflict), every row of the
dashboard's JSON agrees with the truth of the stand-ins (GitHub's pull requests and commit
statuses) and the remote (the bare origins' branches and pins): 0 rows differ.

The repositories are fresh clones whose local ``main`` is never updated: the dashboard reads the
remote (``origin/*``), the release record, and the builds by the commit they ran at.
"""

from __future__ import annotations

import re
from pathlib import Path

from release.adapters.github import Actions
from release.builds.pr_status import automerge
from release.context import Context
from release.dashboard.commands import dashboard
from release.schedule import jobs as schedule
from tests.release.schedule.test_weekly_loop import FAILS, THREE_PINS, _rev
from tests.release.schedule.test_weekly_loop import world as world
from tests.support.dashboard_truth import branches as _branches
from tests.support.dashboard_truth import differences as _differences
from tests.support.fixtures_pins import git


def _conflict_on(origin: Path, branch: str, tmp: Path) -> None:
    """A person pushes a change to ``branch`` that touches the lines its bump PR changes."""
    work = tmp / "person"
    git(tmp, "clone", "-q", "--branch", branch, str(origin), str(work))
    recipe = sorted((work / ".flox" / "pkgs").glob("*.nix"))[0]
    recipe.write_text(re.sub(r"archive/[0-9a-f]{40}", "archive/" + "d00d" * 10, recipe.read_text()))
    git(work, "-c", "user.name=person", "-c", "user.email=p@example.com", "commit", "-qam", "pin by hand")
    git(work, "push", "-q", "origin", branch)


def test_several_weeks_of_the_loop_and_the_dashboard_tells_the_truth_row_by_row(world) -> None:
    ctx, nix, gh, gh_tv, _slack, origin, tv_origin, failing = world
    truth = {"build-pytorch": (origin, gh), "build-torchvision": (tv_origin, gh_tv)}
    rows = 0

    seen = Context(ctx.settings, use_repo=True)  # the dashboard as the CLI runs it: every configured repository

    def check(fetch: bool = False) -> None:
        nonlocal rows
        d = dashboard(seen, fetch=fetch).to_dict()
        assert _differences(d, truth) == []
        rows += sum(len(r["branches"]) for r in d["repositories"])

    # week 1: a pull request per bumped branch, built at its head; the clone's local main stays stale
    main_before = _rev(origin, "main")
    schedule.run_now(ctx, "bump")
    check()
    # week 2: the channel moves on; one build fails; what passed merges; publish
    nix.add_commit("beef" * 10, "git: 2.50 -> 2.51")
    nix.channels["nixos-unstable"] = "beef" * 10
    gh.fail = {failing}
    ctx.settings.bump_automerge = True
    schedule.run_now(ctx, "bump")
    schedule.run_now(ctx, "publish")
    check()
    d = dashboard(seen).to_dict()
    row = next(b for r in d["repositories"] for b in r["branches"] if b["branch"] == THREE_PINS)
    assert row["bump"]["pull_request"]["state"] == "merged" and row["builds"]["built"] == row["builds"]["total"] > 0
    assert {(n["branch"], n["kind"]) for n in d["needs_a_human"]} >= {(FAILS, "pr-failed")}
    # week 3: the channel moves again; a person closes main-staging's pull request unmerged
    nix.add_commit("cafe" * 10, "curl: 8.12 -> 8.13")
    nix.channels["nixos-unstable"] = "cafe" * 10
    schedule.run_now(ctx, "bump")
    (staging,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == "main-staging" and p["state"] == "open"]
    staging.update(state="closed", closed_at=staging["updated_at"])
    check()
    d = dashboard(seen).to_dict()
    assert ("main-staging", "pr-closed") in {(n["branch"], n["kind"]) for n in d["needs_a_human"]}
    # ... and pushes a change to the branch of the still-open PR whose build failed: automerge cannot merge it
    (failing_pr,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == FAILS and p["state"] == "open"]
    _conflict_on(origin, FAILS, Path(ctx.settings.state_db.removeprefix("sqlite:///")).parent)
    client = Actions(ctx.settings)
    try:
        assert automerge(ctx, client, FAILS, failing_pr["head"]["ref"], failing_pr["head"]["sha"]) is None
    finally:
        client.close()
    check(fetch=True)  # a person's push is seen after a fetch (the dashboard issue's job fetches first)
    d = dashboard(seen).to_dict()
    row = next(b for r in d["repositories"] for b in r["branches"] if b["branch"] == FAILS)
    assert row["bump"]["pull_request"]["state"] == "conflict"
    assert (FAILS, "conflict") in {(n["branch"], n["kind"]) for n in d["needs_a_human"]}
    assert git(Path(ctx.settings.repo_path), "rev-parse", "main").strip() == main_before  # never read for rows
    assert rows == 4 * (len(_branches(origin)) + len(_branches(tv_origin)))  # every row, every time
