"""The dashboard as a GitHub issue body, in the manner of Renovate's Dependency Dashboard (pure).

One issue per repository, found again by its ``MARKER``. A section per state (held bumps waiting
for approval, failed builds, open bump pull requests, drift), each actionable row a checkbox
whose HTML comment names its action (``<!-- torchbot:act:KEY -->``), then one ``<details>`` per
branch. The body keeps within ``BUDGET`` characters (GitHub refuses more than 65,536): the
controls come first and are cut last; branch details are dropped from the end with a line saying
how many and where to see them.
"""

from __future__ import annotations

import re

from release.dashboard.model import Action, BranchView, Dashboard, RepoView

LIMIT = 65536  # GitHub's maximum issue body
BUDGET = 60000  # what torchbot writes at most (room for GitHub's own counting of characters)
CONTROLS_BUDGET = 40000  # the checkbox sections at most; the rest goes to drift and branch details
WAITING_BUDGET = 6000  # branches behind their channel, waiting for their scheduled bump (no checkbox)
MARKER = "<!-- torchbot-dashboard:{repo} -->"
_BOX_RE = re.compile(r"^\s*[-*] \[([ xX])\] <!-- torchbot:act:(\S+) -->", re.M)
SECTIONS = (("approve-bump", "Held bumps: approve to bump anyway"),
            ("retry-builds", "Failed builds: retry"),
            ("rebase-pr", "Open bump pull requests: rebase"))


def marker(repo: str) -> str:
    return MARKER.format(repo=repo)


def title(repo: str) -> str:
    return f"Release dashboard: {repo}"


def ticked(body: str) -> list[str]:
    """The action keys whose box is ticked, in the order they appear."""
    return [m.group(2) for m in _BOX_RE.finditer(body or "") if m.group(1) in "xX"]


def _checkbox(a: Action, extra: str = "") -> str:
    return f"- [ ] <!-- torchbot:act:{a.key} --> {a.label}{extra}"


def _extra(a: Action, b: BranchView) -> str:
    if a.kind == "approve-bump":
        reasons = [x.reason for x in b.bumps if x.state == "held" and x.reason]
        return f": {reasons[0][:300]}" if reasons else ""
    if a.kind == "rebase-pr" and b.pr is not None:
        return f" ([#{b.pr.number}]({b.pr.url}), {b.pr.summary()})" if b.pr.url else f" ({b.pr.summary()})"
    return ""


def _age(days: int | None) -> str:
    return "age unknown" if days is None else f"{days} days old"


def details(b: BranchView) -> str:
    builds = b.builds
    lines = [f"<details><summary><b>{b.name}</b>: bump {b.bump_state}, {builds['built']}/{builds['total']} built"
             + (f", {builds['failed']} failed" if builds["failed"] else "")
             + (", drift" if b.drift else "") + "</summary>", ""]
    lines.append(f"PyTorch {b.pytorch or '?'}, Python {b.python or '?'}, head `{b.head[:12]}`"
                 + (f", pairs with `{b.pairs_with}`" if b.pairs_with else ""))
    lines.append("")
    lines.append("| pin | covers | date | behind | bump |")
    lines.append("|---|---|---|---|---|")
    for i, p in enumerate(b.pins):
        bump = b.bumps[i] if i < len(b.bumps) else (b.bumps[0] if b.bumps else None)
        behind = "at head" if p.current else (f"{p.behind_commits} commits" if p.behind_commits is not None else "?")
        lines.append(f"| `{p.rev[:12]}` | {', '.join(p.labels)} | {(p.date or '?')[:10]} ({_age(p.age_days)}) "
                     f"| {behind} of {p.channel} | {bump.state if bump else '?'} |")
    lines.append("")
    lines.append("| platform | built | failed | running | not built |")
    lines.append("|---|---|---|---|---|")
    for pb in b.platforms:
        lines.append(f"| {pb.platform} | {pb.built} | {pb.failed} | {pb.running} | {pb.not_built} |")
    lines.append("")
    lines.append(f"Published: {b.published} of {b.variants}. Next bump: {b.next_bump or 'not scheduled'}.")
    lines.extend(f"- README: {x}" for x in b.readme_drift[:10])
    lines.extend(f"- companion: {x}" for x in b.companion_drift[:10])
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
    head = [marker(repo.name), f"# {title(repo.name)}", "",
            f"Updated {d.generated} by torchbot from {len(repo.branches)} branches. Tick a box: torchbot acts on it "
            "at its next run, once (anyone who may edit this issue may tick; torchbot's audit log records "
            "each action) and the box goes away. Edits by hand are overwritten.", ""]
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
    waiting = [f"- `{b.name}`: {behind}; next bump {b.next_bump[:16].replace('T', ' ')} UTC"
               for b in repo.branches if b.bump_state in ("unknown", "bumped") and b.next_bump
               and (behind := ", ".join(f"{p.rev[:7]} {p.behind_commits} commits behind {p.channel}"
                                        for p in b.pins if p.behind_commits))]
    if waiting:
        waiting = _fit(waiting, WAITING_BUDGET, "- … and {n} more branches behind their channel.")
        controls = [*controls, f"## Awaiting schedule ({len(waiting)})", "", *waiting, ""]
    drift = [f"- `{b.name}`: {x}" for b in repo.branches for x in [*b.readme_drift, *b.companion_drift]]
    rest = ["## Drift", "", *(drift or ["None: READMEs and companions match."]), ""]
    rest += [f"## Branches ({len(repo.branches)})", ""] + [details(b) for b in repo.branches]
    used = sum(len(x) + 1 for x in head + controls)
    rest = _fit(rest, budget - used, "\n… {n} more sections left out to keep this issue under GitHub's size limit: "
                                     "`torchbot dashboard` shows every branch.")
    body = "\n".join(head + controls + rest)
    return body[:budget]
