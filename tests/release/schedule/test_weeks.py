"""Issue 34: five weeks of the weekly loop with what a team does, against the nixpkgs, GitHub and
Slack stand-ins, on fresh clones of the real-shaped build-pytorch and build-torchvision. Each
week's outcomes and exit status say what happened:

- week 1 (automerge on): every branch gets its bump PR, built at its head; three merges are
  refused (a review missing), and each PR says so; one build fails. Then a maintainer closes one
  PR unmerged (pytorch-2.10-python313), pushes a fix of their own onto the failed one's bump
  branch (pytorch-2.9-python311), approves main-staging's and commits onto main-staging a
  change that conflicts with its PR;
- week 2: nothing new in nixpkgs. The closed PR is not reopened, the edited one is not
  rewritten (and says so, once), the conflicting one (torchbot's own commit) is rebased onto its
  moved base, built and merged. Exit 0.
- week 3: the channel moves on: the closed branch gets a new PR for the new target (built,
  merged), the edited one is still left alone, build-torchvision's open PRs (each waiting for its
  build-pytorch pair) are updated (not duplicated), and the one paired with the closed branch
  merges with its new PR;
- week 4: the channel goes back to the older head: nothing is downgraded; current, exit 0;
- week 5: nothing new: the same (current, exit 0, no new PR, build or comment); only
  ``--allow-older REASON`` would move a pin back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from release.context import Context
from release.dashboard import issue as dashboard_issue
from release.dashboard import text as dashboard_text
from release.dashboard.commands import dashboard, run_action
from release.pins.commands import plan_bump
from release.schedule import jobs as schedule
from release.state import decisions, record, state_for
from tests.support import fixtures_builds as fx
from tests.support import fixtures_weekly as W
from tests.support.dashboard_truth import branches, differences
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_pins import git

CHANNEL = "C0ANNOUNCE"
CLOSED = "pytorch-2.10-python313"  # its PR is closed unmerged in week 1
EDITED = "pytorch-2.9-python311"  # a maintainer commits onto its bump branch in week 1
CONFLICT = "main-staging"  # a maintainer's commit on the branch conflicts with its PR
NEW = "beef" * 10  # week 3's channel head


def _pins(origin: Path, ref: str) -> set[str]:
    out = git(origin, "grep", "-ho", r"nixpkgs/archive/[0-9a-f]\{40\}", ref, "--", ".flox/pkgs")
    return {line.rsplit("/", 1)[1] for line in out.split()}


def _rev(origin: Path, ref: str) -> str:
    return git(origin, "rev-parse", ref).strip()


def person_commits(tmp: Path, origin: Path, branch: str, edit, author: str = "Alice Maintainer") -> str:
    """A maintainer clones ``origin``, edits ``branch`` with ``edit(work_tree)`` and pushes it."""
    work = tmp / f"person-{branch.replace('/', '_')}-{len(list(tmp.glob('person-*')))}"
    git(tmp, "clone", "-q", "--branch", branch, str(origin), str(work))
    edit(work)
    git(work, "add", "-A")
    git(work, "commit", "-q", f"--author={author} <alice@example.com>", "-m", f"{author}'s change")
    git(work, "push", "-q", "origin", branch)
    return _rev(origin, branch)


@pytest.fixture
def world(tmp_path: Path):
    pt, tv, ptf, tvf = W.fresh_clones(tmp_path)
    tv_origin = tmp_path / "github.com" / "acme" / "build-torchvision.git"
    tv_origin.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(tvf.origin), str(tv_origin))
    git(tv, "remote", "set-url", "origin", str(tv_origin))
    with FakeNixpkgs() as nix, FakeSlack() as slack, \
            FakeGitHub(repo="acme/build-torchvision", upstream=nix.api_url, git_dir=tv_origin) as gh_tv, \
            FakeGitHub(upstream=gh_tv.url, git_dir=ptf.origin) as gh:
        W.nixpkgs_history(nix)
        ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", channels_url=nix.channels_url, github_api_url=gh.url,
                         github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01,
                         nixpkgs_tarball_url=nix.tarball_url, http_retries=1, http_timeout=10,
                         git_author_name="torchbot", git_author_email="bot@example.com",
                         publish_command="true", slack_bot_token=slack.token, slack_api_url=slack.url,
                         announce_channel=CHANNEL)
        yield ctx, nix, gh, gh_tv, ptf.origin, tv_origin, tmp_path


def week(ctx, truth: dict | None = None) -> tuple[dict, int, str]:
    """One scheduled week: the bump job (its line), then the exit status a `bump-pins --all` run
    would give right after it (a dry run of the same plan), and the outcome of each group. With
    ``truth``, every dashboard row (JSON) is compared with the stand-ins' and the remote's: none differs."""
    line = schedule.run_now(ctx, "bump")["result"]
    if truth is not None:
        d = dashboard(Context(ctx.settings, use_repo=True)).to_dict()
        assert differences(d, truth) == [], line
        assert sum(len(r["branches"]) for r in d["repositories"]) == sum(len(branches(o)) for o, _ in truth.values())
    again = plan_bump(ctx, "all", None, dry_run=True).apply()
    by = {(o.repo, o.branch, o.group): o for o in again.outcomes}
    return by, again.exit_code, line


def kinds(by: dict, branch: str, repo: str = "build-pytorch") -> set[str]:
    return {o.kind for (r, b, _), o in by.items() if r == repo and b == branch}


def test_five_weeks_with_people_and_faults(world) -> None:
    ctx, nix, gh, gh_tv, origin, tv_origin, tmp = world
    truth = {"build-pytorch": (origin, gh), "build-torchvision": (tv_origin, gh_tv)}

    # --- week 1: automerge on; the maintainers require a review on three branches -------------------
    ctx.settings.bump_automerge = True
    gh.fail = {git(origin, "ls-tree", "--name-only", EDITED, ".flox/pkgs/").split()[0].rsplit("/", 1)[1][:-4]}
    gh.pulls.refuse_merge(1)  # PR numbers follow the plan's order: main first
    for n in (2, 3, 4):
        gh.pulls.refuse_merge(n)
    by, rc, line = week(ctx, truth)
    assert line.startswith("7 bumped, 3 kept-promise, 1 skipped; 7 pull request(s)"), line
    prs = {p["base"]["ref"]: p for p in gh.pulls.prs.values()}
    tv_prs = {p["base"]["ref"]: p for p in gh_tv.pulls.prs.values()}
    assert set(prs) == {"main", CONFLICT, CLOSED, EDITED} and len(tv_prs) == 3
    gh.pulls.refuse.pop(prs[EDITED]["number"], None)  # its build failed: never tried
    assert all(p["state"] == "open" for p in prs.values()) and not gh.pulls.merges
    # every refused merge is shown on its PR (a comment and a status) and kept for the dashboard
    refused = {d.branch: d for d in decisions.decisions(state_for(ctx), kind="merge-refused")}
    assert set(refused) == {"main", CONFLICT, CLOSED} and "approving review" in refused["main"].note
    for base in refused:
        pr = gh.pulls.prs[prs[base]["number"]]
        assert [c for c in gh.comments if c[1] == pr["number"] and "could not merge" in c[2]], base
        assert [st["state"] for st in gh.statuses.of(pr["head"]["sha"], "torchbot/automerge")] == ["failure"], base
    assert rc == 0, line

    # what the team does during the week
    gh.pulls.close(prs[CLOSED]["number"], by="alice")
    person_commits(tmp, origin, prs[EDITED]["head"]["ref"],
                   lambda w: (w / "NOTES.md").write_text("Alice's notes on this bump\n"))
    recipe = git(origin, "grep", "-l", "nixpkgs/archive/", CONFLICT, "--", ".flox/pkgs").split()[0].split(":", 1)[1]

    def conflicting(w: Path) -> None:  # the line right after the pin: GitHub cannot merge the PR any more
        text = (w / recipe).read_text().splitlines(keepends=True)
        at = next(i for i, t in enumerate(text) if "nixpkgs/archive/" in t)
        text.insert(at + 1, "    # pinned for the CUDA 12.8 runners (alice)\n")
        (w / recipe).write_text("".join(text))

    gh.pulls.refuse.pop(prs[CONFLICT]["number"])  # approved, but its branch moved under it
    staging_before = person_commits(tmp, origin, CONFLICT, conflicting)
    assert "CONFLICT" in git(origin, "merge-tree", "--write-tree", CONFLICT, prs[CONFLICT]["head"]["ref"],
                             check=False)

    # --- week 2: nothing new in nixpkgs ------------------------------------------------------------
    numbers = sorted(gh.pulls.prs)
    comments, dispatches_1 = len(gh.comments), len(gh.dispatches)
    by, rc, line = week(ctx, truth)
    assert sorted(gh.pulls.prs) == numbers, line  # no PR reopened, none duplicated
    assert gh.pulls.prs[prs[CLOSED]["number"]]["state"] == "closed"
    closed = [o for (r, b, _), o in by.items() if b == CLOSED and r == "build-pytorch"]
    # the week's delivery left the closed one and the edited one alone, saying why
    rows = {(r.branch, r.grp): r for r in record.rows(state_for(ctx)) if r.repo.endswith("build-pytorch")}
    assert all(rows[(CLOSED, o.group)].bump_kind == "skipped" for o in closed), line
    assert "closed unmerged by alice" in rows[(CLOSED, closed[0].group)].reason
    # the record says who closed it (GitHub's issue closed_by; its PR list lacks it)
    assert {(r.pr_state, r.closed_by) for (b, _), r in rows.items() if b == CLOSED} == {("closed", "alice")}
    edited = [(r.bump_kind, r.reason) for (b, _), r in rows.items() if b == EDITED]
    assert edited and all(k == "skipped" and "holds commits by Alice Maintainer" in why for k, why in edited), edited
    (said,) = gh.comments[comments:]  # the edited PR is told, once; nothing else is said again
    assert said[1] == prs[EDITED]["number"] and "no longer updates this pull request" in said[2]
    assert "Alice's notes" in git(origin, "show", f"{prs[EDITED]['head']['ref']}:NOTES.md")  # not force-pushed away
    # the conflicting PR: its own bump, rebased onto the moved branch, built and merged
    staging = gh.pulls.prs[prs[CONFLICT]["number"]]
    assert staging["state"] == "closed" and staging["merged_at"], line
    assert git(origin, "merge-base", "--is-ancestor", staging_before, CONFLICT, check=False) == ""
    assert "(alice)" in git(origin, "show", f"{CONFLICT}:{recipe}") and _pins(origin, CONFLICT) == {W.K28}
    # the comment-only move changed no variant: nothing built again, each counted as built at the new
    # head from its success at the earlier one, and the status says so
    (status,) = list(gh.statuses.of(staging["head"]["sha"], "torchbot/builds"))[-1:]
    assert status["state"] == "success" and "unchanged since" in status["description"], status
    assert not [p for _, p in gh.dispatches[dispatches_1:] if p["ref"] == staging["head"]["ref"]]
    assert gh.pulls.prs[prs["main"]["number"]]["state"] == "open"  # still waiting for its review
    assert "held" not in line and rc == 0, line
    # the dashboard lists what people decided: the closed PR (by whom, when, a box to recreate it), the
    # edited one and the refused merge, with why; in the JSON, the text, Slack's blocks and the issue
    model = dashboard(Context(ctx.settings, use_repo=True)).model
    rows_of = {b.name: b for r in model.repositories if r.name == "build-pytorch" for b in r.branches}
    (closed_d,) = rows_of[CLOSED].decisions
    assert (closed_d.kind, closed_d.number, closed_d.by) == ("closed-unmerged", prs[CLOSED]["number"], "alice")
    (recreate,) = [a for a in rows_of[CLOSED].actions if a.kind == "recreate-pr"]
    assert recreate.key == f"recreate-pr:{CLOSED}:{prs[CLOSED]['number']}:{prs[CLOSED]['head']['ref']}"
    assert recreate.command == f"bump-pause {CLOSED} --recreate {prs[CLOSED]['head']['ref']}"
    assert [d.kind for d in rows_of[EDITED].decisions] == ["edited"]
    assert [d.kind for d in rows_of["main"].decisions] == ["merge-refused"]
    needs = {(n.branch, n.kind): n for n in model.needs}
    closed_need = needs[(CLOSED, "pr-closed")]
    assert closed_need.action == recreate and "closed by alice on 20" in closed_need.text
    assert "approving review" in needs[("main", "merge-refused")].text
    assert "Alice Maintainer" in needs[(EDITED, "edited")].text
    said = "\n".join(dashboard_text.needs_lines(model))
    assert "closed by alice" in said and "refused to merge" in said and "no longer updates it" in said
    body = dashboard_issue.render(model, next(r for r in model.repositories if r.name == "build-pytorch"))
    assert f"<!-- torchbot:act:{dashboard_issue.box_key(recreate.key)} -->" in body and "closed by alice on" in body
    assert "People's decisions torchbot respects" in body
    from bot.frontends.slack import dashboard as slack_dashboard

    buttons = [b["accessory"] for b in slack_dashboard.blocks(model) if "accessory" in b]
    assert any(b["text"]["text"] == "Recreate PR" and recreate.key in b["value"] for b in buttons)
    # the box does what `release bump-pause B --recreate HEAD` does: the closed target may be proposed again
    assert "may be proposed again" in run_action(ctx, recreate)
    assert [d.head for d in decisions.decisions(state_for(ctx), branch=CLOSED, kind="recreate")] == \
        [prs[CLOSED]["head"]["ref"]]
    again = dashboard(Context(ctx.settings, use_repo=True)).model
    assert not [a for b in again.branches if b.name == CLOSED for a in b.actions if a.kind == "recreate-pr"]

    # --- week 3: the channel moves on ---------------------------------------------------------------
    nix.add_commit(NEW, "git: 2.50 -> 2.51")
    nix.channels["nixos-unstable"] = NEW
    tv_numbers = sorted(gh_tv.pulls.prs)
    comments = len(gh.comments)
    by, rc, line = week(ctx, truth)
    assert rc == 0 and "held" not in line, line
    new = [p for n, p in gh.pulls.prs.items() if n not in numbers]
    assert [p["base"]["ref"] for p in new] == [CLOSED], line  # a newer target: a new PR, built and merged
    assert new[0]["merged_at"] and _pins(origin, CLOSED) == {NEW}
    assert "Alice's notes" in git(origin, "show", f"{prs[EDITED]['head']['ref']}:NOTES.md")  # still left alone
    # build-torchvision's PRs are built in its own repository and merge only with their build-pytorch pair
    # (paired by versions), none of which merged in week 1: updated for the newer target (or the
    # promise's), never duplicated; pytorch-2.10's merges with the closed branch's new PR
    tv_new = [p["base"]["ref"] for n, p in gh_tv.pulls.prs.items() if n not in tv_numbers]
    assert tv_new == [], tv_new
    for base in tv_prs:
        assert sum(p["state"] == "open" and p["base"]["ref"] == base for p in gh_tv.pulls.prs.values()) <= 1, base
    for p in gh_tv.pulls.prs.values():
        assert _pins(tv_origin, p["head"]["ref"]) <= {NEW, W.K28}, p["base"]["ref"]
    assert [m["number"] for m in gh_tv.pulls.merges] == [tv_prs["pytorch-2.10"]["number"]]
    assert _pins(tv_origin, "pytorch-2.10") == {NEW}
    assert len(gh.comments) == comments  # nothing said again
    numbers = sorted(gh.pulls.prs)

    # --- week 4: the channel goes back to the older head ---------------------------------------------
    nix.channels["nixos-unstable"] = W.HEAD
    pins_before = {b: _pins(origin, b) for b in ("main", CONFLICT, CLOSED, EDITED)}
    dispatches, tv_edits = len(gh.dispatches), len(gh_tv.pulls.edits)
    by, rc, line = week(ctx, truth)
    assert len(gh_tv.pulls.edits) == tv_edits  # an open PR proposing the newer nixpkgs is not moved back
    assert all(_pins(tv_origin, p["head"]["ref"]) <= {NEW, W.K28} for n, p in gh_tv.pulls.prs.items()
               if n not in tv_numbers)
    assert rc == 0 and "held" not in line, line
    assert {b: _pins(origin, b) for b in pins_before} == pins_before  # nothing downgraded
    assert kinds(by, CLOSED) == {"current"}
    assert all("went back" in o.reason for (r, b, _), o in by.items() if b == CLOSED and r == "build-pytorch")
    assert sorted(gh.pulls.prs) == numbers and len(gh.dispatches) == dispatches

    # --- week 5: nothing new ----------------------------------------------------------------------------
    comments = len(gh.comments)
    by, rc, line = week(ctx, truth)
    assert rc == 0 and "held" not in line, line
    assert sorted(gh.pulls.prs) == numbers and len(gh.comments) == comments  # said once, not every week
    assert len(gh.dispatches) == dispatches
    # ... unless the maintainer says so: --allow-older with the reason in the commit
    older = plan_bump(ctx, "all", None, only=(CLOSED,), delivery="local", allow_older="beef broke CUDA 13")
    assert kinds({(o.repo, o.branch, o.group): o for o in older.outcomes}, CLOSED) == {"bumped"}


def test_a_named_bump_goes_down_the_weekly_pipeline(world) -> None:
    """Issue 35 point 2: a bump of a named branch as a PR (a revision, a move, the dashboard's
    Approve) is delivered as the weekly one is: the open bump PR is updated, never a second."""
    ctx, nix, gh, _gh_tv, origin, _tv_origin, _tmp = world
    schedule.run_now(ctx, "bump")
    (pr,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == EDITED]
    numbers = sorted(gh.pulls.prs)
    nix.add_commit(NEW, "git: 2.50 -> 2.51")
    result = plan_bump(ctx, EDITED, NEW, open_pr=True).apply()
    assert result.to_dict()["ok"], result.text()
    assert sorted(gh.pulls.prs) == numbers  # updated, not a second PR
    assert _pins(origin, pr["head"]["ref"]) == {NEW}
    assert [e for n, e in gh.pulls.edits if n == pr["number"]]


def test_a_conflict_under_its_own_bump_is_rebased_and_merged_in_the_same_run(world) -> None:
    """While the week's builds run, a maintainer commits onto main-staging a change next to the
    bump's line: GitHub refuses the merge (a conflict). torchbot's PR holds only its own bump, so
    the same run plans it again on the moved branch, updates the PR, builds and merges it."""
    import threading

    ctx, _nix, gh, _gh_tv, origin, _tv_origin, tmp = world
    ctx.settings.bump_automerge = True
    recipe = git(origin, "grep", "-l", "nixpkgs/archive/", CONFLICT, "--", ".flox/pkgs").split()[0].split(":", 1)[1]
    first_poll = gh.pause(lambda method, path, query: method == "GET" and path.endswith("/jobs"))
    job = threading.Thread(target=schedule.run_now, args=(ctx, "bump"))
    job.start()
    try:
        assert first_poll[0].wait(120), "the week's builds never started"

        def conflicting(w: Path) -> None:
            text = (w / recipe).read_text().splitlines(keepends=True)
            at = next(i for i, t in enumerate(text) if "nixpkgs/archive/" in t)
            text.insert(at + 1, "    # pinned for the CUDA 12.8 runners (alice)\n")
            (w / recipe).write_text("".join(text))

        moved = person_commits(tmp, origin, CONFLICT, conflicting)
    finally:
        first_poll[1].set()
        job.join(300)
    (pr,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == CONFLICT]
    assert pr["merged_at"], pr["state"]
    assert git(origin, "merge-base", "--is-ancestor", moved, CONFLICT, check=False) == ""
    assert "(alice)" in git(origin, "show", f"{CONFLICT}:{recipe}") and _pins(origin, CONFLICT) == {W.K28}
    # only what changed is built after the rebase (a comment: nothing); the rest counts as built at the new head
    assert [p["ref"] for _, p in gh.dispatches].count(pr["head"]["ref"]) == 1
    (status,) = gh.statuses.of(pr["head"]["sha"], "torchbot/builds")[-1:]
    assert status["state"] == "success" and "unchanged since" in status["description"], status


def test_a_group_held_for_the_same_reason_is_no_new_failure(world) -> None:
    """A group held (the head lacks a CUDA set its recipes use) fails the week it is first held;
    the weeks after, still held for the same reason, it is said again but the run does not fail."""
    ctx, nix, _gh, _gh_tv, _origin, _tv_origin, _tmp = world
    nix.add_commit(NEW, "cudaPackages_13_1: drop", cuda_sets=W.CUDA_SETS - {"cudaPackages_13_1"})
    nix.channels["nixos-unstable"] = NEW
    first = plan_bump(ctx, "all", None, dry_run=True).apply()
    held = [o for o in first.outcomes if o.kind == "held"]
    assert held and first.exit_code == 1, first.text()
    schedule.run_now(ctx, "bump")  # the week's run keeps its outcomes
    _by, rc, _line = week(ctx)
    again = plan_bump(ctx, "all", None, dry_run=True).apply()
    assert rc == 0 and [o for o in again.outcomes if o.kind == "held"], again.text()
    assert "Still held for the same reason as at the last run (not a new failure)" in again.text()
