"""`torchbot release docs --check | --write` on repositories in the real shapes
(tests/support/fixtures_realshapes.py, stale_readme=True: the multi-pin branch's rows out of date in every
README), and the weekly scheduled check posting drift to the announce channel."""

from __future__ import annotations

import json

import pytest

from bot.frontends.cli.main import main as cli
from release.context import Context
from release.schedule import jobs as schedule
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_pins import git, refs
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, make_pytorch_repo

MULTI = "pytorch-2.10-python313"
DOCUMENTED = ["main", MULTI, "pytorch-2.9-python311", "pytorch-2.9-vllm-0.14.0"]  # main-staging is skipped


@pytest.fixture
def pt(tmp_path, monkeypatch):
    repo = make_pytorch_repo(tmp_path, stale_readme=True)
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(repo.path))
    return repo


def docs(*args) -> list[str]:
    return ["release", "docs", *args]


def test_check_reports_each_stale_row_and_exits_1(pt, capsys):
    before = refs(pt.path)
    rc = cli(docs("--check", "--json"))
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["ok"] is False
    multi = pt.branches[MULTI]
    rows = {(s["readme"], s["table"], s["row"]): s for s in out["stale"]}
    # every documented README: the branch table (variants, CUDA) and the version matrix (pin TBD)
    assert set(rows) == {(b, t, MULTI) for b in DOCUMENTED for t in ("Branches", "Version Matrix")}
    b = rows[("main", "Branches", MULTI)]
    assert f"variants {len(multi.recipes) // 2}" in b["says"] and f"variants {len(multi.recipes)}" in b["true"]
    assert "CUDA 13.1" in b["says"] and "CUDA 13.1 / 13.0 / 12.9" in b["true"]
    v = rows[("main", "Version Matrix", MULTI)]
    assert "pin TBD" in v["says"] and all(p[:7] in v["true"] for p in (PIN_13_0, PIN_13_1, PIN_12_X))
    assert refs(pt.path) == before  # a check writes nothing
    # the text form names the README, the table, the row, what it says and what is true
    cli(docs("--check"))
    text = capsys.readouterr().out
    assert "main:README.md:" in text and f"[Version Matrix] {MULTI}: says " in text and "; true: " in text


def test_write_changes_only_the_tables_then_check_is_clean(pt, capsys):
    old = {b: git(pt.path, "show", f"{b}:README.md") for b in pt.branch_names}
    before = refs(pt.path)
    rc = cli(docs("--write", "--json"))
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert sorted(out["commits"]) == sorted(DOCUMENTED)
    for b in DOCUMENTED:
        sha = out["commits"][b]
        assert git(pt.path, "rev-parse", b).strip() == sha
        assert git(pt.path, "rev-parse", f"{sha}~1").strip() == before[f"refs/heads/{b}"]
        assert git(pt.path, "diff", "--name-only", f"{sha}~1", sha).split() == ["README.md"]
        new = git(pt.path, "show", f"{b}:README.md")
        a, c = old[b].splitlines(), new.splitlines()
        assert len(a) == len(c)
        changed = [(x, y) for x, y in zip(a, c, strict=True) if x != y]
        assert changed and all(MULTI in x and x.startswith("|") for x, _ in changed)
        assert out["lines_changed"][b]["changed"] == len(changed) < len(c) / 4
    assert git(pt.path, "show", "main-staging:README.md") == old["main-staging"]
    # main was checked out and clean: its work tree followed, nothing is staged
    assert git(pt.path, "status", "--porcelain=v1", "--untracked-files=no") == ""
    assert (pt.path / "README.md").read_text() == git(pt.path, "show", "main:README.md")
    rc = cli(docs("--check"))
    assert rc == 0 and "match the repository" in capsys.readouterr().out
    # a second --write has nothing to do
    after = refs(pt.path)
    assert cli(docs("--write")) == 0 and refs(pt.path) == after


def test_write_refuses_a_dirty_checked_out_branch_and_changes_nothing(pt, capsys):
    (pt.path / "README.md").write_text("local edit\n")
    before = refs(pt.path)
    rc = cli(docs("--write"))
    err = capsys.readouterr().err
    assert rc == 1 and "checked out" in err and "uncommitted changes" in err
    assert refs(pt.path) == before and (pt.path / "README.md").read_text() == "local edit\n"


def test_weekly_check_posts_drift_to_the_announce_channel(pt, tmp_path):
    with FakeSlack() as slack:
        ctx = fx.context(tmp_path, repo_path=pt.path, slack_bot_token=slack.token, slack_api_url=slack.url,
                         announce_channel="C0RELEASES")
        assert any(s.id == "docs-check" for s in schedule.job_specs(ctx))
        result = schedule.run_now(ctx, "docs-check")["result"]
        assert "8 stale rows" in result and "posted to C0RELEASES" in result
        (posted,) = slack.messages("C0RELEASES")
        assert MULTI in posted["text"] and "release docs --write" in posted["text"]
        # after --write the weekly check is clean and posts nothing
        assert cli(docs("--write")) == 0
        assert "clean" in schedule.run_now(Context(ctx.settings, use_repo=False), "docs-check")["result"]
        assert len(slack.messages("C0RELEASES")) == 1


def test_write_on_a_fresh_clone_commits_the_branches_that_are_only_on_the_remote(pt, tmp_path, monkeypatch, capsys):
    """The README's `docs --check || docs --write` on a plain `git clone` (one local branch): each
    other branch's commit goes on a new local branch at origin's tip, as `git switch` makes one."""
    import subprocess

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(pt.path), str(clone)], check=True)
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(clone))
    before = refs(clone)
    assert f"refs/heads/{MULTI}" not in before
    rc = cli(docs("--write", "--json"))
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert sorted(out["commits"]) == sorted(DOCUMENTED)
    for b in DOCUMENTED:
        assert git(clone, "rev-parse", f"{out['commits'][b]}~1").strip() == before.get(
            f"refs/heads/{b}", before.get(f"refs/remotes/origin/{b}"))
    assert any(MULTI in n and "local branch" in n.lower() for n in out["notes"]), out["notes"]
    assert cli(docs("--check")) == 0
