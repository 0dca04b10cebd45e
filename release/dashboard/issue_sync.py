"""Keeping each repository's dashboard issue on GitHub (the edge of ``release.dashboard.issue``).

``sync(settings, st, model, act, repos, acting=...)``: for each repository with a GitHub name,

1. find its issue: only one torchbot created itself (its ``user.login`` is the token's own login,
   ``GET /user``) and that carries the repository's marker. The number is kept in the state DB
   (``release.state.dashboard_issue``); without it, torchbot's own issues are listed
   (``creator=<login>``), never anyone else's: an issue a stranger opened with the marker and a
   ticked box is never read, adopted or reopened, even on a first run;
2. when ``acting`` (the schedule's leader; see ``commands.sync_issues``), act on the ticked
   boxes, each action key (which names its target: the revision or head it acts on) once ever:
   the key is claimed in the state DB before acting, so no second run or process acts again.
   A box is acted on only when whoever ticked it (the issue's edit history, GraphQL
   ``userContentEdits``) has write access (``collaborators/{user}/permission``); a tick by
   anyone else is refused, and one whose author cannot be established is not acted on: torchbot
   asks for confirmation in Slack instead (``ask``);
3. record each decision in the audit log (JSON lines), then write the new body (boxes unticked)
   in place; a process that does not act keeps the ticked boxes ticked for the leader. Returns one
   line per thing done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from config import audit
from config.errors import TorchbotError
from release.dashboard import issue as render_issue
from release.dashboard.model import Action, Dashboard

log = logging.getLogger("torchbot.dashboard")


def _ours(found: dict | None, name: str, me: str) -> bool:
    """An issue torchbot itself created, carrying ``name``'s marker."""
    if not isinstance(found, dict):
        return False
    user = found.get("user") if isinstance(found.get("user"), dict) else {}
    return (str(user.get("login") or "").lower() == me.lower()
            and render_issue.marker(name) in str(found.get("body") or ""))


def find_issue(gh, repo: str, name: str, st, me: str) -> dict | None:
    """``name``'s dashboard issue in ``repo``: the one the state DB names, else torchbot's own
    issue with the marker; never an issue anybody else created."""
    from release.state.dashboard_issue import issue_number

    kept = issue_number(st, repo)
    if kept is not None:
        found = gh.issue(repo, kept[0])
        if _ours(found, name, me):
            return found
    for i in gh.issues(repo, creator=me):
        if _ours(i, name, me):
            return i
    return None


def _plain(text: str) -> str:
    """Untrusted text (a branch name in a label or command) for a question in Slack: one line, no
    backtick to close the code span it sits in (``ask`` escapes ``&<>``)."""
    return " ".join(str(text).split()).replace("`", "ˋ")[:300]


def _record(settings, **fields) -> None:
    audit.append(settings.audit_log, audit.line(channel="github", **fields))


def sync(settings, st, model: Dashboard, act: Callable[[Action], str], repos: dict[str, str],
         rebuild: Callable[[], Dashboard] | None = None, *, acting: bool = True,
         ask: Callable[[str], None] | None = None) -> list[str]:
    """``repos``: repository name (its kind) -> ``owner/name`` on GitHub; ``rebuild()`` gives the
    model again once an action changed something (the body then shows what it did); ``acting``:
    whether this process acts on ticked boxes (the leader) or only writes the body; ``ask(text)``
    asks the team in Slack to confirm an action whose ticker is unknown."""
    from release.adapters.github import GitHub

    lines: list[str] = []
    gh = GitHub(settings)
    try:
        me = gh.login()
        for shown in list(model.repositories):
            rv = shown
            repo = repos.get(rv.name)
            if not repo:
                continue
            try:
                found = find_issue(gh, repo, rv.name, st, me)
                acted = _act(settings, st, gh, repo, rv, found, me, act, ask) if acting else []
                lines += acted
                if any(": acted on " in line for line in acted) and rebuild is not None:
                    model = rebuild()
                    rv = next((r for r in model.repositories if r.name == shown.name), shown)
                keep = [] if acting or found is None else render_issue.ticked(found.get("body") or "")
                lines.append(_write(gh, st, repo, rv, model, found, me, keep))
            except TorchbotError as err:
                lines.append(f"{rv.name}: dashboard issue not updated: {err.message}")
    except TorchbotError as err:
        lines.append(f"dashboard issues not updated: {err.message}")
    finally:
        gh.close()
    return lines


def _ticker(gh, repo: str, number: int, key: str, history: dict) -> tuple[str | None, str]:
    """(who ticked ``key``, why not known)."""
    if "edits" not in history:
        try:
            history["edits"], history["why"] = gh.issue_edits(repo, number), ""
        except TorchbotError as err:
            history["edits"], history["why"] = [], err.message
    who = render_issue.who_ticked(history["edits"], key)
    return who, history["why"] or "the issue's edit history does not show who ticked it"


def _act(settings, st, gh, repo, rv, found, me, act, ask) -> list[str]:
    """Act on the ticked boxes of the repository's issue (each key once, by a writer); its lines."""
    from release.adapters.github import WRITE
    from release.state.dashboard_issue import acted_keys, claim_action, finish_action

    if found is None or found.get("state") != "open":
        return []
    lines: list[str] = []
    number = found["number"]
    where = f"{repo}#{number}"
    actions = {render_issue.box_key(a.key): a for b in rv.branches for a in b.actions}
    keys = render_issue.ticked(found.get("body") or "")
    done = acted_keys(st, repo) if keys else set()
    history: dict = {}
    for key in keys:
        action = actions.get(key)
        if action is None or action.key in done:
            continue  # acted on before, or the row is gone: the rewrite unticks it
        who, why = _ticker(gh, repo, number, key, history)
        if who is None:
            text = (f"A box of the dashboard issue {where} was ticked ({_plain(action.label)}), but {why}, so torchbot "
                    f"did nothing. If it should be done, an admin can run `/{_plain(action.command)}`.")
            if ask is not None:
                ask(text)
            _record(settings, user="", what="dashboard asked", key=action.key, issue=where, result=why)
            lines.append(f"{rv.name}: not acted on {action.key}: {why}; asked in Slack for confirmation")
            continue
        if who.lower() == me.lower():
            _record(settings, user=who, what="dashboard refused", key=action.key, issue=where,
                    result="ticked in torchbot's own edit")
            lines.append(f"{rv.name}: not acted on {action.key}: the tick is in torchbot's own edit")
            continue
        try:
            level = gh.permission(repo, who)
        except TorchbotError as err:
            text = (f"{who} ticked a box of the dashboard issue {where} ({_plain(action.label)}), but their "
                    f"access could not be read ({err.message}), so torchbot did nothing. An admin can run "
                    f"`/{_plain(action.command)}`.")
            if ask is not None:
                ask(text)
            lines.append(f"{rv.name}: not acted on {action.key}: the permission of {who} is unknown; asked in Slack")
            continue
        if level not in WRITE:
            _record(settings, user=who, what="dashboard refused", key=action.key, issue=where,
                    result=f"{level} access, not write")
            lines.append(f"{rv.name}: not acted on {action.key}: {who} has {level} access, not write")
            continue
        if not claim_action(st, action.key, repo, number, who):
            continue  # another run or process claimed it first
        try:
            result = act(action)
            state = "done"
        except TorchbotError as err:
            result, state = f"refused: {err.message}", "refused"
        finish_action(st, action.key, state, result)
        _record(settings, user=who, what="dashboard acted", key=action.key, issue=where, result=result)
        lines.append(f"{rv.name}: acted on {action.key} (ticked by {who}): {' '.join(str(result).split())[:300]}")
    return lines


def _write(gh, st, repo, rv, model, found, me, keep: list[str] = ()) -> str:
    """Create or edit the issue; ``keep``: boxes that stay ticked (a process that does not act
    leaves them to the leader)."""
    from release.state.dashboard_issue import keep_issue

    body = render_issue.render(model, rv)
    for key in keep:
        box = f"- [ ] <!-- torchbot:act:{key} -->"
        body = body.replace(box, box.replace("[ ]", "[x]"), 1)
    if found is None:
        made = gh.create_issue(repo, render_issue.title(rv.name), body)
        keep_issue(st, repo, made["number"], me)
        return f"{rv.name}: created dashboard issue #{made['number']} in {repo}"
    keep_issue(st, repo, found["number"], me)
    reopen = {"state": "open"} if found.get("state") == "closed" else {}  # its own, closed by hand: the dashboard
    gh.update_issue(repo, found["number"], body=body, title=render_issue.title(rv.name), **reopen)
    return f"{rv.name}: {'reopened' if reopen else 'updated'} dashboard issue #{found['number']} in {repo}"
