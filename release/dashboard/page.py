"""The dashboard as one HTML page with its CSS inline and no JavaScript (pure): per repository, the
branches x GPU architectures grid of build states (cpu and darwin columns too), each branch's pins
and their age, its bump state and drift; then what needs a human. The grid of a branch is a row of
tiles of one width that wraps within the page (every branch wraps at the same tile, so the columns
stay aligned): the page never runs off the right edge, whatever the number of architectures. Shows nothing secret: no
tokens, no paths beyond the repository's, no log contents."""

from __future__ import annotations

from html import escape

from release.dashboard.model import BranchView, Dashboard, cell_state

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.4em 0 .4em}
.muted{color:#57606a}table{border-collapse:collapse;margin:.3em 0 1em}
table.branches{width:100%}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;white-space:nowrap;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.grid{white-space:normal;width:100%}
.tiles{display:flex;flex-wrap:wrap;gap:2px}
.tile{box-sizing:border-box;width:4.6em;padding:1px 2px;text-align:center;font-size:12px;border-radius:2px}
.tile small{display:block;font-size:10px;opacity:.85}
.built{background:#2da44e;color:#fff}.failed{background:#cf222e;color:#fff}
.running{background:#d4a72c;color:#1b1f24}.notbuilt{background:#eaeef2;color:#57606a}
.none{background:#fff}.held{color:#cf222e;font-weight:600}.pr-open{color:#9a6700}
.bumped{color:#0969da}.current{color:#1a7f37}.unknown{color:#57606a}
.drift{color:#8250df}.legend span{display:inline-block;padding:1px 8px;margin-right:4px;border-radius:3px}
ul.needs li{margin:.2em 0}code{font-size:12px}.need-held b,.need-failed b{color:#cf222e}
.need-readme-drift b,.need-companion-drift b{color:#8250df}
"""


def _cls(state: str) -> str:
    return state.replace(" ", "")


def _cell(b: BranchView, column: str) -> str:
    """One tile of the grid: the column's name over built/total, coloured by its state."""
    counts = b.grid.get(column)
    if not counts:
        return f'<span class="tile none"><small>{escape(column)}</small>&nbsp;</span>'
    state = cell_state(counts)
    total = sum(counts.values())
    title = ", ".join(f"{n} {s}" for s, n in counts.items())
    return (f'<span class="tile {_cls(state)}" title="{escape(column)}: {escape(title)}">'
            f'<small>{escape(column)}</small>{counts.get("built", 0)}/{total}</span>')


def _pins(b: BranchView) -> str:
    parts = []
    for p in b.pins:
        age = "?" if p.age_days is None else f"{p.age_days}d"
        behind = "" if p.behind_commits is None else (" at head" if p.current else f", {p.behind_commits} behind")
        parts.append(f"<code>{escape(p.rev[:7])}</code> {age}{escape(behind)}")
    return "<br>".join(parts) or "-"


def _bump(b: BranchView) -> str:
    state = b.bump_state
    text = escape(state)
    if state == "pr-open" and b.pr is not None and b.pr.url:
        text = f'<a href="{escape(b.pr.url)}">PR #{b.pr.number}</a> ({escape(b.pr.summary())})'
    reasons = "; ".join(x.reason for x in b.bumps if x.state == "held" and x.reason)
    nxt = f"<br><span class=muted>next {escape(b.next_bump[:16].replace('T', ' '))}</span>" if b.next_bump else ""
    return f'<span class="{_cls(state)}" title="{escape(reasons)}">{text}</span>{nxt}'


def _repo(d: Dashboard, name: str, branches: list[BranchView], columns: list[str]) -> list[str]:
    out = [f"<h2>{escape(name)} <span class=muted>({len(branches)} branches)</span></h2>",
           '<table class="branches">',
           "<tr><th>branch</th><th>PyTorch</th><th>pins (age)</th><th>bump</th><th>drift</th><th>published</th>"
           "<th>built at the head, by GPU architecture</th></tr>"]
    for b in branches:
        drift = []
        if b.readme_drift:
            drift.append(f"README {len(b.readme_drift)}")
        if b.companion_drift:
            drift.append(f"companion {len(b.companion_drift)}")
        out.append(
            f'<tr id="{escape(name)}--{escape(b.name)}"><th>{escape(b.name)}</th><td>{escape(b.pytorch or "?")}</td>'
            f"<td>{_pins(b)}</td><td>{_bump(b)}</td>"
            f'<td class="{"drift" if drift else "current"}">{escape(", ".join(drift) or "none")}</td>'
            f"<td>{b.published}/{b.variants}</td>"
            '<td class="grid"><div class="tiles">' + "".join(_cell(b, c) for c in columns) + "</div></td></tr>")
    out.append("</table>")
    return out


def render(d: Dashboard) -> str:
    columns = d.columns
    body = [f"<h1>torchbot release dashboard</h1><p class=muted>Generated {escape(d.generated)}; "
            f"{len(d.branches)} branches in {len(d.repositories)} repositories. Cells: variants built at the "
            "branch head / variants for that GPU architecture.</p>",
            '<p class="legend"><span class="built">built</span><span class="running">running</span>'
            '<span class="failed">failed</span><span class="notbuilt">not built</span></p>']
    for r in d.repositories:
        body += _repo(d, r.name, r.branches, columns)
    body.append(f"<h2>Needs a human ({len(d.needs)})</h2>")
    if d.needs:
        body.append('<ul class="needs">')
        for n in d.needs[:200]:
            what = f" <code>/{escape(n.action.command[:120])}</code>" if n.action else ""
            body.append(f'<li class="need-{_cls(n.kind)}"><b>{escape(n.repository)} {escape(n.branch)}</b>: '
                        f"{escape(n.text)}{what}</li>")
        body.append("</ul>")
    else:
        body.append("<p>Nothing.</p>")
    body += [f"<p class=muted>note: {escape(x)}</p>" for x in d.notes]
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<title>torchbot dashboard</title><style>{CSS}</style></head><body>" + "\n".join(body)
            + "</body></html>\n")
