"""The chat dispatcher's mutating commands end to end: /build and /publish through the
same plan -> Confirm path Slack uses, on a real repository built with real nix-build."""

from __future__ import annotations

from pathlib import Path

from bot.frontends.chat import Chat, PlanReply
from tests.support import fixtures_builds as fx


def test_build_then_publish_through_chat(tmp_path: Path):
    work = fx.make_repo(tmp_path, packages=fx.OK[:1])
    ctx = fx.context(tmp_path, repo_path=work, admins=["UADMIN"], audit_log=tmp_path / "audit.log")
    chat = Chat(ctx)

    assert "only admins" in chat.command("build", fx.BRANCH, user="UOTHER").text()

    plan = chat.command("build", fx.BRANCH, user="UADMIN")
    assert isinstance(plan, PlanReply), plan.text()
    assert fx.OK[0] in plan.text()
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").rglob("*.log"))  # nothing built yet

    result = chat.confirm(plan.pending.id, "UADMIN").wait(120)
    assert "succeeded" in result.text() and fx.OK[0] in result.text()

    pub = chat.command("publish", fx.BRANCH, user="UADMIN")
    assert isinstance(pub, PlanReply)
    done = chat.confirm(pub.pending.id, "UADMIN").wait(120)
    assert fx.OK[0] in done.text()
    audit = (tmp_path / "audit.log").read_text()
    for line in ("refused /build", "plan /build", "confirm /build", "plan /publish", "confirm /publish"):
        assert line in audit
