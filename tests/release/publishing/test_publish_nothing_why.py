""""Nothing to publish" says why, read from the state DB's builds and publishes (issue 35): no build
recorded, none succeeded, all already published, or succeeded at a commit the branch has left.
And `release status` prints its builds under a header, with totals by state."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.frontends.cli import main as cli
from release.builds import run as builds
from release.publishing.commands import plan_publish
from tests.support import fixtures_builds as fx

FAST_BUILD = dict(build_command=f"test {{package}} != {fx.FAILING}", build_result_link="README.md")


def _cli(monkeypatch, capsys, ctx, *args: str) -> tuple[int, str]:
    monkeypatch.setenv("TORCHBOT_STATE_DB", ctx.settings.state_db)
    monkeypatch.setenv("TORCHBOT_PUBLISH_COMMAND", "true")
    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "acme")
    code = cli.main(list(args))
    return code, capsys.readouterr().out


def test_no_build_recorded(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, **FAST_BUILD)
    plan = plan_publish(ctx, fx.BRANCH, repo=repo)
    assert plan.text() == (f"Nothing to publish: no build of {fx.BRANCH} is recorded "
                           "(`torchbot release build --branch BRANCH` builds one).")
    assert plan.to_dict()["nothing"].startswith("no build of")


def test_none_succeeded(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=[fx.FAILING])
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo))
    text = plan_publish(ctx, fx.BRANCH, repo=repo).text()
    assert text == f"Nothing to publish: none of the 1 recorded build(s) of {fx.BRANCH} succeeded (1 failed)."


def test_all_published_already_through_the_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo))
    code, out = _cli(monkeypatch, capsys, ctx, "release", "publish", "--repo", str(repo), "--branch", fx.BRANCH)
    assert code == 0 and "published" in out
    code, out = _cli(monkeypatch, capsys, ctx, "release", "publish", "--repo", str(repo), "--branch", fx.BRANCH)
    assert code == 0
    n = len(fx.OK)
    assert out.strip() == f"Nothing to publish: all {n} succeeded build(s) of {fx.BRANCH} are published already."
    code, out = _cli(monkeypatch, capsys, ctx, "release", "publish", "--repo", str(repo), "--dry-run")
    assert out.strip() == f"Nothing to publish: all {len(fx.OK)} succeeded build(s) are published already."


def test_built_at_a_commit_the_branch_has_left(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo))
    subprocess.run(["git", "checkout", "-q", fx.BRANCH], cwd=repo, check=True)
    fx.write_recipes(repo, fx.NEW_PIN, "moved", fx.OK)  # the recipes change: the builds are of the old ones
    fx.sh(repo, "git", "commit", "-qam", "bump the pin")
    fx.sh(repo, "git", "push", "-q", "origin", fx.BRANCH)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    plan = plan_publish(ctx, fx.BRANCH, repo=repo)
    assert not plan.to_dict()["publish"], plan.text()
    first = plan.text().splitlines()[0]
    assert first == (f"Nothing to publish: none of the {len(fx.OK)} succeeded, unpublished build(s) of {fx.BRANCH} "
                     "may be published yet (why below).")
    assert plan.text().splitlines()[1] == "Not published yet:" and "build it again" in plan.text()


def test_release_status_has_a_header_and_totals(tmp_path: Path, monkeypatch, capsys) -> None:
    repo = fx.make_repo(tmp_path, packages=[*fx.OK, fx.FAILING])
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
    code, out = _cli(monkeypatch, capsys, ctx, "release", "status")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["state", "branch", "package", "when", "(UTC)", "log"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    rows = lines[2:-1]
    assert len(rows) == len(fx.OK) + 1 and all(r.split()[1] == fx.BRANCH for r in rows)
    assert lines[-1] == f"{len(fx.OK) + 1} build(s) on 1 branch(es): {len(fx.OK)} succeeded, 1 failed"
    state_col = lines[0].index("branch")
    assert all(r[state_col:].startswith(fx.BRANCH) for r in rows)  # aligned under the header
