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
    ctx = fx.context(tmp_path, **{"build_command": "true", "build_result_link": "README.md",
                                  "slack_bot_token": slack.token, "slack_api_url": slack.url, **over})
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
    publish.publish_pending(ctx, fx.BRANCH, repo=repo)
    return ctx, repo


def _unsent(ctx) -> int:
    with open_state(ctx.settings.state_db).session() as s:
        return len(list(s.scalars(select(Outbox).where(Outbox.sent.is_(None)))))


def _replies(slack: FakeSlack) -> list[dict]:
    parent = next(m for m in slack.messages(CHANNEL) if not m.get("thread_ts"))
    return slack.thread(CHANNEL, parent["ts"])[1:]


def _listed(slack: FakeSlack) -> list[str]:
    """Every package the thread's replies list (one per line: ``• `name```)."""
    return [line.split("`")[1] for m in _replies(slack) for line in m["text"].splitlines() if line.startswith("•")]


def test_thread_structure_and_summary(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)
    result = announce.flush(ctx)
    # one parent and a reply per accelerator (CPU, CUDA 12.8), not a message per variant
    assert result["sent"] == 3 and result["error"] is None and _unsent(ctx) == 0
    msgs = slack.messages(CHANNEL)
    parent = [m for m in msgs if not m.get("thread_ts")]
    assert len(parent) == 1 and len(msgs) == 3
    replies = _replies(slack)
    assert sorted(_listed(slack)) == sorted(PKGS)  # every published package findable from the thread
    titles = sorted(m["text"].splitlines()[0] for m in replies)
    assert "CPU · x86_64-linux" in titles[0] and "CUDA 12.8 · x86_64-linux" in titles[1]
    for m in replies:
        installs = [line for line in m["text"].splitlines() if "flox install acme/" in line]
        assert len(installs) == 1  # one install line per group
    # parent: branch, versions, pin link, count, what is published; then updated in place to the summary
    first_post = slack.method_calls("chat.postMessage")[0]["text"]
    assert fx.BRANCH in first_post and "PyTorch 2.8" in first_post and "CUDA 12.8" in first_post
    assert "Python 3.13" in first_post and f"commit/{fx.PIN}" in first_post and "3 variant(s)" in first_post
    assert "all 3 variant(s) published" in parent[0]["text"] and "edited" in parent[0]
    assert len(slack.method_calls("chat.update")) == 1
    assert all(c["metadata"]["event_type"] == announce.EVENT_TYPE for c in slack.method_calls("chat.postMessage"))
    assert not any("client_msg_id" in c for c in slack.method_calls("chat.postMessage"))
    assert announce.flush(ctx)["sent"] == 0  # nothing twice


def test_rate_limit_is_honoured(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)
    slack.rate_limit(1, retry_after=1)
    t0 = time.monotonic()
    result = announce.flush(ctx)
    assert result["sent"] == 3 and _unsent(ctx) == 0
    assert time.monotonic() - t0 >= 1.0  # waited Retry-After
    assert len(slack.method_calls("chat.postMessage")) == 4  # 1 refused + 3 accepted
    assert len(list(slack.messages(CHANNEL))) == 3


def test_crash_between_send_and_mark_posts_once(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)

    def crash(row, ts):
        if row.kind == "variant":
            raise SystemExit("killed after Slack accepted the message")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    assert len(slack.messages(CHANNEL)) == 2  # parent + the first group's reply, which is unmarked
    assert CHANNEL not in slack.members  # torchbot posted with chat:write.public, it never joined
    result = announce.flush(ctx)
    assert result["recovered"] >= 1 and result["sent"] == 1
    assert slack.method_calls("conversations.join") == [{"channel": CHANNEL}]  # joined to read the thread
    assert len(slack.messages(CHANNEL)) == 3
    assert sorted(_listed(slack)) == sorted(PKGS)


def test_crash_after_parent_posted_is_recovered(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)

    def crash(row, ts):
        raise SystemExit("killed")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    announce.flush(ctx)
    assert len([m for m in slack.messages(CHANNEL) if not m.get("thread_ts")]) == 1
    assert len(slack.messages(CHANNEL)) == 3


def test_parent_recovered_behind_more_than_a_page_of_newer_messages(tmp_path: Path, slack: FakeSlack) -> None:
    """The channel moved on after the crash: 120 newer messages stand before the parent in
    conversations.history (newest first, 20 a page here): the flusher follows next_cursor."""
    ctx, _ = _released(tmp_path, slack)

    def crash(row, ts):
        raise SystemExit("killed")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    for i in range(120):
        slack.user_message(CHANNEL, f"chatter {i}", user=f"U{i % 7}")
    result = announce.flush(ctx)
    assert result["recovered"] == 1 and result["error"] is None
    reads = slack.method_calls("conversations.history")
    assert all(r["include_all_metadata"] for r in reads)
    cursors = [r["cursor"] for r in reads if r.get("cursor")]  # the first read (not_in_channel) joined first
    assert cursors == [f"next_ts_{20 * i}" for i in range(1, len(cursors) + 1)] and len(cursors) >= 6
    ours = [m for m in slack.messages(CHANNEL) if m.get("user") == "UBOT" and not m.get("thread_ts")]
    assert len(ours) == 1


def test_reply_recovered_after_the_100th_reply(tmp_path: Path, slack: FakeSlack) -> None:
    """A busy thread: 120 replies came in the minute before torchbot's reply. Recovery reads from
    the attempt's time (``oldest``), page after page, and finds it past the 100th reply."""
    ctx, _ = _released(tmp_path, slack)
    slack.join(CHANNEL)

    def crash(row, ts):
        if row.kind == "variant":
            parent = next(m for m in slack.messages(CHANNEL) if not m.get("thread_ts"))
            for i in range(120):  # just before torchbot's reply, after its attempt began
                slack.user_message(CHANNEL, f"+1 {i}", thread_ts=parent["ts"], at=float(ts) - 0.5 + i / 1000)
            raise SystemExit("killed")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    result = announce.flush(ctx)
    assert result["recovered"] == 1 and result["sent"] == 1
    reads = slack.method_calls("conversations.replies")
    assert len(reads) >= 6 and all(float(r["oldest"]) > 0 for r in reads)
    assert not slack.method_calls("conversations.join")  # a member already
    assert sorted(_listed(slack)) == sorted(PKGS)


def test_crash_in_a_thread_of_over_200_replies_in_a_channel_not_joined(tmp_path: Path, slack: FakeSlack) -> None:
    """Exactly once where Slack makes it hard: the release's thread holds 250 replies, torchbot
    never joined the channel (it posts with chat:write.public), and it crashes between sending the
    reply of a newly published variant and marking it. Recovery joins, reads from the attempt's
    time (not from the thread's start) and finds the reply by its metadata."""
    cpu = fx.OK[0]  # pytorch-python313-cpu-avx2: its group (CPU · x86_64-linux) gets its first reply late
    hold = tmp_path / "hold"
    hold.mkdir()
    (hold / cpu).touch()  # its build fails at first
    ctx, repo = _released(tmp_path, slack, build_command=f"test ! -e {hold}/{{package}}")
    slack.advance(-2 * 3600)  # what follows happened two hours ago
    assert announce.flush(ctx)["sent"] == 2  # parent + the CUDA 12.8 reply of the two published
    parent = next(m for m in slack.messages(CHANNEL) if not m.get("thread_ts"))
    assert "2/3 published, 1 failed" in parent["text"] and f"`{cpu}` failed" in parent["text"]  # named
    for i in range(250):
        slack.user_message(CHANNEL, f"works for me {i}", user=f"U{i % 9}", thread_ts=parent["ts"])
    slack.advance(2 * 3600)
    (hold / cpu).unlink()
    builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
    publish.publish_pending(ctx, fx.BRANCH, repo=repo)

    def crash(row, ts):
        if row.kind == "variant":
            raise SystemExit("killed between send and mark")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    assert CHANNEL not in slack.members
    before = len(slack.messages(CHANNEL))
    result = announce.flush(ctx)
    assert result["recovered"] == 1 and result["sent"] == 0 and result["error"] is None
    assert slack.method_calls("conversations.join") == [{"channel": CHANNEL}]
    reads = slack.method_calls("conversations.replies")
    assert len(reads) == 2  # not_in_channel, then one page from the attempt's time: not 13 pages of 20
    assert len(slack.messages(CHANNEL)) == before  # nothing posted twice
    assert sorted(_listed(slack)) == sorted(PKGS)  # the CPU package listed once
    assert len(_replies(slack)) == 252  # 250 people's, torchbot's two groups
    assert "all 3 variant(s) published" in slack.thread(CHANNEL, parent["ts"])[0]["text"]


def test_recovery_without_membership_says_so_and_sends_nothing_again(tmp_path: Path, slack: FakeSlack) -> None:
    ctx, _ = _released(tmp_path, slack)
    slack.scopes.discard("channels:join")

    def crash(row, ts):
        if row.kind == "variant":
            raise SystemExit("killed")

    with pytest.raises(SystemExit):
        announce.flush(ctx, on_sent=crash)
    result = announce.flush(ctx)
    assert result["sent"] == 0 and "invite it (/invite @torchbot)" in result["error"]
    assert "channels:join" in result["error"] and "\n" not in result["error"]
    assert len(slack.messages(CHANNEL)) == 2 and _unsent(ctx) > 0
    slack.join(CHANNEL)  # invited: the next flush finds the reply and sends the rest
    assert announce.flush(ctx)["recovered"] == 1
    assert len(slack.messages(CHANNEL)) == 3 and _unsent(ctx) == 0


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
    assert result["sent"] == 3 and _unsent(ctx) == 0
    assert len(slack.messages(CHANNEL)) == 3


def test_the_parent_says_what_is_published_building_failed_and_held_with_why() -> None:
    problems = [(f"pkg-{i}", "failed", f"error: build of pkg-{i} <failed>\nsecond line") for i in range(11)]
    problems.append(("pkg-held", "held", "interrupted"))
    line = announce.status_line(40, 60, 5, problems)
    assert line.startswith("40/60 published, 5 still building, 11 failed, 1 held, 3 not built yet.")
    assert "• `pkg-0` failed: error: build of pkg-0 &lt;failed&gt;" in line and "second line" not in line
    assert "… and 2 more" in line  # ten named, the rest counted


def test_tier3_pacing_waits_only_past_the_burst() -> None:
    from release.adapters.slack import Paced

    now, slept = [0.0], []

    class Client:
        def chat_update(self, **kw):
            return {"ok": True}

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    paced = Paced(Client(), burst=5, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        paced.chat_update(channel="C", ts="1")
    assert slept == []
    for _ in range(10):
        paced.chat_update(channel="C", ts="1")
    assert len(slept) == 10 and abs(sum(slept) - 10 * 60 / 50) < 1e-6  # 50 a minute past the burst


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
    assert announce.flush(ctx)["sent"] == 3
    parents = [m for m in slack.messages(CHANNEL) if not m.get("thread_ts")]
    assert len(parents) == 2
    assert f"compare/{fx.PIN}...{fx.NEW_PIN}" in parents[1]["text"]
    assert len(slack.thread(CHANNEL, parents[1]["ts"])) == 3
