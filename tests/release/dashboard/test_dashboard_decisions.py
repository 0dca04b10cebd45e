"""People's decisions on the dashboard's model (pure): which still hold, how they are said, and
the Recreate action of a closed bump PR; and the PR status of variants carried to a new head."""

from __future__ import annotations

from release.builds.pr_status import summary
from release.dashboard.model import PullRequest, _decisions

CLOSED = {"kind": "closed-unmerged", "number": 3, "head": "bump/b-feed029", "by": "alice", "at": "2026-11-30T10:00:00"}
EDITED = {"kind": "edited", "number": 4, "head": "bump/b-feed029", "by": "Alice <a@x>"}
REFUSED = {"kind": "merge-refused", "number": 4, "head": "a" * 40, "note": "review required"}


def test_a_closed_pr_holds_until_recreated_or_superseded() -> None:
    (d,) = _decisions([CLOSED], PullRequest(3, None, "bump/b-feed029", state="closed"))
    assert d.text().startswith("PR #3 closed by alice on 2026-11-30 without merging")
    assert _decisions([CLOSED, {"kind": "recreate", "head": "bump/b-feed029"}], None) == []
    assert _decisions([CLOSED], PullRequest(5, None, "bump/b-beef", state="open")) == []  # a newer PR


def test_edited_and_refused_hold_while_that_pr_is_open_at_that_head() -> None:
    open_pr = PullRequest(4, None, "bump/b-feed029", sha="a" * 40, state="open")
    assert [d.kind for d in _decisions([EDITED, REFUSED], open_pr)] == ["edited", "merge-refused"]
    moved = PullRequest(4, None, "bump/b-feed029", sha="b" * 40, state="open")
    assert [d.kind for d in _decisions([EDITED, REFUSED], moved)] == ["edited"]  # refused at an older head
    assert _decisions([EDITED, REFUSED], PullRequest(4, None, None, state="merged")) == []
    assert "review required" in _decisions([REFUSED], open_pr)[0].text()


def test_carried_variants_count_as_built_and_are_said() -> None:
    state, text = summary(["succeeded", "succeeded"], {"p1": "c" * 40, "p2": "c" * 40})
    assert state == "success" and text == f"2/2 built (2 unchanged since {'c' * 12})"
    assert summary(["succeeded", "failed"])[1] == "1/2 built, 1 failed"
