"""The Slack app manifest says what torchbot is (issue 28): its slash commands are the ones the app
listens to, their hints name the flags the commands take (no fewer, no more), every bot scope
carries a comment saying which feature needs it, and the request URLs of HTTP mode are commented
alternatives pointing at the one path torchbot serves. ``/bump``'s pin-group flags reach the
planner like the CLI's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML  # a test dependency

from bot.frontends.chat import USAGE
from bot.frontends.pending import bump_options, replay_args
from bot.frontends.slack.listeners import COMMANDS
from config.errors import UsageError

MANIFEST = Path(__file__).resolve().parents[3] / "slack-app-manifest.yml"
TEXT = MANIFEST.read_text()
DATA = YAML(typ="safe").load(TEXT)


def flags(text: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z-]*", text))


def test_the_slash_commands_are_the_ones_torchbot_answers():
    assert [c["command"] for c in DATA["features"]["slash_commands"]] == list(COMMANDS)


@pytest.mark.parametrize("name", sorted(USAGE))
def test_a_hint_names_the_flags_its_command_takes(name):
    hint = next(c["usage_hint"] for c in DATA["features"]["slash_commands"] if c["command"] == f"/{name}")
    assert flags(hint) == flags(USAGE[name]), (hint, USAGE[name])


def test_the_bump_and_build_hints_name_what_the_issue_asked_for():
    hints = {c["command"]: c.get("usage_hint", "") for c in DATA["features"]["slash_commands"]}
    assert {"--pytorch", "--torch-src", "--cuda", "--from-pin", "--with-companions"} <= flags(hints["/bump"])
    assert "--resume" in flags(hints["/build"])


def test_every_scope_says_which_feature_uses_it():
    scopes = DATA["oauth_config"]["scopes"]["bot"]
    assert len(scopes) == len(set(scopes))
    for scope in scopes:
        line = re.search(rf"^\s+- {re.escape(scope)}\s+#\s*(\S.*)$", TEXT, re.M)
        assert line and len(line.group(1)) > 10, f"scope {scope} has no comment saying which feature uses it"
    # the scopes torchbot's features call for (app-level connections:write is not a bot scope)
    assert {"app_mentions:read", "chat:write", "commands", "files:write", "usergroups:read"} <= set(scopes)


def test_the_scopes_are_the_ones_docs_slack_md_lists_and_the_stand_in_grants():
    """Release recovery reads need membership (channels:join, or an invitation), torchbot posts in
    public channels it did not join (chat:write.public), late results go by DM (im:write)."""
    from tests.support.fakes_slack import FakeSlack

    scopes = set(DATA["oauth_config"]["scopes"]["bot"])
    assert {"channels:join", "chat:write.public", "im:write"} <= scopes
    docs = (MANIFEST.parent / "docs" / "slack.md").read_text()
    table = {s for row in re.findall(r"^\| (`[^|]+`) \|", docs, re.M) for s in re.findall(r"`([^`]+)`", row)}
    assert table == scopes
    with FakeSlack() as slack:
        assert slack.scopes == scopes


def test_request_urls_are_commented_alternatives_for_http_mode():
    assert DATA["settings"]["socket_mode_enabled"] is True
    assert "request_url" not in DATA["settings"]["event_subscriptions"]
    assert all("url" not in c for c in DATA["features"]["slash_commands"])
    commented = re.findall(r"^\s*#\s*(?:request_)?url: (\S+)$", TEXT, re.M)
    assert len(commented) == len(COMMANDS) + 2  # every command, events, interactivity
    assert set(commented) == {"https://HOST/slack/events"}


def test_bump_takes_the_pin_group_flags_and_replays_them():
    rest, opts = bump_options(["pytorch-2.10-python313", "--cuda", "13.1"])
    assert rest == ["pytorch-2.10-python313"] and opts == {"cuda": "13.1"}
    rest, opts = bump_options(["pytorch-2.10-python313", "abc1234", "--from-pin=cc33cc3"])
    assert rest == ["pytorch-2.10-python313", "abc1234"] and opts == {"from_pin": "cc33cc3"}
    again = replay_args("bump", ["pytorch-2.10-python313", "--cuda", "13.1"], {"new_rev": "f" * 40})
    assert again == ["pytorch-2.10-python313", "f" * 40, "--cuda", "13.1"]
    with pytest.raises(UsageError, match=r"--from-pin needs a value \(OLD\)"):
        bump_options(["main", "--from-pin"])
