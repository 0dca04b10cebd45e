"""The dashboard in words (release.dashboard.words, pure): each sentence from the model's typed rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from release.dashboard.model import build
from release.dashboard.words import changes, held_sentence, summary, why_held
from tests.support.fixtures_dashboard import REAL_BRANCHES, real_width_facts

NOW = datetime(2026, 11, 28, tzinfo=UTC)


def model():
    return build(real_width_facts(), NOW)


def test_a_held_branch_says_its_reason_when_and_the_command_that_moves_it():
    d = model()
    main = next(b for b in d.branches if b.name == "main")
    assert held_sentence(main, d) == (
        "main is held: it promises PyTorch 2.9.1 but nixpkgs abababa has torch 2.10.0 (2026-11-23 06:00 UTC). "
        f"To move it anyway: `/{main.actions[0].command}` (admins; a plan first).")
    assert main.actions[0].kind == "approve-bump"


def test_every_held_branch_without_a_name_and_an_unknown_name():
    d = model()
    held = [n for i, n in enumerate(REAL_BRANCHES) if i % 3 == 0]
    text = why_held(d, [])
    assert text.splitlines()[0] == f"{len(held)} branch(es) held:"
    assert [line.split()[1] for line in text.splitlines()[1:]] == held
    assert why_held(d, ["nope"]) == "No branch nope on the dashboard."


def test_changes_in_the_window_and_a_merged_pull_request():
    d = model()
    bumped = next(b for b in d.branches if b.bump_state == "bumped")
    bumped.pr = next(b.pr for b in d.branches if b.pr is not None)
    bumped.pr.state = "merged"  # as the release record types it
    text = changes(d, NOW - timedelta(days=7), NOW, {"main": {"succeeded": 3, "failed": 1}}, {"main": 2})
    lines = text.splitlines()
    assert lines[0] == "Since 2026-11-21 00:00 UTC:"
    assert f"- {bumped.name}: bumped (pull request #1234 merged)." in lines
    assert "- main: bump held: it promises PyTorch 2.9.1 but nixpkgs abababa has torch 2.10.0." in lines
    assert lines[-2:] == ["- main: builds finished: 3 succeeded, 1 failed.", "- main: 2 variant(s) published."]
    before = changes(d, NOW - timedelta(days=30), NOW - timedelta(days=8), {}, {})
    assert before.startswith("Nothing changed since 2026-10-29 00:00 UTC")


def test_the_summary_sentence_counts_from_the_model():
    d = model()
    text = summary(d)
    assert text.startswith(f"{len(REAL_BRANCHES)} branches in 1 repositories: ")
    assert f"{len(d.needs)} thing(s) need a human." in text
    built = sum(b.builds["built"] for b in d.branches)
    assert f"{built} of {sum(b.variants for b in d.branches)} variants built at their heads" in text
