"""TORCHBOT_ADMIN_USERGROUP: the members of a Slack user group are admins next to
TORCHBOT_ADMINS, read with usergroups.users.list (against the fake Web API, which answers
with Slack's own error shapes) and cached for a short time; when Slack cannot say, the
refusal names the setting and why."""

from __future__ import annotations

import json

import pytest
from slack_sdk import WebClient

from bot.frontends.slack.admins import UsergroupAdmins
from config.errors import ConfigError, ExternalError
from config.settings import load_settings
from tests.support import fixtures_builds as fx
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_slackbot import SlackBot, slash_body


def test_members_of_the_group_are_admins_and_the_list_is_cached(tmp_path):
    with FakeSlack() as slack:
        slack.usergroups["S0ADMINS"] = ["U0ALICE", "W0BOB"]
        admins = UsergroupAdmins(WebClient(token=slack.token, base_url=slack.url), "S0ADMINS", ttl=3600)
        assert admins("U0ALICE") and admins("W0BOB") and not admins("U0MALLORY")
        assert len(slack.method_calls("usergroups.users.list")) == 1  # one call for a burst
        slack.usergroups["S0ADMINS"] = ["U0MALLORY"]
        assert admins("U0ALICE")  # within the TTL, the cached list
        admins._until = 0  # the TTL passed
        assert admins("U0MALLORY") and not admins("U0ALICE")


@pytest.mark.parametrize("setup, why", [
    (lambda s: s.scopes.discard("usergroups:read"), "usergroups:read"),
    (lambda s: None, "no such user group"),
])
def test_when_slack_cannot_say_nobody_is_an_admin_through_the_group_and_the_reason_is_given(setup, why):
    with FakeSlack() as slack:
        setup(slack)
        admins = UsergroupAdmins(WebClient(token=slack.token, base_url=slack.url), "S0ADMINS")
        with pytest.raises(ExternalError) as err:
            admins("U0ALICE")
        assert "TORCHBOT_ADMIN_USERGROUP S0ADMINS could not be read" in err.value.message and why in err.value.message


def test_a_group_member_may_plan_in_slack_and_others_are_told_why_not(tmp_path):
    with FakeSlack() as slack:
        slack.usergroups["S0ADMINS"] = ["U0GROUPIE"]
        work = fx.make_repo(tmp_path, packages=fx.OK[:1])
        bot = SlackBot(tmp_path, slack, repo_path=work, admins=[], admin_usergroup="S0ADMINS")
        try:
            assert bot.deliverer.send(slash_body(slack, "/build", fx.BRANCH, 1, user="U0GROUPIE"))[0] == 200
            slack.wait_for(lambda p, b: p == "/response/1" and "confirm_plan" in json.dumps(b))
            assert bot.deliverer.send(slash_body(slack, "/build", fx.BRANCH, 2, user="U0STRANGER"))[0] == 200
            slack.wait_for(lambda p, b: p == "/response/2" and "only admins may run it" in b.get("text", ""))
            _status, _reply = bot.deliverer.send(slash_body(slack, "/torchbot", "status", 3))
            slack.wait_for(lambda p, b: p == "/response/3" and "members of S0ADMINS" in json.dumps(b))
        finally:
            bot.close()


def test_the_setting_must_be_a_user_group_id():
    assert load_settings(admin_usergroup=" S0ADMINS ", _env_file=None).admin_usergroup == "S0ADMINS"
    with pytest.raises(ConfigError) as err:
        load_settings(admin_usergroup="@release-admins", _env_file=None)
    assert str(err.value).startswith("TORCHBOT_ADMIN_USERGROUP: '@release-admins' is not a user group ID")
