"""Publishing: the publish command per succeeded variant, records and outbox rows in one
transaction, failed publishes retried on the next run."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from release.builds import run as builds
from release.publishing import publish
from release.publishing.commands import plan_publish
from release.state import Outbox, Publish, Release, open_state
from tests.support import fixtures_builds as fx

FAST_BUILD = dict(build_command=f"test {{package}} != {fx.FAILING}", build_result_link="README.md")


def test_publish_records_and_retries(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path)
    marker = tmp_path / "published.txt"
    bad = fx.OK[0]
    ctx = fx.context(tmp_path, **FAST_BUILD,
                     publish_command=f"test {{package}} != {bad} && echo {{org}}/{{package}} >> {marker}")
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)

    plan = plan_publish(ctx, fx.BRANCH, repo=repo)
    assert {p["package"] for p in plan.to_dict()["publish"]} == set(fx.ALL) - {fx.FAILING}
    result = plan.apply()
    states = {r["package"]: r["state"] for r in result.to_dict()["publishes"]}
    assert states[bad] == "failed" and not result.ok
    assert sorted(marker.read_text().split()) == sorted(f"acme/{p}" for p in fx.ALL if p not in (bad, fx.FAILING))

    st = open_state(ctx.settings.state_db)
    with st.session() as s:
        assert {p.package for p in s.scalars(select(Publish))} == set(fx.ALL) - {bad, fx.FAILING}
        rel = s.scalar(select(Release))
        assert (rel.branch, rel.pin, rel.total) == (fx.BRANCH, fx.PIN, 4)
        kinds = [o.kind for o in s.scalars(select(Outbox).order_by(Outbox.id))]
        assert kinds == ["parent", "variant", "variant"]

    # the failed one is retried next run (and only it)
    ctx2 = fx.context(tmp_path, **FAST_BUILD, publish_command=f"echo {{package}} >> {marker}")
    again = publish.publish_pending(ctx2, fx.BRANCH, repo=repo)
    assert [(r["package"], r["state"]) for r in again] == [(bad, "published")]
    assert publish.publish_pending(ctx2, fx.BRANCH, repo=repo) == []


def test_summary_enqueued_when_all_published(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=[*fx.OK, fx.COMPANION])
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
    publish.publish_pending(ctx, fx.BRANCH, repo=repo)
    st = open_state(ctx.settings.state_db)
    with st.session() as s:
        kinds = [o.kind for o in s.scalars(select(Outbox).order_by(Outbox.id))]
    assert kinds == ["parent", "variant", "variant", "variant", "summary"]


def test_publish_without_repo_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from config.errors import UsageError

    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo))
    with pytest.raises(UsageError, match="needs the repository"):
        publish.publish_pending(ctx, fx.BRANCH)


def test_cli_publish_json(tmp_path: Path, monkeypatch, capsys) -> None:
    import json

    from bot.frontends.cli import main as cli
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, **FAST_BUILD)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo))
    monkeypatch.setenv("TORCHBOT_STATE_DB", ctx.settings.state_db)
    monkeypatch.setenv("TORCHBOT_PUBLISH_COMMAND", "true")
    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "acme")
    assert cli.main(["release", "publish", "--repo", str(repo), "--branch", fx.BRANCH, "--dry-run"]) == 0
    assert "Publish 2 variant(s)" in capsys.readouterr().out
    assert cli.main(["release", "publish", "--repo", str(repo), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and sorted(p["package"] for p in out["publishes"]) == sorted(fx.OK)
    assert cli.main(["release", "publish", "--repo", str(repo)]) == 0
    assert "Nothing to publish: all 2 succeeded build(s) are published already." in capsys.readouterr().out
