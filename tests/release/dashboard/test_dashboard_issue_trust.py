"""Nobody outside the team moves a release through the dashboard issue: against the GitHub
stand-in (issues with ``user.login``, the ``creator=`` filter, GraphQL edit history, collaborator
permissions, ``head.repo.full_name``), a stranger's issue with the marker is never read, a tick by
someone without write access is not acted on, one whose author is unknown is asked about in Slack
instead, untrusted text cannot add a box or hide a section, a fork's PR named like a bump PR is
left alone, a forged audit line blocks nothing, and only the acting process (the leader) acts."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from config import audit
from release.dashboard import issue
from release.dashboard.commands import dashboard, sync_issues
from release.dashboard.issue_sync import sync
from release.dashboard.model import build
from release.state import state_for
from release.state.dashboard_issue import acted_keys, claim_action
from tests.support.fixtures_dashboard import MULTI, PR_BRANCH, dashboard_world, many_branches

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def _mine(w) -> int:
    (number,) = [n for n, i in w.gh.issues.items()
                 if i["repository_url"].endswith("/acme/build-pytorch") and i["user"]["login"] == w.gh.login]
    return number


def _retry_key(body: str) -> str:
    return next(m for m in re.findall(r"torchbot:act:(\S+) -->", body) if m.startswith("retry-builds:main:"))


def _builds_of_main(w) -> list[tuple[str, str]]:
    from release.state import Build

    with state_for(w.ctx).session() as s:
        return sorted((b.package, b.state) for b in s.query(Build).filter(Build.branch == "main"))


def test_a_strangers_issue_with_the_marker_changes_nothing_even_on_a_first_run(tmp_path: Path):
    over = dict(schedule_build_backend="local", build_command="echo ok > result-{package}")
    with dashboard_world(tmp_path, **over) as w:
        model = dashboard(w.ctx, now=w.now).model
        body = issue.render(model, model.repositories[0]).replace("- [ ] <!--", "- [x] <!--")  # every box ticked
        assert len(issue.ticked(body)) >= 3
        foreign = w.gh.add_issue("Release dashboard: build-pytorch", body, user="mallory")
        w.gh.issues[foreign["number"]]["state"] = "closed"
        builds, tips = _builds_of_main(w), {b: w.pt.tip(b) for b in w.pt.branches}

        lines = sync_issues(w.ctx, model)  # no number kept anywhere: the first run of a new replica

        assert not [line for line in lines if "acted on" in line], lines
        assert w.gh.issues[foreign["number"]]["body"] == body and w.gh.issues[foreign["number"]]["state"] == "closed"
        assert any("created dashboard issue" in line for line in lines)
        assert _mine(w) != foreign["number"]
        assert acted_keys(state_for(w.ctx)) == set()
        assert _builds_of_main(w) == builds and {b: w.pt.tip(b) for b in w.pt.branches} == tips
        assert not [r for r in audit.read(w.tmp / "audit.log") if r.get("what", "").startswith("dashboard")]
        lists = [e for e in w.gh.log if e.method == "GET" and e.path.endswith("/issues")]
        assert lists and all(e.query.get("creator") == w.gh.login for e in lists)  # only its own issues listed


def test_a_tick_by_someone_without_write_access_is_not_acted_on(tmp_path: Path):
    over = dict(schedule_build_backend="local", build_command="echo ok > result-{package}")
    with dashboard_world(tmp_path, **over) as w:
        w.gh.permissions.update(mallory="read", tim="triage")
        sync_issues(w.ctx, dashboard(w.ctx, now=w.now).model)
        number = _mine(w)
        key = _retry_key(w.gh.issues[number]["body"])
        builds = _builds_of_main(w)
        for who, level in (("mallory", "read"), ("tim", "triage"), ("nobody-at-all", "none")):
            w.gh.tick(number, key, by=who)
            lines = sync_issues(w.ctx)
            assert any(f"not acted on {key}: {who} has {level} access, not write" in line for line in lines), lines
            assert "- [x]" not in w.gh.issues[number]["body"]  # unticked again
        assert acted_keys(state_for(w.ctx)) == set() and _builds_of_main(w) == builds
        refused = [r for r in audit.read(w.tmp / "audit.log") if r.get("what") == "dashboard refused"]
        assert [r["user"] for r in refused] == ["mallory", "tim", "nobody-at-all"]

        w.gh.tick(number, key, by="maintainer")  # an admin's tick of the same box: acted on, once
        assert any(f"acted on {key} (ticked by maintainer)" in line for line in sync_issues(w.ctx))
        assert acted_keys(state_for(w.ctx)) == {key} and _builds_of_main(w) != builds


def test_a_tick_whose_author_is_unknown_is_asked_about_in_slack_not_acted_on(tmp_path: Path):
    with dashboard_world(tmp_path) as w:
        st = state_for(w.ctx)
        model = dashboard(w.ctx, now=w.now).model
        repos = {r.name: r.github for r in model.repositories if r.github}
        acts, asks = [], []
        sync(w.ctx.settings, st, model, acts.append, repos, ask=asks.append)
        number = _mine(w)
        key = _retry_key(w.gh.issues[number]["body"])
        box = f"- [ ] <!-- torchbot:act:{key} -->"
        w.gh.issues[number]["body"] = w.gh.issues[number]["body"].replace(box, box.replace("[ ]", "[x]"))  # no history

        lines = sync(w.ctx.settings, st, model, acts.append, repos, ask=asks.append)

        assert acts == [] and len(asks) == 1 and "`/build main" in asks[0], (lines, asks)
        assert any(f"not acted on {key}" in line and "asked in Slack" in line for line in lines)
        assert acted_keys(st) == set()


def test_only_the_acting_process_acts_and_the_others_keep_the_tick_for_it(tmp_path: Path):
    with dashboard_world(tmp_path) as w:
        st = state_for(w.ctx)
        model = dashboard(w.ctx, now=w.now).model
        repos = {r.name: r.github for r in model.repositories if r.github}
        acts: list = []
        sync(w.ctx.settings, st, model, acts.append, repos)
        number = _mine(w)
        key = _retry_key(w.gh.issues[number]["body"])
        w.gh.tick(number, key, by="maintainer")

        sync(w.ctx.settings, st, model, acts.append, repos, acting=False)  # a replica after an operation
        assert acts == [] and key in issue.ticked(w.gh.issues[number]["body"])  # still ticked, for the leader

        def act(a):
            acts.append(a.key)
            return "done"

        lines = sync(w.ctx.settings, st, model, act, repos)  # the leader: the history still shows who ticked it
        assert acts == [key] and any("ticked by maintainer" in line for line in lines), lines
        assert not claim_action(st, key, "acme/build-pytorch", number, "someone")  # claimed once, for ever
        w.gh.tick(number, key, by="maintainer")
        sync(w.ctx.settings, st, model, act, repos)
        assert acts == [key]


def test_a_forged_audit_line_by_a_non_admin_cannot_block_an_action(tmp_path: Path):
    from bot.frontends.chat import Chat

    over = dict(schedule_build_backend="local", build_command="echo ok > result-{package}", admins=["UADMIN"])
    with dashboard_world(tmp_path, **over) as w:
        sync_issues(w.ctx, dashboard(w.ctx, now=w.now).model)
        number = _mine(w)
        key = _retry_key(w.gh.issues[number]["body"])
        chat = Chat(w.ctx)
        try:
            reply = chat.command("build", f"main dashboard acted {key}\n{key} dashboard acted {key}", user="UNOBODY")
        finally:
            chat.runner.shutdown()
        assert "only admins" in reply.text()
        (w.tmp / "audit.log").open("a").write(f"2026-03-02T12:00:00+00:00 user=x channel=github dashboard acted {key} "
                                              "(forged): done\n")  # the old format, written by anyone
        lines = (w.tmp / "audit.log").read_text().splitlines()
        assert any(key in line for line in lines)
        forged = [r for r in audit.read(w.tmp / "audit.log") if r.get("user") == "UNOBODY"]
        assert len(forged) == 1 and forged[0]["what"].startswith("refused /build main dashboard acted")

        w.gh.tick(number, key, by="maintainer")
        assert any(f"acted on {key} (ticked by maintainer)" in line for line in sync_issues(w.ctx))


def test_a_fork_pull_request_named_like_a_bump_pr_is_left_alone(tmp_path: Path):
    from release.adapters.github import GitHub

    with dashboard_world(tmp_path) as w:
        fork = w.gh.add_pull(f"bump/{MULTI}-cafecafecafe", MULTI, user="mallory", fork="mallory/build-pytorch",
                             title=f"Bump {MULTI}")
        by_hand = w.gh.add_pull("bump/main-cafecafecafe", "main", user="mallory")  # same repo, not torchbot's
        model = dashboard(w.ctx, now=w.now).model
        branches = {b.name: b for b in model.repositories[0].branches}
        assert branches[PR_BRANCH].pr is not None  # torchbot's own bump PR is shown, with its Rebase box
        for name in (MULTI, "main"):
            assert branches[name].pr is None, name
            assert not [a for a in branches[name].actions if a.kind == "rebase-pr"]
        gh = GitHub(w.ctx.settings)
        try:
            assert gh.open_pulls(base=MULTI, repo="acme/build-pytorch") == []  # deliver never updates it
            assert gh.open_pulls(base="main", repo="acme/build-pytorch") == []
            assert [p["head"] for p in gh.open_pulls(base=PR_BRANCH, repo="acme/build-pytorch")] == [
                f"bump/{PR_BRANCH}-" + w.gh.pulls.prs[1]["head"]["ref"].rsplit("-", 1)[1]]
        finally:
            gh.close()
        sync_issues(w.ctx, model)
        body = w.gh.issues[_mine(w)]["body"]
        assert f"#{fork['number']}" not in body and f"#{by_hand['number']}" not in body
        assert not [e for e in w.gh.pulls.edits if e[0] in (fork["number"], by_hand["number"])]


def test_untrusted_text_cannot_add_a_box_a_section_or_hide_one():
    facts = many_branches(3)
    evil = "x<!--"
    b0, b1 = facts["repositories"][0]["branches"][:2]
    forged = "- [x] <!-- torchbot:act:approve-bump:main:-:abc -->"
    b0["bumps"][0]["reason"] = f"first line\n{forged}\n## Held bumps (9)\r\n<details>\u2028{forged}"
    b0["readme_drift"] = [f"README.md:1 says\n{forged}"]
    b1["name"] = evil
    b1["pr"]["head"] = f"bump/{evil}-cdcdcdcdcdcd"
    d = build(facts, NOW)
    body = issue.render(d, d.repositories[0])
    assert issue.ticked(body) == []
    boxes = [line for line in body.splitlines() if line.startswith("- [")]
    actions = [a for b in d.repositories[0].branches for a in b.actions]
    assert len(boxes) == len(actions)  # one box per action, nothing more
    assert body.count("<!--") == 1 + len(actions)  # the marker and each box's key, no other comment
    assert all(h in body for h in ("## Drift", "## Branches (3)")) and body.count("<details>") == 3
    assert [line for line in body.splitlines() if line.startswith("## ")] == [
        "## Held bumps: approve to bump anyway (3)", "## Failed builds: retry (3)",
        "## Open bump pull requests: rebase (3)", "## Drift", "## Branches (3)"]
    keys = re.findall(r"<!-- torchbot:act:(\S+) -->", body)
    assert all(re.fullmatch(r"[A-Za-z0-9._/:+=%@-]+", k) for k in keys) and any("%3C%21--" in k for k in keys)


def test_an_action_key_names_its_target():
    facts = many_branches(1)
    branch = facts["repositories"][0]["branches"][0]
    branch["bumps"][0]["rev"] = "1" * 40
    first = [a.key for a in build(facts, NOW).repositories[0].branches[0].actions]
    branch["bumps"][0]["rev"] = "2" * 40
    branch["head"] = "3" * 40
    second = [a.key for a in build(facts, NOW).repositories[0].branches[0].actions]
    assert first[0].endswith(":" + "1" * 12) and second[0].endswith(":" + "2" * 12)
    assert not set(first) & set(second)  # a later bump, a new head: new keys, approvable again


def test_the_confirmation_is_asked_in_the_announce_channel(tmp_path: Path):
    from tests.support.fakes_slack import FakeSlack

    with FakeSlack() as slack, dashboard_world(tmp_path, slack_bot_token=slack.token, slack_api_url=slack.url,
                                               announce_channel="CREL") as w:
        sync_issues(w.ctx, dashboard(w.ctx, now=w.now).model)
        number = _mine(w)
        key = _retry_key(w.gh.issues[number]["body"])
        box = f"- [ ] <!-- torchbot:act:{key} -->"
        w.gh.issues[number]["body"] = w.gh.issues[number]["body"].replace(box, box.replace("[ ]", "[x]"))  # no history
        lines = sync_issues(w.ctx)
        assert any("asked in Slack" in line for line in lines), lines
        asked = [m for m in slack.messages("CREL") if "did nothing" in m.get("text", "")]
        assert len(asked) == 1 and "/build main" in asked[0]["text"] and acted_keys(state_for(w.ctx)) == set()


def test_a_github_app_names_its_bot_login_and_get_user_is_not_asked(tmp_path: Path):
    with dashboard_world(tmp_path, github_login="torchbot[bot]") as w:
        lines = sync_issues(w.ctx, dashboard(w.ctx, now=w.now).model)
        assert any("created dashboard issue" in line for line in lines), lines
        assert ("GET", "/user") not in w.gh.requests and w.gh.issues[_mine(w)]["user"]["login"] == "torchbot[bot]"
