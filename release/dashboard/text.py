"""The dashboard in a terminal: ``rich_tables`` (one rich table per repository, a row per branch,
colour for states, then what needs a human) and ``plain`` (the same rows as aligned text, for a
pipe, a log or a test). Both render only the model."""

from __future__ import annotations

from release.dashboard.model import BranchView, Dashboard

COLUMNS = ("branch", "pytorch", "pins (age)", "behind", "bump", "builds", "published", "drift", "next bump")
COMPACT = ("branch", "pytorch", "pin", "bump", "built", "published")  # a narrow terminal: what a row keeps whole
WIDE_COLUMNS = ("branch", "pytorch", "pins (age)", "behind", "bump", "builds", "published", "drift", "next bump")
STYLE = {"held": "bold red", "pr-open": "yellow", "bumped": "cyan", "current": "green", "unknown": "dim",
         "failed": "red", "running": "yellow", "built": "green", "not built": "dim"}


def _age(days: int | None) -> str:
    return "?" if days is None else f"{days}d"


def pins_cell(b: BranchView) -> str:
    return ", ".join(f"{p.rev[:7]} ({_age(p.age_days)})" for p in b.pins) or "-"


def behind_cell(b: BranchView) -> str:
    parts = []
    for p in b.pins:
        if p.current:
            parts.append("at head")
        elif p.behind_commits is not None:
            parts.append(f"{p.behind_commits} commits" + (f"/{p.behind_days}d" if p.behind_days is not None else ""))
        else:
            parts.append("?")
    channel = b.pins[0].channel if b.pins else ""
    return (", ".join(parts) + (f" ({channel})" if channel else "")) if parts else "-"


def bump_cell(b: BranchView) -> str:
    state = b.bump_state
    if state == "pr-open" and b.pr:
        return f"PR #{b.pr.number} ({b.pr.summary()})"
    held = [x for x in b.bumps if x.state == "held"]
    if held:
        return f"held ({len(held)} of {len(b.bumps)} groups)" if len(b.bumps) > 1 else "held"
    return state


def compact_bump_cell(b: BranchView) -> str:
    """The bump state in a word or two: ``PR #12``, ``held``, ``held 1/3`` (groups), ``current``."""
    if b.bump_state == "pr-open" and b.pr:
        return f"PR #{b.pr.number}"
    held = [x for x in b.bumps if x.state == "held"]
    if held and len(b.bumps) > 1:
        return f"held {len(held)}/{len(b.bumps)}"
    return b.bump_state


def compact_row(b: BranchView) -> tuple[str, ...]:
    """A branch in the narrow layout: each pin (7 characters and its age) on a line of its own,
    failed and running builds under the built count."""
    c = b.builds
    built = f"{c['built']}/{c['total']}" + "".join(f"\n{c[k]} {k}" for k in ("failed", "running") if c[k])
    pins = "\n".join(f"{p.rev[:7]} {_age(p.age_days)}" for p in b.pins) or "-"
    return (b.name, b.pytorch or "?", pins, compact_bump_cell(b), built, f"{b.published}/{b.variants}")


def wide_row(b: BranchView) -> tuple[str, ...]:
    """A branch with every column, a pin per line (its age, then how far behind its channel)."""
    behind = []
    for p in b.pins:
        if p.current:
            behind.append("at head")
        elif p.behind_commits is not None:
            behind.append(f"{p.behind_commits} commits" + (f"/{p.behind_days}d" if p.behind_days is not None else ""))
        else:
            behind.append("?")
    channels = list(dict.fromkeys(p.channel for p in b.pins if p.channel))
    c = b.builds
    builds = f"{c['built']}/{c['total']} built" + "".join(f"\n{c[k]} {k}" for k in ("failed", "running") if c[k])
    return (b.name, b.pytorch or "?", "\n".join(f"{p.rev[:7]} ({_age(p.age_days)})" for p in b.pins) or "-",
            "\n".join(behind + channels) or "-", bump_cell(b), builds, f"{b.published}/{b.variants}",
            drift_cell(b), (b.next_bump or "-")[:16].replace("T", " "))


def wide_width(d: Dashboard) -> int:
    """The columns the wide table needs so that no cell is cut (its borders and padding included)."""
    rows = [WIDE_COLUMNS, *(wide_row(b) for b in d.branches)]
    return sum(max(len(line) for x in rows for line in x[i].split("\n")) + 3 for i in range(len(WIDE_COLUMNS))) + 1


def builds_cell(b: BranchView) -> str:
    c = b.builds
    extra = "".join(f", {c[k]} {k}" for k in ("failed", "running") if c[k])
    return f"{c['built']}/{c['total']} built{extra}"


def drift_cell(b: BranchView) -> str:
    parts = []
    if b.readme_drift:
        parts.append(f"README {len(b.readme_drift)}")
    if b.companion_drift:
        parts.append(f"companion {len(b.companion_drift)}")
    return ", ".join(parts) or "none"


def row(b: BranchView) -> tuple[str, ...]:
    return (b.name, b.pytorch or "?", pins_cell(b), behind_cell(b), bump_cell(b), builds_cell(b),
            f"{b.published}/{b.variants}", drift_cell(b), (b.next_bump or "-")[:16].replace("T", " "))


def _command(cmd: str, limit: int = 60) -> str:
    return "/" + (cmd if len(cmd) <= limit else cmd[: limit - 1] + "…")


def needs_lines(d: Dashboard, limit: int = 20) -> list[str]:
    lines = [f"{n.repository} {n.branch}: {n.text}" + (f"  [{_command(n.action.command)}]" if n.action else "")
             for n in d.needs[:limit]]
    if len(d.needs) > limit:
        lines.append(f"… and {len(d.needs) - limit} more (`torchbot dashboard --json`)")
    return lines


def plain(d: Dashboard) -> str:
    from release.dashboard.words import summary

    out = [summary(d), ""]
    for r in d.repositories:
        out.append(f"{r.name} ({r.path}): {len(r.branches)} branches")
        rows = [COLUMNS, *(row(b) for b in r.branches)]
        widths = [max(len(x[i]) for x in rows) for i in range(len(COLUMNS))]
        out.extend("  " + "  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip() for x in rows)
        out.append("")
    out.append(f"Needs a human ({len(d.needs)}):" if d.needs else "Needs a human: nothing.")
    out.extend("  - " + line for line in needs_lines(d))
    out.extend(f"note: {n}" for n in d.notes)
    return "\n".join(out)


def rich_tables(d: Dashboard, console) -> None:
    """Print the dashboard on a rich Console: every column when they fit whole (``wide_width``),
    else the compact columns, whose cells are never cut either (80 columns are enough)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    need = wide_width(d)
    wide = console.width >= need
    for r in d.repositories:
        title = f"{r.name}  ({len(r.branches)} branches)"
        if wide:
            t = Table(title=title, title_justify="left", header_style="bold")
            for c in WIDE_COLUMNS:
                t.add_column(c, no_wrap=True)
        else:
            t = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD,
                      pad_edge=False, show_edge=False, collapse_padding=True,
                      caption=f"behind, drift, next bump: a terminal {need} wide, or --json", caption_justify="left")
            for c in COMPACT:
                t.add_column(c, no_wrap=True, justify="right" if c in ("built", "published") else "left")
        for b in r.branches:
            c = b.builds
            built_style = "red" if c["failed"] else ("yellow" if c["running"] else (
                "green" if c["built"] == c["total"] and c["total"] else ""))
            if wide:
                cells = list(wide_row(b))
                t.add_row(cells[0], cells[1], cells[2], cells[3], Text(cells[4], style=STYLE.get(b.bump_state, "")),
                          Text(cells[5], style=built_style), cells[6],
                          Text(cells[7], style="magenta" if b.drift else "green"), cells[8])
            else:
                cells = list(compact_row(b))
                t.add_row(cells[0], cells[1], cells[2], Text(cells[3], style=STYLE.get(b.bump_state, "")),
                          Text(cells[4], style=built_style), cells[5])
        console.print(t)
    if d.needs:
        console.print(Text(f"Needs a human ({len(d.needs)}):", style="bold"))
        for n, line in zip(d.needs, needs_lines(d), strict=False):
            console.print(Text("  - " + line, style=STYLE.get(n.kind, "magenta")))
    else:
        console.print(Text("Needs a human: nothing.", style="green"))
    for n in d.notes:
        console.print(Text(f"note: {n}", style="dim"))
