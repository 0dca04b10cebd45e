"""The dashboard as a GitHub issue body, in the manner of Renovate's Dependency Dashboard (pure).

One issue per repository, found again by its ``MARKER``. A section per state (held bumps waiting
for approval, failed builds, open bump pull requests, drift), each actionable row a checkbox
whose HTML comment names its action (``<!-- torchbot:act:KEY -->``), then one ``<details>`` per
branch. The body keeps within ``BUDGET`` characters (GitHub refuses more than 65,536): the
controls come first and are cut last; branch details are dropped from the end with a line saying
how many and where to see them.

Every text that comes from outside torchbot (branch names, held reasons, error texts, pull request
titles and URLs, README drift lines, user names) goes in through ``inline`` or ``code``: on one line,
HTML and markdown escaped, so it can never start a line (a box), a heading, a table row, an HTML
comment (``<!--`` in a branch name hides nothing) or a mention. Action keys in box markers are
``box_key``: anything outside a small alphabet percent-encoded, so a key cannot close its comment.
"""

from __future__ import annotations

import re

from release.dashboard.model import Action, BranchView, Dashboard, RepoView

LIMIT = 65536  # GitHub's maximum issue body
BUDGET = 60000  # what torchbot writes at most (room for GitHub's own counting of characters)
CONTROLS_BUDGET = 40000  # the checkbox sections at most; the rest goes to drift and branch details
WAITING_BUDGET = 6000  # branches behind their channel, waiting for their scheduled bump (no checkbox)
MARKER = "<!-- torchbot-dashboard:{repo} -->"
_BOX_RE = re.compile(r"^[-*] \[([ xX])\] <!-- torchbot:act:([A-Za-z0-9._/:+=%@-]+) -->", re.M)
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._/:+=@-]")
_CODE_SAFE = re.compile(r"^[A-Za-z0-9._/:+=@,~^ -]*$")
_MARKDOWN = re.compile(r"([\\`*_\[\]()|~!#])")
SECTIONS = (("approve-bump", "Held bumps: approve to bump anyway"),
            ("retry-builds", "Failed builds: retry"),
            ("rebase-pr", "Open bump pull requests: rebase"),
            ("recreate-pr", "Closed bump pull requests: recreate"))


def marker(repo: str) -> str:
    return MARKER.format(repo=repo)


def title(repo: str) -> str:
    return f"Release dashboard: {repo}"


def inline(text: object, limit: int | None = None) -> str:
    """Untrusted ``text`` made safe inside a markdown line: one line (every run of whitespace or
    control characters one space), at most ``limit`` characters, HTML and markdown escaped, no
    mention."""
    flat = " ".join("".join(" " if (c.isspace() or ord(c) < 32 or 0x7f <= ord(c) < 0xa0
                                    or c in "\u2028\u2029\u200b\ufeff") else c for c in str(text)).split())
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", flat).replace("@", "@\u2060")


def code(text: object) -> str:
    """Untrusted ``text`` (a branch name, a revision) as inline code when that is safe (no backtick,
    no markup), else as escaped plain text."""
    flat = " ".join(str(text).split())
    return f"`{flat}`" if flat and _CODE_SAFE.match(flat) else inline(flat)


def box_key(key: str) -> str:
    """An action key as it stands in a box marker: outside ``[A-Za-z0-9._/:+=@-]`` percent-encoded."""
    return _KEY_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), key)


def ticked(body: str) -> list[str]:
    """The action keys whose box is ticked (as ``box_key`` wrote them), in the order they appear."""
    return [m.group(2) for m in _BOX_RE.finditer(body or "") if m.group(1) in "xX"]


def _checkbox(a: Action, extra: str = "") -> str:
    return f"- [ ] <!-- torchbot:act:{box_key(a.key)} --> {inline(a.label, 300)}{extra}"


def _extra(a: Action, b: BranchView) -> str:
    if a.kind == "approve-bump":
        reasons = [x.reason for x in b.bumps if x.state == "held" and x.reason]
        return f": {inline(reasons[0], 300)}" if reasons else ""
    if a.kind == "recreate-pr":
        d = next((x for x in b.decisions if x.kind == "closed-unmerged" and a.key.endswith(f":{x.number}:{x.head}")),
                 None)
        return f": closed by {inline(d.by or 'someone')} on {inline((d.at or '?')[:10])}" if d else ""
    if a.kind == "rebase-pr" and b.pr is not None:
        url = str(b.pr.url or "")
        if url.startswith("https://") and _CODE_SAFE.match(url) and " " not in url:
            return f" ([#{inline(b.pr.number)}]({url}), {inline(b.pr.summary(), 300)})"
        return f" (#{inline(b.pr.number)}, {inline(b.pr.summary(), 300)})"
    return ""


def _age(days: int | None) -> str:
    return "age unknown" if days is None else f"{days} days old"


def details(b: BranchView) -> str:
    builds = b.builds
    lines = [f"<details><summary><b>{inline(b.name)}</b>: bump {inline(b.bump_state)}, "
             f"{builds['built']}/{builds['total']} built"
             + (f", {builds['failed']} failed" if builds["failed"] else "")
             + (", drift" if b.drift else "") + "</summary>", ""]
    lines.append(f"PyTorch {inline(b.pytorch or '?')}, Python {inline(b.python or '?')}, head {code(b.head[:12])}"
                 + (f", pairs with {code(b.pairs_with)}" if b.pairs_with else ""))
    lines.append("")
    lines.append("| pin | covers | date | behind | bump |")
    lines.append("|---|---|---|---|---|")
    for i, p in enumerate(b.pins):
        bump = b.bumps[i] if i < len(b.bumps) else (b.bumps[0] if b.bumps else None)
        behind = "at head" if p.current else (f"{p.behind_commits} commits" if p.behind_commits is not None else "?")
        lines.append(f"| {code(p.rev[:12])} | {inline(', '.join(p.labels))} | {inline((p.date or '?')[:10])} "
                     f"({_age(p.age_days)}) | {inline(behind)} of {inline(p.channel)} | "
                     f"{inline(bump.state) if bump else '?'} |")
    lines.append("")
    lines.append("| platform | built | failed | running | not built |")
    lines.append("|---|---|---|---|---|")
    for pb in b.platforms:
        lines.append(f"| {inline(pb.platform)} | {pb.built} | {pb.failed} | {pb.running} | {pb.not_built} |")
    lines.append("")
    lines.append(f"Published: {b.published} of {b.variants}. Next bump: {inline(b.next_bump or 'not scheduled')}.")
    lines.extend(f"- README: {inline(x, 500)}" for x in b.readme_drift[:10])
    lines.extend(f"- companion: {inline(x, 500)}" for x in b.companion_drift[:10])
    lines += ["", "</details>"]
    return "\n".join(lines)


def _fit(lines: list[str], budget: int, more: str) -> list[str]:
    """As many of ``lines`` as fit in ``budget`` characters, then ``more`` (with the count left)."""
    out, used = [], 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > budget - len(more) - 20:
            return [*out, more.format(n=len(lines) - i)]
        out.append(line)
        used += len(line) + 1
    return out


def render(d: Dashboard, repo: RepoView, budget: int = BUDGET) -> str:
    head = [marker(repo.name), f"# {inline(title(repo.name))}", "",
            f"Updated {inline(d.generated)} by torchbot from {len(repo.branches)} branches. Tick a box: torchbot "
            "acts on it at its next run, once, when whoever ticked it has write access to this repository "
            "(otherwise it asks in Slack first; torchbot's audit log records each action), and the box goes away. "
            "Edits by hand are overwritten.", ""]
    controls: list[str] = []
    by_branch = {b.name: b for b in repo.branches}
    for kind, heading in SECTIONS:
        rows = [(a, by_branch[a.branch]) for b in repo.branches for a in b.actions if a.kind == kind]
        if rows:
            controls += [f"## {heading} ({len(rows)})", ""]
            controls += [_checkbox(a, _extra(a, b)) for a, b in rows]
            controls.append("")
    if not controls:
        controls = ["## Nothing to act on", "", "No held bumps, failed builds or open bump pull requests.", ""]
    controls = _fit(controls, CONTROLS_BUDGET, "- … and {n} more lines of actions: run `torchbot dashboard`.")
    waiting = [f"- {code(b.name)}: {inline(behind)}; next bump {inline(b.next_bump[:16].replace('T', ' '))} UTC"
               for b in repo.branches if b.bump_state in ("unknown", "bumped") and b.next_bump
               and (behind := ", ".join(f"{p.rev[:7]} {p.behind_commits} commits behind {p.channel}"
                                        for p in b.pins if p.behind_commits))]
    if waiting:
        waiting = _fit(waiting, WAITING_BUDGET, "- … and {n} more branches behind their channel.")
        controls = [*controls, f"## Awaiting schedule ({len(waiting)})", "", *waiting, ""]
    decided = [f"- {code(b.name)}: {inline(d.text(), 500)}" for b in repo.branches for d in b.decisions
               if d.kind != "closed-unmerged"]
    if decided:
        decided = _fit(decided, WAITING_BUDGET, "- … and {n} more decisions: run `torchbot dashboard`.")
        controls = [*controls, f"## People's decisions torchbot respects ({len(decided)})", "", *decided, ""]
    drift = [f"- {code(b.name)}: {inline(x, 500)}" for b in repo.branches for x in [*b.readme_drift,
                                                                                    *b.companion_drift]]
    rest = ["## Drift", "", *(drift or ["None: READMEs and companions match."]), ""]
    rest += [f"## Branches ({len(repo.branches)})", ""] + [details(b) for b in repo.branches]
    used = sum(len(x) + 1 for x in head + controls)
    rest = _fit(rest, budget - used, "\n… {n} more sections left out to keep this issue under GitHub's size limit: "
                                     "`torchbot dashboard` shows every branch.")
    body = "\n".join(head + controls + rest)
    return body[:budget]


def who_ticked(edits: list[dict], key: str) -> str | None:
    """Who ticked the box of ``key`` (as ``ticked`` gives it), from the issue's edit history
    (``[{"editor", "body"}]``, oldest first, each body the one that edit left): the editor of the
    newest edit that ticked it, the version before it unticked. None when the history does not
    show it: no history, a version without its body, or the newest version not ticked (GitHub's
    history behind the body)."""
    if not edits:
        return None
    states = [None if e.get("body") is None else key in ticked(e["body"]) for e in edits]
    if states[-1] is not True:
        return None
    i = len(states) - 1
    while i > 0 and states[i - 1] is True:
        i -= 1
    if i > 0 and states[i - 1] is None:
        return None
    editor = edits[i].get("editor")
    return editor if isinstance(editor, str) and editor else None
