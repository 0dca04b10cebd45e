"""A Slack plan's "Show diff": the same command-layer diff as the console's `diff` and
`bump-pins --diff` (``Plan.diff``), shown to the asker alone, over real HTTP against a real git
repository; a long diff is a file in the plan's channel, else pages in the reply (past what one
message holds, its first pages and the CLI command)."""

from __future__ import annotations

import json

from bot.frontends.pending import DiffResult, bump_options, cli_diff
from bot.frontends.slack.blocks import MAX_PAGES, render
from config.errors import UsageError
from tests.frontends.slack.test_bot_slack_http import click, slash, world  # noqa: F401  (world: the fixture)
from tests.support.fixtures_pins import NEW, refs


def _plan_id(world):  # noqa: F811
    posts = world["slack"].wait_for(lambda p, b: "show_diff" in json.dumps(b.get("blocks", [])))
    plan = next(b for _, b in posts if "show_diff" in json.dumps(b.get("blocks", [])))
    return next(e["value"] for blk in plan["blocks"] if blk["type"] == "actions" for e in blk["elements"]
                if e["action_id"] == "show_diff")


def test_show_diff_gives_the_asker_the_unified_diff_and_writes_nothing(world):  # noqa: F811
    before = refs(world["work"])
    slash(world, "/bump", "main")
    pid = _plan_id(world)
    click(world, "show_diff", pid, n=2)
    posts = world["slack"].wait_for(lambda p, b: p == "/response/2" and "Diff of the plan" in b.get("text", ""))
    reply = next(b for p, b in posts if p == "/response/2")
    assert reply["response_type"] == "ephemeral" and reply["replace_original"] is False
    # longer than a few pages: a file in the plan's channel, said as the asker's
    assert "posted in this channel as `bump-main.diff`" in json.dumps(reply["blocks"])
    (f,) = world["slack"].files.values()
    assert f["channel"] == "CREL" and f["name"] == "bump-main.diff" and "<@UADMIN>" in f["initial_comment"]
    assert f["content"].count("\n+++ ") >= 10 and NEW in f["content"]  # the new pin, in the files it would write
    assert refs(world["work"]) == before
    # the plan is still pending: Confirm applies it afterwards
    click(world, "confirm_plan", pid, n=3)
    world["slack"].wait_for(lambda p, b: p == "/response/3" and "Confirmed /bump main" in b.get("text", ""))


def test_where_no_file_can_go_the_diff_is_in_the_reply(world):  # noqa: F811
    slash(world, "/bump", "main")
    pid = _plan_id(world)
    world["slack"].private.add("CREL")  # a private channel torchbot was not invited to: the file cannot go there
    click(world, "show_diff", pid, n=2)
    posts = world["slack"].wait_for(lambda p, b: p == "/response/2" and "Diff of the plan" in b.get("text", ""))
    blob = json.dumps(next(b for p, b in posts if p == "/response/2")["blocks"])
    assert "+++ " in blob and NEW in blob
    assert not world["slack"].files


def test_show_diff_is_for_the_asker_or_an_admin(world):  # noqa: F811
    slash(world, "/bump", "main")
    pid = _plan_id(world)
    click(world, "show_diff", pid, user="UINTRUDER", n=2)
    world["slack"].wait_for(lambda p, b: p == "/response/2" and "can see this diff" in b.get("text", ""))
    click(world, "show_diff", "0123456789abcdef", n=3)
    world["slack"].wait_for(lambda p, b: p == "/response/3" and "not known here" in b.get("text", ""))


def test_a_long_diff_is_a_file_where_one_can_go_else_its_first_pages_and_the_cli_command():
    short = DiffResult("bump", ["main"], "--- a/x\n+++ b/x\n-old\n+new", cli_diff(["main"]))
    assert render(short, can_attach=True).file is None  # one message holds it: no file in the channel
    diff = "\n".join(f"+line {i} " + "x" * 60 for i in range(2000))
    d = DiffResult("bump", ["main"], diff, cli_diff(["main", NEW]))
    out = render(d, can_attach=True)
    assert out.file == ("bump-main.diff", diff) and "posted in this channel" in json.dumps(out.blocks)
    out = render(d, can_attach=False)
    assert out.file is None
    assert sum(1 for b in out.blocks if "```" in b["text"]["text"]) == MAX_PAGES
    assert f"torchbot release bump-pins --branch main --rev {NEW} --diff" in out.blocks[-1]["text"]["text"]


def test_cli_diff_keeps_the_plans_options_and_bump_explains_diff():
    assert cli_diff(["all", NEW, "--with-companions", "--cuda", "12.9"]) == (
        f"torchbot release bump-pins --all --rev {NEW} --with-companions --cuda 12.9 --diff")
    assert cli_diff(["main"]) == "torchbot release bump-pins --branch main --diff"
    try:
        bump_options(["main", "--diff"])
    except UsageError as err:
        assert "Show diff" in err.message
    else:
        raise AssertionError("/bump main --diff was taken")


