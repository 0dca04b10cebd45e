"""Release-thread announcements against a fake Slack Web API on 127.0.0.1."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select

from release.builds import run as builds
from release.publishing import announce, publish
from release.state import Outbox, open_state
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack

CHANNEL = "C0ANNOUNCE"
PKGS = [*fx.OK, fx.COMPANION]


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


def _released(tmp_path: Path, slack: FakeSlack, **over):
    repo = fx.make_repo(tmp_path, packages=PKGS)
    ctx = fx.context(tmp_path, build_command="true", build_result_link="README.md",
                     slack_bot_token=slack.token, slack_api_url=slack.url, **over)
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
    publish.publish_pending(ctx, fx.BRANCH, repo=repo)
    return ctx, repo


def _unsent(ctx) -> int:
    with open_state(ctx.settings.state_db).session() as s:
        return len(list(s.scalars(select(Outbox).where(Outbox.sent.is_(None)))))


def test_thread_structure_and_summary(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)
    result = announce.flush(ctx)
    assert result["sent"] == 4 and result["error"] is None and _unsent(ctx) == 0
    msgs = slack.messages(CHANNEL)
    parent = [m for m in msgs if not m.get("thread_ts")]
    assert len(parent) == 1
    replies = slack.thread(CHANNEL, parent[0]["ts"])[1:]
    assert sorted(m["text"].split("`")[1] for m in replies) == sorted(PKGS)
    for m in replies:
        assert f"flox install acme/{m['text'].split('`')[1]}" in m["text"]
    # parent: branch, versions, pin link, count; then updated to the summary
    first_post = slack.method_calls("chat.postMessage")[0]["text"]
    assert fx.BRANCH in first_post and "PyTorch 2.8" in first_post and "CUDA 12.8" in first_post
    assert "Python 3.13" in first_post and f"commit/{fx.PIN}" in first_post and "3 variant(s)" in first_post
    assert "all 3 variant(s) published" in parent[0]["text"] and "edited" in parent[0]
    assert len(slack.method_calls("chat.update")) == 1
    assert announce.flush(ctx)["sent"] == 0  # nothing twice


def test_rate_limit_is_honoured(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)
    slack.rate_limit(1, retry_after=1)
    t0 = time.monotonic()
    result = announce.flush(ctx)
    assert result["sent"] == 4 and _unsent(ctx) == 0
    assert time.monotonic() - t0 >= 1.0  # waited Retry-After
    assert len(slack.method_calls("chat.postMessage")) == 5  # 1 refused + 4 accepted
    assert len(list(slack.messages(CHANNEL))) == 4


def test_crash_between_send_and_mark_posts_once(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)

    def crash(row, ts):
        if row.kind == "variant":
            raise SystemExit("killed after Slack accepted the message")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    assert len(slack.messages(CHANNEL)) == 2  # parent + the first reply, which is unmarked
    result = announce.flush(ctx)
    assert result["recovered"] == 1 and result["sent"] == 2
    texts = [m["text"] for m in slack.messages(CHANNEL)]
    assert len(texts) == 4
    for pkg in PKGS:
        assert sum(f"`{pkg}`" in t for t in texts) == 1


def test_crash_after_parent_posted_is_recovered(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)

    def crash(row, ts):
        raise SystemExit("killed")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    announce.flush(ctx)
    assert len([m for m in slack.messages(CHANNEL) if not m.get("thread_ts")]) == 1
    assert len(slack.messages(CHANNEL)) == 4


def test_outage_only_delays(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack, http_retries=1)
    slack.down = True
    result = announce.flush(ctx)
    assert result["sent"] == 0 and "503" in result["error"] and _unsent(ctx) == 5
    assert slack.messages(CHANNEL) == []
    slack.down = False
    slack.fail(1, error="internal_error")
    assert announce.flush(ctx)["sent"] == 0  # an ok:false answer also only delays
    result = announce.flush(ctx)
    assert result["sent"] == 4 and _unsent(ctx) == 0
    assert len(slack.messages(CHANNEL)) == 4


def test_next_pin_gets_its_own_thread_with_a_compare_link(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, repo = _released(tmp_path, slack)
    announce.flush(ctx)
    fx.sh(repo, "git", "checkout", "--quiet", fx.BRANCH)
    fx.write_recipes(repo, fx.NEW_PIN, "bumped", packages=PKGS)
    fx.sh(repo, "git", "commit", "--quiet", "-am", "bump pin")
    fx.sh(repo, "git", "push", "--quiet", "origin", fx.BRANCH)  # published: what is on the branch
    fx.sh(repo, "git", "checkout", "--quiet", "main")
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    assert len(plan.items) == 3 and {i.pin for i in plan.items} == {fx.NEW_PIN}
    builds.run_local(ctx, plan, jobs=2)
    publish.publish_pending(ctx, fx.BRANCH, repo=repo)
    assert announce.flush(ctx)["sent"] == 4
    parents = [m for m in slack.messages(CHANNEL) if not m.get("thread_ts")]
    assert len(parents) == 2
    assert f"compare/{fx.PIN}...{fx.NEW_PIN}" in parents[1]["text"]
    assert len(slack.thread(CHANNEL, parents[1]["ts"])) == 4
