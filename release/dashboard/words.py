"""The dashboard in words, for chat (pure: the model in, sentences out). "Why is X held?", "what
changed since last week?": answered from the model's typed rows (each group's bump state, reason,
revision and time; the pull request; the actions a row offers) and from counts the caller read
from the state DB. Nothing here reads a sentence back."""

from __future__ import annotations

from datetime import datetime

from release.dashboard.model import BranchView, Dashboard


def _when(iso: str | None) -> str:
    return f" ({iso[:16].replace('T', ' ')} UTC)" if iso else ""


def _label(b: BranchView, d: Dashboard) -> str:
    """The branch's name, with its repository when another repository has a branch of that name."""
    twins = [x for x in d.branches if x.name == b.name]
    return f"{b.name} ({b.repository})" if len(twins) > 1 else b.name


def _reason(text: str) -> str:
    return text.strip().rstrip(".") or "no reason was recorded"


def held_sentence(b: BranchView, d: Dashboard) -> str:
    """Why the branch is held, group by group, and the command that moves it anyway; or, when it
    is not held, what its last bump did."""
    name = _label(b, d)
    held = [x for x in b.bumps if x.state == "held"]
    if held:
        parts = [f"{name}{f' ({x.group})' if x.group else ''} is held: {_reason(x.reason)}{_when(x.when)}."
                 for x in held]
        approve = [a for a in b.actions if a.kind == "approve-bump"]
        if approve:
            parts.append("To move it anyway: " + ", ".join(f"`/{a.command}`" for a in approve)
                         + " (admins; a plan first).")
        return " ".join(parts)
    state, last = b.bump_state, next((x for x in b.bumps if x.when), None)
    when = _when(last.when if last else None)
    if state == "pr-open" and b.pr is not None:
        return f"{name} is not held: its bump is pull request #{b.pr.number} ({b.pr.summary()}){when}."
    if state == "bumped":
        return f"{name} is not held: its last bump moved it{when}."
    if state == "current":
        return f"{name} is not held: its pins are at their channel's head{when}."
    if state == "skipped":
        why = "; ".join(dict.fromkeys(_reason(x.reason) for x in b.bumps if x.reason))
        return f"{name} is not held: the weekly bump skips it ({why or 'not scheduled'})."
    why = "; ".join(dict.fromkeys(_reason(x.reason) for x in b.bumps if x.reason))
    return f"{name} is not held: no bump of it is recorded yet" + (f" ({why})." if why else ".")


def why_held(d: Dashboard, names: list[str]) -> str:
    """The named branches, each in a sentence; without names, every held branch (or that none is)."""
    if names:
        rows = [b for b in d.branches if b.name in names]
        unknown = [n for n in names if not any(b.name == n for b in rows)]
        if unknown and not rows:
            return f"No branch {', '.join(unknown)} on the dashboard."
        return "\n".join(held_sentence(b, d) for b in rows)
    held = [b for b in d.branches if any(x.state == "held" for x in b.bumps)]
    if not held:
        return "No bump is held: the last bump of every branch moved it, found it current, opened a pull request " \
               "or has not run yet."
    return f"{len(held)} branch(es) held:\n" + "\n".join(f"- {held_sentence(b, d)}" for b in held)


def changes(d: Dashboard, since: datetime, until: datetime, builds: dict[str, dict[str, int]],
            published: dict[str, int]) -> str:
    """What changed from ``since`` to ``until`` (both aware, UTC): bumps that ran (moved, held, opened a
    pull request), builds that finished (``builds``: branch -> {state: count}) and publishes
    (``published``: branch -> count)."""
    cut, end = since.isoformat(timespec="seconds"), until.isoformat(timespec="seconds")
    lines = []
    current = 0
    for b in d.branches:
        for x in b.bumps:
            if not x.when or not cut <= x.when.replace("Z", "+00:00") <= end:
                continue
            group = f" ({x.group})" if x.group else ""
            name = _label(b, d)
            if x.state == "held":
                lines.append(f"- {name}{group}: bump held: {_reason(x.reason)}.")
            elif x.state == "pr-open" and b.pr is not None:
                lines.append(f"- {name}{group}: bump pull request #{b.pr.number} ({b.pr.summary()}).")
            elif x.state == "bumped":
                to = f" to nixpkgs {x.rev[:7]}" if x.rev else ""
                torch = f", PyTorch {x.pytorch}" if x.pytorch else ""
                merged = b.pr is not None and getattr(b.pr, "state", None) == "merged"  # the record's PR state
                how = f" (pull request #{b.pr.number} merged)" if merged else ""
                lines.append(f"- {name}{group}: bumped{to}{torch}{how}.")
            elif x.state == "current":
                current += 1
    if current:
        lines.append(f"- {current} pin group(s) were already at their channel's head.")
    for branch, states in sorted(builds.items()):
        counts = ", ".join(f"{n} {s}" for s, n in sorted(states.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"- {branch}: builds finished: {counts}.")
    for branch, n in sorted(published.items()):
        lines.append(f"- {branch}: {n} variant(s) published.")
    day = since.strftime("%Y-%m-%d %H:%M UTC")
    if not lines:
        return f"Nothing changed since {day}: no bump ran, no build finished, nothing was published."
    return f"Since {day}:\n" + "\n".join(lines)


def summary(d: Dashboard) -> str:
    """The dashboard in one sentence: branches by bump state, builds and publishes, what needs a human."""
    states: dict[str, int] = {}
    for b in d.branches:
        states[b.bump_state] = states.get(b.bump_state, 0) + 1
    said = {"held": "held", "pr-open": "with a bump pull request open", "bumped": "bumped", "current": "current",
            "skipped": "skipped by the weekly bump", "unknown": "not bumped yet"}
    by_state = ", ".join(f"{n} {said.get(s, s)}" for s, n in sorted(states.items(), key=lambda kv: -kv[1]))
    built = sum(b.builds["built"] for b in d.branches)
    variants = sum(b.variants for b in d.branches)
    published = sum(b.published for b in d.branches)
    needs = f"{len(d.needs)} thing(s) need a human" if d.needs else "nothing needs a human"
    return (f"{len(d.branches)} branches in {len(d.repositories)} repositories: {by_state or 'none'}; "
            f"{built} of {variants} variants built at their heads, {published} published; {needs}.")
