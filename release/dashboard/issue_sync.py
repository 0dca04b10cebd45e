"""Keeping each repository's dashboard issue on GitHub (the edge of ``release.dashboard.issue``).

``sync(settings, model, act, audit)``: for each repository with a GitHub name, find its issue
(the number kept in the cache directory, else the marker in the body among the repository's
issues, else a new issue), act on the ticked boxes of the body as it is now, each action once
(``act(action) -> str``; a key already in the audit log is not acted on again, so an edit that
failed does not repeat it), record each in the audit log, then write the new body (boxes
unticked) in place. Returns one line per thing done.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from config.errors import TorchbotError
from release.dashboard import issue as render_issue
from release.dashboard.collect import cache_file
from release.dashboard.model import Action, Dashboard

log = logging.getLogger("torchbot.dashboard")
NUMBERS = "dashboard-issues.json"  # repository -> its issue number, in the cache directory


def _numbers(settings) -> dict[str, int]:
    path = cache_file(settings, NUMBERS)
    try:
        return json.loads(path.read_text()) if path else {}
    except (OSError, ValueError):
        return {}


def _keep(settings, numbers: dict[str, int]) -> None:
    path = cache_file(settings, NUMBERS)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(numbers))
    except OSError as err:
        log.warning("could not keep the dashboard issue numbers in %s: %s", path, err)


def acted_keys(audit_log: Path) -> set[str]:
    """Action keys the audit log says were acted on already."""
    out = set()
    try:
        with open(audit_log, encoding="utf-8") as fh:
            for line in fh:
                if " dashboard acted " in line:
                    out.add(line.split(" dashboard acted ", 1)[1].split()[0])
    except OSError:
        pass
    return out


def audit_line(settings, who: str, key: str, where: str, result: str) -> None:
    line = (f"{datetime.now(UTC).isoformat(timespec='seconds')} user={who} channel=github dashboard acted {key} "
            f"({where}): {' '.join(result.split())[:300]}")
    try:
        with open(settings.audit_log, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:
        log.warning("audit log %s is not writable", settings.audit_log)


def find_issue(gh, repo: str, numbers: dict[str, int], name: str) -> dict | None:
    number = numbers.get(name)
    if number:
        found = gh.issue(repo, number)
        if found is not None and render_issue.marker(name) in (found.get("body") or ""):
            return found
    for i in gh.issues(repo):
        if render_issue.marker(name) in (i.get("body") or ""):
            return i
    return None


def sync(settings, model: Dashboard, act: Callable[[Action], str], repos: dict[str, str],
         rebuild: Callable[[], Dashboard] | None = None) -> list[str]:
    """``repos``: repository name (its kind) -> ``owner/name`` on GitHub; ``rebuild()`` gives the
    model again once an action changed something (the body then shows what it did)."""
    from release.adapters.github import GitHub

    lines: list[str] = []
    numbers = _numbers(settings)
    done = acted_keys(settings.audit_log)
    gh = GitHub(settings)
    try:
        for shown in list(model.repositories):
            rv = shown
            repo = repos.get(rv.name)
            if not repo:
                continue
            try:
                acted, found = _act(settings, gh, repo, rv, numbers, done, act)
                lines += acted
                if acted and rebuild is not None:
                    model = rebuild()
                    rv = next((r for r in model.repositories if r.name == shown.name), shown)
                lines.append(_write(gh, repo, rv, model, numbers, found))
            except TorchbotError as err:
                lines.append(f"{rv.name}: dashboard issue not updated: {err.message}")
    finally:
        gh.close()
        _keep(settings, numbers)
    return lines


def _act(settings, gh, repo, rv, numbers, done, act) -> tuple[list[str], dict | None]:
    """Act on the ticked boxes of the repository's issue (each key once); (lines, the issue)."""
    lines = []
    found = find_issue(gh, repo, numbers, rv.name)
    if found is None or found.get("state") != "open":
        return lines, found
    actions = {a.key: a for b in rv.branches for a in b.actions}
    for key in render_issue.ticked(found.get("body") or ""):
        if key in done:
            continue
        done.add(key)
        action = actions.get(key)
        if action is None:
            result = "nothing to do any more (the row is gone)"
        else:
            try:
                result = act(action)
            except TorchbotError as err:
                result = f"refused: {err.message}"
        audit_line(settings, "github-issue", key, f"{repo}#{found['number']}", result)
        lines.append(f"{rv.name}: acted on {key}: {result}")
    return lines, found


def _write(gh, repo, rv, model, numbers, found) -> str:
    body = render_issue.render(model, rv)
    if found is None:
        made = gh.create_issue(repo, render_issue.title(rv.name), body)
        numbers[rv.name] = made["number"]
        return f"{rv.name}: created dashboard issue #{made['number']} in {repo}"
    numbers[rv.name] = found["number"]
    reopen = {"state": "open"} if found.get("state") == "closed" else {}  # closed by hand: it is the dashboard
    gh.update_issue(repo, found["number"], body=body, title=render_issue.title(rv.name), **reopen)
    return f"{rv.name}: {'reopened' if reopen else 'updated'} dashboard issue #{found['number']} in {repo}"
