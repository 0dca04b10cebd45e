"""Issue 25: the weekly release loop runs through, unattended, on fresh clones of repositories
shaped like the real ones (several PyTorch lines on one channel, a three-pin branch, every
branch but main only as origin/*, a companion build-torchvision), against the nixpkgs, GitHub
and Slack stand-ins on 127.0.0.1:

schedule's weekly ``bump`` -> one outcome per branch and pin group -> one pull request per
bumped branch (a second run updates it) -> a GitHub build at each PR's head -> the PR's
``torchbot/builds`` status -> automerge of what passed (a build-torchvision PR with its build-pytorch
pair) -> ``publish`` from the branch, both repositories', without building again -> the release
announcement in Slack.

Real git repositories with bare origins (the build-torchvision origin under a
``github.com/acme/build-torchvision.git`` path, so its pull requests go to that repository's
stand-in), the scheduler's own job bodies, the real ``nix-prefetch-url`` of the served tarballs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from release.builds import run as builds
from release.builds.commands import plan_build
from release.publishing import publish
from release.schedule import jobs as schedule
from release.state import Outbox, Publish, Release, open_state
from tests.support import fixtures_builds as fx
from tests.support import fixtures_weekly as W
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1

CHANNEL = "C0ANNOUNCE"
THREE_PINS = "pytorch-2.10-python313"
FAILS = "pytorch-2.9-python311"  # one of its variants fails on GitHub in the second week
TV = "acme/build-torchvision"


def _pins(origin: Path, ref: str) -> set[str]:
    out = git(origin, "grep", "-ho", r"nixpkgs/archive/[0-9a-f]\{40\}", ref, "--", ".flox/pkgs")
    return {line.rsplit("/", 1)[1] for line in out.split()}


def _rev(origin: Path, ref: str) -> str:
    return git(origin, "rev-parse", ref).strip()


@pytest.fixture
def world(tmp_path: Path):
    pt, tv, ptf, tvf = W.fresh_clones(tmp_path)
    tv_origin = tmp_path / "github.com" / "acme" / "build-torchvision.git"  # its remote names a GitHub repository
    tv_origin.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(tvf.origin), str(tv_origin))
    git(tv, "remote", "set-url", "origin", str(tv_origin))
    failing = git(ptf.origin, "ls-tree", "--name-only", FAILS, ".flox/pkgs/").split()[0].rsplit("/", 1)[1][:-4]
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
        yield ctx, nix, gh, gh_tv, slack, ptf.origin, tv_origin, failing


def test_the_weekly_loop_runs_through(world) -> None:
    ctx, nix, gh, gh_tv, slack, origin, tv_origin, failing = world
    main_before = _rev(origin, "main")

    # --- week 1: every branch and pin group gets one outcome; each bump is one pull request -----
    line = schedule.run_now(ctx, "bump")["result"]
    assert line.startswith("7 bumped, 3 kept-promise, 1 skipped; 7 pull request(s)"), line  # both repositories
    prs = {p["base"]["ref"]: p for p in gh.pulls.prs.values()}
    assert set(prs) == {"main", "main-staging", THREE_PINS, FAILS}, line  # the vLLM branch: skipped by design
    assert "pytorch-2.9-vllm-0.14.0" not in prs
    # main promises PyTorch 2.8: moved to the newest commit that keeps it, not the channel head
    assert _pins(origin, prs["main"]["head"]["ref"]) == {W.K28}
    assert "Kept the promise" in prs["main"]["body"] and "🚦 **Automerge**: disabled" in prs["main"]["body"]
    assert "reports here as the `torchbot/builds` status" in prs["main"]["body"]
    # the three-pin branch: its three pin groups, all on the head, in one pull request
    assert _pins(origin, THREE_PINS) == {PIN_13_0, PIN_13_1, PIN_12_X}
    assert _pins(origin, prs[THREE_PINS]["head"]["ref"]) == {W.HEAD}
    assert prs[THREE_PINS]["title"].startswith(f"nixpkgs: bump 3 pins of {THREE_PINS}")
    assert _pins(origin, prs[FAILS]["head"]["ref"]) == {W.HEAD}
    # the companion's bumps are pull requests in its own repository
    assert {p["base"]["ref"] for p in gh_tv.pulls.prs.values()} >= {"main"}
    for pr in gh_tv.pulls.prs.values():
        assert _rev(tv_origin, pr["head"]["ref"]) == pr["head"]["sha"] != _rev(tv_origin, pr["base"]["ref"])
    # ... and are built in its own repository's workflow at their heads, unpublished, in lockstep (issue 33 point 4)
    tv_prs = list(gh_tv.pulls.prs.values())
    assert sorted(p["ref"] for _, p in gh_tv.dispatches) == sorted(pr["head"]["ref"] for pr in tv_prs)
    assert all(p["inputs"]["publish"] == "false" for _, p in gh_tv.dispatches)
    for pr in tv_prs:
        final = gh_tv.statuses.of(pr["head"]["sha"])[-1]
        assert final["state"] == "success" and final["description"].endswith("built"), final
        assert f"{pr['base']['ref']} at {pr['head']['ref']}: " in line
    # the GitHub build of each bump ran at its PR's head, unpublished, and the PR shows the result
    for base, pr in prs.items():
        (payload,) = [p for _, p in gh.dispatches if p["ref"] == pr["head"]["ref"]]
        assert payload["inputs"]["branch"] == base and payload["inputs"]["publish"] == "false"
        rows = [r for r in builds.status(ctx, base) if r["repo"] is None]  # build-pytorch's (its companion's apart)
        assert rows and {r["commit"] for r in rows} == {pr["head"]["sha"]}, base
        final = gh.statuses.of(pr["head"]["sha"])[-1]
        assert (final["state"], final["description"]) == ("success", f"{len(rows)}/{len(rows)} built")
        assert f"{base} at {pr['head']['ref']}: {len(rows)} variant(s), {len(rows)} succeeded" in line
    assert {r for _, p in gh.dispatches for r in [p["ref"]]} == {p["head"]["ref"] for p in prs.values()}
    assert _rev(origin, "main") == main_before  # nothing merged: automerge is off by default
    # nothing the bump changed is published while its PR is open; variants a PR head built whose recipe
    # the branch already has (unpinned recipes the bump does not touch) are the branch's own
    unchanged = publish.pending(ctx)
    assert all(b.pin not in (W.K28, W.HEAD) for b in unchanged)
    assert all(git(origin, "rev-parse", f"{b.branch}:.flox/pkgs/{b.package}.nix").strip() == b.recipe_blob
               for b in unchanged)

    # --- week 2: the channel moved on; each open PR is updated, built again, then automerged --------
    nix.add_commit("beef" * 10, "git: 2.50 -> 2.51")
    nix.channels["nixos-unstable"] = "beef" * 10
    numbers = sorted(gh.pulls.prs)
    gh.fail = {failing}
    ctx.settings.bump_automerge = True
    line = schedule.run_now(ctx, "bump")["result"]
    assert sorted(gh.pulls.prs) == numbers, line  # updated, not duplicated
    assert "🚦 **Automerge**: enabled" in gh.pulls.prs[prs[THREE_PINS]["number"]]["body"]
    prs = {p["base"]["ref"]: gh.pulls.prs[p["number"]] for p in prs.values()}
    moved = {THREE_PINS, FAILS}  # main and main-staging still keep 2.8 at the newest commit that does
    for base in moved:
        head = prs[base]["head"]["sha"]
        assert _pins(origin, head) == {"beef" * 10}, base
        assert [p["ref"] for _, p in gh.dispatches].count(prs[base]["head"]["ref"]) == 2
        assert gh.statuses.of(head)[0]["state"] == "pending"
    ok = gh.statuses.of(prs[THREE_PINS]["head"]["sha"])[-1]
    bad = gh.statuses.of(prs[FAILS]["head"]["sha"])[-1]
    assert ok["state"] == "success" and bad["state"] == "failure" and bad["description"].endswith(", 1 failed")
    # what passed merged; the PR whose build failed stays open for a maintainer
    merged = {gh.pulls.prs[m["number"]]["base"]["ref"]: m["sha"] for m in gh.pulls.merges}
    assert set(merged) == {THREE_PINS} and prs[FAILS]["state"] == "open"
    assert _rev(origin, THREE_PINS) == merged[THREE_PINS]
    assert _pins(origin, THREE_PINS) == {"beef" * 10}

    # --- publishing takes what passed, from the merged branch, without building it again ------------
    again = plan_build(ctx, THREE_PINS, None, backend="github", changed_only=True).to_dict()
    assert again["build"] == [] and again["commit"] == merged[THREE_PINS]
    n = len(builds.status(ctx, THREE_PINS))
    held = {(b.repo, b.branch) for b, _ in publish.held(ctx)}
    assert {br for r, br in held if r is None} == {"main", "main-staging", FAILS}  # open PRs: not on their branch
    # build-torchvision's PRs merge only with their build-pytorch pair (paired by versions: pytorch-2.10
    # with THREE_PINS, pytorch-2.9 with FAILS, main with main): the one whose pair merged did, in the same run
    tv_merged = {gh_tv.pulls.prs[m["number"]]["base"]["ref"]: m["sha"] for m in gh_tv.pulls.merges}
    assert set(tv_merged) == {"pytorch-2.10"} and _rev(tv_origin, "pytorch-2.10") == tv_merged["pytorch-2.10"]
    assert {br for r, br in held if r == TV} == {"main", "pytorch-2.9"}
    tv_prs = {p["base"]["ref"]: p for p in gh_tv.pulls.prs.values()}
    assert gh_tv.statuses.of(tv_prs["pytorch-2.10"]["head"]["sha"], "torchbot/pair")[-1]["state"] == "success"
    waits = gh_tv.statuses.of(tv_prs["pytorch-2.9"]["head"]["sha"], "torchbot/pair")[-1]
    assert (waits["state"], waits["description"]) == (
        "failure", f"build-pytorch's #{prs[FAILS]['number']} failed to build: this merges only with its pair")
    todo = publish.pending(ctx)
    assert {b.branch for b in todo if b.repo is None} - {b.branch for b in unchanged} == {THREE_PINS}
    # build-torchvision's merged bump is published too, by the same job, as its own rows
    tv_built = {r["package"] for r in builds.status(ctx, "pytorch-2.10") if r["repo"] == TV}
    assert tv_built and {(b.branch, b.package) for b in todo if b.repo == TV} == {
        ("pytorch-2.10", p) for p in tv_built}
    assert len([b for b in todo if b.branch == THREE_PINS]) == n
    result = schedule.run_now(ctx, "publish")["result"]
    assert result.startswith(f"{len(todo)} published, 0 failed, "), result
    assert publish.publish_pending(ctx) == []  # once
    with open_state(ctx.settings.state_db).session() as s:
        rows = list(s.scalars(select(Outbox).order_by(Outbox.id)))
        releases = {r.id: r.branch for r in s.scalars(select(Release))}
        tv_published = {(p.branch, p.package) for p in s.scalars(select(Publish).where(Publish.repo == TV))}
        assert [r.branch for r in s.scalars(select(Release).where(Release.repo == TV))] == ["pytorch-2.10"]
    assert tv_published == {("pytorch-2.10", p) for p in tv_built}  # at its merged branch's pin, once
    kinds = {branch: [o.kind for o in rows if releases[o.release_id] == branch] for branch in releases.values()}
    assert kinds[THREE_PINS] == ["parent"] + ["variant"] * n + ["summary"]  # one release, every variant, once
    # --- and the announcement: a release thread for the branch whose bump merged ------------------
    flushed = schedule.run_now(ctx, "flush-announcements")["result"]
    posted = [c for c in slack.method_calls("chat.postMessage") if c.get("metadata")]  # parents + grouped replies
    assert flushed.startswith(f"{len(posted)} sent, ") and ", 0 recovered, 0 pending" in flushed, flushed
    assert len(posted) <= 10 * len(releases)  # a handful of messages per release, not one per variant
    parents = [m for m in slack.messages(CHANNEL) if not m.get("thread_ts")]
    (mine,) = [m for m in parents if THREE_PINS in m["text"]]
    assert f"all {n} variant(s) published" in mine["text"]
    (first,) = [c["text"] for c in slack.method_calls("chat.postMessage") if THREE_PINS in c["text"]]
    assert f"commit/{'beef' * 10}" in first  # the release names the pin the merged bump moved to
    assert not [m for m in parents if FAILS in m["text"]]  # its build failed: nothing published
