"""A Confirm (or Cancel) that the state store carries out after the chat stopped waiting for
it is put back: the user was told "Nothing was confirmed", so the plan is pending again and
the next click confirms it and starts the job. A real SQLite database whose write lock another
connection holds past the chat's deadline (its own busy timeout being longer)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.frontends.chat import Chat, JobReply, PlanReply
from release.state import PendingPlan, open_state
from tests.support import fixtures_builds as fx


def plan_state(chat: Chat, plan_id: str) -> str:
    with chat.store.run("read", lambda state: state).session() as s:
        return s.get(PendingPlan, plan_id).state


def test_a_confirm_that_lands_after_the_deadline_is_put_back_and_the_next_click_confirms(tmp_path: Path):
    db = tmp_path / "state.sqlite"
    open_state(f"sqlite:///{db}", timeout=60)  # the database waits on a lock far longer than the chat does
    work = fx.make_repo(tmp_path, packages=fx.OK[:1])
    chat = Chat(fx.context(tmp_path, repo_path=work, admins=["UADMIN"], audit_log=tmp_path / "audit.log",
                           state_db=f"sqlite:///{db}", state_timeout_seconds=0.5))
    try:
        plan = chat.command("build", fx.BRANCH, user="UADMIN")
        other = chat.command("build", fx.BRANCH, user="UADMIN")
        assert isinstance(plan, PlanReply) and isinstance(other, PlanReply), plan.text()

        for pid, act, said in ((plan.pending.id, chat.confirm, "Nothing was confirmed"),
                               (other.pending.id, chat.cancel, "Nothing was cancelled")):
            writer = sqlite3.connect(db, isolation_level=None)
            writer.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the chat's deadline
            told = act(pid, "UADMIN")
            assert told.ok is False and said in told.text() and "not answering" in told.text()
            writer.execute("COMMIT")  # the claim now goes through, after the user was told it did not
            writer.close()
            assert chat.store.idle(60), "the late claim and its undoing did not finish"
            assert plan_state(chat, pid) == "pending"  # as the user was told

        again = chat.confirm(plan.pending.id, "UADMIN")
        assert isinstance(again, JobReply), again.text()
        done = again.wait(120)
        assert "succeeded" in done.text() and fx.OK[0] in done.text()
        assert plan_state(chat, plan.pending.id) == "confirmed"
        assert chat.cancel(other.pending.id, "UADMIN").text().startswith("Cancelled /build")
        audit = (tmp_path / "audit.log").read_text()
        assert audit.count(f"confirm /build {fx.BRANCH}") == 1 and audit.count("cancel /build") == 1
        assert plan_state(chat, other.pending.id) == "cancelled"
    finally:
        chat.runner.shutdown()
