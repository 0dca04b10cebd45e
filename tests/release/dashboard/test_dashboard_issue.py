"""The dashboard issue: one per repository, created once and edited in place; its body within
GitHub's 65,536 characters with 300 branches' worth of rows, controls above any truncation; a
ticked box acted on once at the next run (claimed in the state DB) and recorded in the audit log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from config import audit
from release.dashboard import issue
from release.dashboard.commands import dashboard, sync_issues
from release.dashboard.model import build
from release.state import state_for
from release.state.dashboard_issue import DashboardIssue
from tests.support.fixtures_dashboard import dashboard_world, many_branches


def test_the_body_of_300_branches_stays_under_githubs_limit_with_the_controls_first():
    d = build(many_branches(300), datetime(2026, 3, 2, 12, tzinfo=UTC))
    body = issue.render(d, d.repositories[0])
    assert len(body) < issue.LIMIT
    boxes = [line for line in body.splitlines() if line.startswith("- [ ] <!-- torchbot:act:")]
    assert len(boxes) > 100  # many controls fit
    cut = body.index("more sections left out")
    assert body.rindex("- [ ] <!-- torchbot:act:") < cut  # every control is above the truncation
    assert "more lines of actions: run `torchbot dashboard`" in body  # and the ones that did not fit say so
    assert body.startswith(issue.marker("build-pytorch"))


def test_branches_behind_their_channel_wait_for_their_scheduled_bump_in_a_bounded_section():
    facts = many_branches(300)
    for b in facts["repositories"][0]["branches"]:
        b["bumps"], b["pr"] = [], None
        b["jobs"] = [{"id": f"bump:{b['name']}", "description": "bump", "next_run": "2026-03-09T06:00:00+00:00"}]
    d = build(facts, datetime(2026, 3, 2, 12, tzinfo=UTC))
    body = issue.render(d, d.repositories[0])
    assert len(body) < issue.LIMIT and "## Awaiting schedule" in body
    assert "1234 commits behind nixos-unstable; next bump 2026-03-09 06:00 UTC" in body
    assert "more branches behind their channel" in body


def test_a_small_body_has_a_section_per_state_and_a_details_per_branch():
    d = build(many_branches(3), datetime(2026, 3, 2, 12, tzinfo=UTC))
    body = issue.render(d, d.repositories[0])
    for heading in ("## Held bumps", "## Failed builds", "## Open bump pull requests", "## Drift", "## Branches"):
        assert heading in body
    assert body.count("<details>") == 3 and "more sections left out" not in body
    assert issue.ticked(body) == []
    ticked = body.replace("- [ ] <!-- torchbot:act:retry-builds:", "- [x] <!-- torchbot:act:retry-builds:", 1)
    assert len(issue.ticked(ticked)) == 1 and issue.ticked(ticked)[0].startswith("retry-builds:")


def test_issues_are_created_once_edited_in_place_and_a_ticked_box_acted_on_once(tmp_path: Path):
    over = dict(schedule_build_backend="local", build_command="echo ok > result-{package}")
    with dashboard_world(tmp_path, **over) as w:
        lines = sync_issues(w.ctx, dashboard(w.ctx, now=w.now).model)
        assert any("created dashboard issue" in line for line in lines), lines
        mine = {n: i for n, i in w.gh.issues.items() if i["repository_url"].endswith("/acme/build-pytorch")}
        assert len(mine) == 1 and len(w.gh.issues) == 2  # one per repository
        (number,) = mine
        body = w.gh.issues[number]["body"]
        assert issue.marker("build-pytorch") in body and len(body) < issue.LIMIT
        key = next(k for k in (line.split("torchbot:act:")[1].split()[0] for line in body.splitlines()
                               if "torchbot:act:retry-builds:main:" in line))
        w.gh.tick(number, key)

        lines = sync_issues(w.ctx)
        acted = [line for line in lines if "acted on" in line]
        assert len(acted) == 1 and key in acted[0] and "ticked by maintainer" in acted[0], lines
        records = [r for r in audit.read(w.tmp / "audit.log") if r.get("key") == key]
        assert [(r["what"], r["user"]) for r in records] == [("dashboard acted", "maintainer")]
        assert "- [x]" not in w.gh.issues[number]["body"]  # edited in place, the box unticked

        with state_for(w.ctx).session() as s:  # no number kept: found again among torchbot's own issues
            s.query(DashboardIssue).delete()
        if f"torchbot:act:{key}" in w.gh.issues[number]["body"]:
            w.gh.tick(number, key)  # ticked again: it was done, it is not done twice
        lines = sync_issues(w.ctx)
        assert not [line for line in lines if "acted on" in line]
        assert len([r for r in audit.read(w.tmp / "audit.log") if r.get("key") == key]) == 1
        assert len(w.gh.issues) == 2 and w.gh.issues[number]["state"] == "open"
        assert any(f"updated dashboard issue #{number}" in line for line in lines)
        w.gh.issues[number]["state"] = "closed"  # closed by hand: reopened, not duplicated
        assert any(f"reopened dashboard issue #{number}" in line for line in sync_issues(w.ctx))
        assert len(w.gh.issues) == 2 and w.gh.issues[number]["state"] == "open"


def test_after_a_release_operation_the_outcomes_are_kept_and_the_issues_edited(tmp_path: Path):
    from types import SimpleNamespace

    from release.dashboard.commands import after_operation

    with dashboard_world(tmp_path) as w:
        from release.pins.sweep import PinOutcome
        from release.pins.weekly import record

        held = PinOutcome(repo="build-pytorch", branch="main-staging", group="CUDA 12.8, CPU", kind="held",
                          tracks="nixos-unstable", torch_old="2.8.0", torch_new="2.9.1",
                          reason="no commit newer than the pin keeps PyTorch 2.8")
        record([SimpleNamespace(repo_path=w.pt.path, outcomes=[held])], [], w.ctx.settings)  # the bump stage
        after_operation(w.ctx, "/bump all")
        (number,) = [n for n, i in w.gh.issues.items() if i["repository_url"].endswith("/acme/build-pytorch")]
        body = w.gh.issues[number]["body"]
        assert "approve-bump:main-staging:CUDA-12.8-CPU" in body
        assert "no commit newer than the pin keeps PyTorch 2.8" in body
