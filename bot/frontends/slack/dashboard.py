"""The dashboard in Block Kit: ``/torchbot dashboard`` and the App Home tab show the same blocks.

Within Slack's limits: at most ``MAX_BLOCKS`` blocks (50 in a message) and ``MAX_TEXT``
characters per text. Per repository a section of branch lines (one line per branch: bump state,
builds, oldest pin, drift), split over several sections when long; then what needs a human, one
section per item with a button when the row has an action (``dashboard_act``: retry failed
builds, approve a held bump, rebase a bump PR; a held bump with an open PR also links it). A
button does what the CLI would: it makes the chat command's plan, which only admins get, with
the usual Confirm and Cancel. In the App Home tab only admins see buttons (everyone else sees the
dashboard read-only), and a button's plan goes to the admin's own DM with torchbot."""

from __future__ import annotations

import json
from typing import Any

from bot.frontends.slack.text import escape, inline
from release.dashboard.model import BranchView, Dashboard, Need

MAX_BLOCKS = 50
MAX_TEXT = 2900
ACTION_ID = "dashboard_act"
ICON = {"held": ":red_circle:", "pr-open": ":large_yellow_circle:", "bumped": ":large_blue_circle:",
        "current": ":white_check_mark:", "unknown": ":white_circle:"}
BUTTON = {"approve-bump": "Approve bump", "retry-builds": "Retry failed", "rebase-pr": "Rebase PR",
          "recreate-pr": "Recreate PR"}


def branch_line(b: BranchView) -> str:
    c = b.builds
    builds = f"{c['built']}/{c['total']} built" + (f", *{c['failed']} failed*" if c["failed"] else "") + (
        f", {c['running']} running" if c["running"] else "")
    age = b.oldest_pin_days
    pins = f"{len(b.pins)} pins" if len(b.pins) > 1 else "pin"
    pin = f"{pins} {age}d old" if age is not None else f"{pins} age ?"
    drift = []
    if b.readme_drift:
        drift.append(f"README {len(b.readme_drift)}")
    if b.companion_drift:
        drift.append(f"companion {len(b.companion_drift)}")
    state = b.bump_state
    if state == "pr-open" and b.pr is not None and b.pr.url:
        state = f"<{b.pr.url}|PR #{b.pr.number}>"
    return (f"{ICON.get(b.bump_state, '')} `{inline(b.name, 200)}` {state} · {builds} · {pin}"
            + (f" · drift: {', '.join(drift)}" if drift else ""))


def _sections(lines: list[str], room: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cur = ""
    for i, line in enumerate(lines):
        if len(cur) + len(line) + 1 > MAX_TEXT:
            if len(out) + 1 >= room:
                cur += f"\n… and {len(lines) - i} more branches (`torchbot dashboard`)"
                break
            out.append(cur)
            cur = ""
        cur = f"{cur}\n{line}" if cur else line
    if cur:
        out.append(cur)
    return [{"type": "section", "text": {"type": "mrkdwn", "text": t[:MAX_TEXT]}} for t in out]


READ_ONLY = "Read-only: the buttons are for admins (TORCHBOT_ADMINS or the admin user group)."


def need_block(n: Need, actions: bool = True) -> dict[str, Any]:
    text = f"*{inline(n.repository, 100)} `{inline(n.branch, 200)}`*: {inline(n.text)}"  # untrusted, one line
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_TEXT]}}
    if n.action is not None and actions:
        value = json.dumps({"repo": n.action.repository, "key": n.action.key})
        block["accessory"] = {"type": "button", "action_id": ACTION_ID, "value": value[:2000],
                              "text": {"type": "plain_text", "text": BUTTON.get(n.action.kind, "Act")},
                              **({"style": "danger"} if n.kind == "held" else {})}
    return block


def blocks(d: Dashboard, actions: bool = True) -> list[dict[str, Any]]:
    """The dashboard's blocks; without ``actions`` (a non-admin's App Home) the rows carry no button."""
    c = [b.builds for b in d.branches]
    head = (f"{len(d.branches)} branches · {sum(x['built'] for x in c)}/{sum(x['total'] for x in c)} built · "
            f"{sum(x['failed'] for x in c)} failed · {len(d.needs)} need a human")
    out: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Release dashboard"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": escape(f"{head} · {d.generated}")}]},
    ]
    repo_room = (MAX_BLOCKS - 14) // max(1, len(d.repositories))
    for r in d.repositories:
        out.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(r.name)}*"}})
        out += _sections([branch_line(b) for b in r.branches], max(1, repo_room - 1))
    out.append({"type": "divider"})
    if not d.needs:
        out.append({"type": "section", "text": {"type": "mrkdwn", "text": "Nothing needs a human."}})
        return out
    out.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*Needs a human ({len(d.needs)})*"}})
    room = MAX_BLOCKS - len(out) - 1
    shown = d.needs[:room]
    out += [need_block(n, actions) for n in shown]
    if len(d.needs) > len(shown):
        out.append({"type": "context", "elements": [{"type": "mrkdwn", "text": escape(
            f"… and {len(d.needs) - len(shown)} more: `torchbot dashboard` or the dashboard issue")}]})
    return out


def summary(d: Dashboard) -> str:
    return f"Release dashboard: {len(d.branches)} branches, {len(d.needs)} need a human"


def home_view(d: Dashboard, admin: bool = True) -> dict[str, Any]:
    """The App Home tab: the dashboard, with its buttons for an admin and read-only for anyone else
    (a button's answer goes to the admin's DM with torchbot: an App Home click has no channel and
    no response URL)."""
    out = blocks(d, actions=admin)
    if not admin:
        out.insert(2, {"type": "context", "elements": [{"type": "mrkdwn", "text": READ_ONLY}]})
    return {"type": "home", "blocks": out[:100]}


def find_action(d: Dashboard, value: str):
    """The action a button's value names, on the dashboard as it is now (None when gone)."""
    try:
        want = json.loads(value)
    except ValueError:
        return None
    for b in d.branches:
        for a in b.actions:
            if a.repository == want.get("repo") and a.key == want.get("key"):
                return a
    return None
