"""`/bump` in chat takes the CLI's options that make sense there (--cuda, --from-pin, --channel,
--force, a revision, all, --pytorch, --torch-src) with the same validation and the same
Confirm step, and delivers as the schedule does (issue 25, point 2): a pull request per branch
with GitHub configured; an open one is updated on the next run, never duplicated."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.frontends.chat import Chat, PlanReply
from tests.support import fixtures_builds as fx
from tests.support import fixtures_weekly as W
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs


@pytest.fixture
def world(tmp_path: Path):
    pt, _tv, ptf, _tvf = W.fresh_clones(tmp_path)
    with FakeNixpkgs() as nix:
        W.nixpkgs_history(nix)
        with FakeGitHub(upstream=nix.api_url, git_dir=ptf.origin) as gh:
            ctx = fx.context(tmp_path, repo_path=pt, admins=["UADMIN"], audit_log=tmp_path / "audit.log",
                             channels_url=nix.channels_url, github_api_url=gh.url, github_token=gh.token,
                             github_repo=gh.repo, nixpkgs_tarball_url=nix.tarball_url, http_retries=1)
            yield Chat(ctx), gh, ptf, nix


def test_bump_takes_cuda_and_answers_bad_options_in_one_line(world):
    chat, gh, _ptf, _nix = world
    plan = chat.command("bump", "pytorch-2.10-python313 --cuda 13.1", user="UADMIN")
    assert isinstance(plan, PlanReply), plan.text()
    text = plan.text()
    assert "pytorch-2.10-python313 (CUDA 13.1): bumped cc33cc3 -> feed029" in text
    assert "(CUDA 12.9): skipped" in text and "a pull request per bumped branch" in text
    assert not gh.pulls.prs  # a plan: nothing opened yet
    for words, answer in (("main --cuda", "/bump --cuda needs a value (A.B)."),
                          ("main --dry-run", "/bump does not take --dry-run; it takes --with-companions, --force"),
                          ("main --from-pin zz", "--from-pin 'zz' is not a commit id prefix"),
                          ("nope", "No branch nope in")):
        reply = chat.command("bump", words, user="UADMIN")
        assert not isinstance(reply, PlanReply) and answer in reply.text(), (words, reply.text())
        assert "Traceback" not in reply.text()


def test_a_confirmed_bump_is_one_pull_request_and_the_next_updates_it(world):
    chat, gh, _ptf, nix = world
    plan = chat.command("bump", "pytorch-2.9-python311", user="UADMIN")
    assert isinstance(plan, PlanReply), plan.text()
    done = chat.confirm(plan.pending.id, "UADMIN").wait(120)
    assert "pull request opened: https://github.test/" in done.text(), done.text()
    (pr,) = gh.pulls.prs.values()
    assert pr["base"]["ref"] == "pytorch-2.9-python311" and pr["head"]["ref"] == "bump/pytorch-2.9-python311-feed029"
    nix.add_commit("beef" * 10, "git: 2.50 -> 2.51")
    nix.channels["nixos-unstable"] = "beef" * 10
    again = chat.command("bump", "pytorch-2.9-python311", user="UADMIN")
    done = chat.confirm(again.pending.id, "UADMIN").wait(120)
    assert "pull request updated" in done.text(), done.text()
    assert len(gh.pulls.prs) == 1 and gh.pulls.edits and gh.pulls.edits[0][0] == pr["number"]
    # /bump all: every branch, its own outcome, through the same Confirm
    every = chat.command("bump", "all", user="UADMIN")
    assert isinstance(every, PlanReply) and "main (CUDA 12.8, CPU, darwin): moved, keeping its promise" in every.text()
