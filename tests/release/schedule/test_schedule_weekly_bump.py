"""Issue 25: the schedule's weekly bump job on fresh clones shaped like the real repositories
(several PyTorch lines on one channel, a three-pin branch, a companion repository, branches only
as origin/*), against the nixpkgs and GitHub stand-ins: every branch and pin group gets one
outcome; each bump arrives as one pull request; the next run updates it instead of opening
another."""

from __future__ import annotations

from pathlib import Path

from release.schedule import jobs as schedule
from tests.support import fixtures_builds as fx
from tests.support import fixtures_weekly as W
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs


def test_the_weekly_job_bumps_every_branch_as_pull_requests_and_updates_them(tmp_path: Path) -> None:
    pt, tv, ptf, _tvf = W.fresh_clones(tmp_path)
    with FakeNixpkgs() as nix, FakeGitHub(upstream=nix.api_url, git_dir=ptf.origin) as gh:
        W.nixpkgs_history(nix)
        ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", channels_url=nix.channels_url, github_api_url=gh.url,
                         github_token=gh.token, github_repo=gh.repo, nixpkgs_tarball_url=nix.tarball_url,
                         http_retries=1, build_command="false", github_poll_seconds=0.01)
        assert [s.id for s in schedule.job_specs(ctx) if s.kind == "bump"] == ["bump"]
        first = schedule.run_now(ctx, "bump")["result"]
        # build-pytorch: the three pin groups of pytorch-2.10-python313 and pytorch-2.9-python311 bumped to the
        # head; main and main-staging (2.8) moved keeping their promise; the vLLM branch skipped
        assert first.startswith("4 bumped, 2 kept-promise, 4 held, 1 skipped; "), first
        bases = sorted(p["base"]["ref"] for p in gh.pulls.prs.values())
        assert bases == ["main", "main-staging", "pytorch-2.10-python313", "pytorch-2.9-python311"], bases
        assert "4 pull request(s): https://github.test/" in first
        # the companion's origin is not on github.com: its branches are held, saying so; nothing is lost
        assert ("held: build-torchvision main (CUDA 12.8, CPU, darwin), build-torchvision pytorch-2.10 (CUDA 13.0, CPU)"
                in first and first.count("no GitHub repository is known for build-torchvision") == 1), first
        heads = {p["head"]["ref"] for p in gh.pulls.prs.values()}  # each PR built at its head, not the old branch
        assert {p["ref"] for _, p in gh.dispatches} == heads
        assert all(p["inputs"]["publish"] == "false" for _, p in gh.dispatches)  # and never published from there
        from release.state import state_for
        from release.state.record import rows as record_rows

        rows = record_rows(state_for(ctx), pt)  # the release record the bump stage wrote, which the views read
        assert len(rows) == 7 and {r.bump_kind for r in rows} == {"bumped", "kept-promise", "skipped"}
        main = next(r for r in rows if r.branch == "main")
        assert (main.bump_kind, main.reason_kind, main.target, main.pytorch) == ("kept-promise", "promise-kept",
                                                                                 W.K28, "2.8.0")
        assert main.pr_url and main.head_ref == "bump/main-1128112" and main.pr_state == "open"
        (main_pr,) = [p for p in gh.pulls.prs.values() if p["base"]["ref"] == "main"]
        assert (main.pr_number, main.head_sha) == (main_pr["number"], main_pr["head"]["sha"])
        numbers = sorted(gh.pulls.prs)

        nix.add_commit("beef" * 10, "git: 2.50 -> 2.51")
        nix.channels["nixos-unstable"] = "beef" * 10
        second = schedule.run_now(ctx, "bump")["result"]
        assert sorted(gh.pulls.prs) == numbers, second  # updated, not duplicated
        edited = {n for n, _ in gh.pulls.edits}
        moved = {p["number"] for p in gh.pulls.prs.values() if p["base"]["ref"].startswith("pytorch-")}
        assert edited == moved, (edited, second)
