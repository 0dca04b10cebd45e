"""Block Kit for result objects: the only place that knows Slack formatting.

Long output goes Slack's way and is never cut silently: summary, counts and failures come
first; the full text follows as code sections of at most ``MAX_TEXT`` characters each, split
at line ends (each with its own fences), up to ``MAX_PAGES`` of them. Where the reply can
carry a file (a job's thread), a full list longer than ``ATTACH_OVER`` pages is attached as a
text file instead (``Rendered.file``, uploaded with ``files_upload_v2``); where it cannot (an
ephemeral reply), the message says how much it shows and how to see the rest.

Result objects hold plain text; everything from them is escaped here (``text.escape``) as it
becomes message text, and a user's own words in a plan's title are a bounded excerpt
(``text.quoted``). A file's content stays plain text (Slack shows it verbatim)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.engine.answer import Answer
from bot.frontends.chat import JobReply, PlanReply
from bot.frontends.pending import DiffResult
from bot.frontends.slack.text import escape, excerpt, quoted
from config.policy import FAILED, bucket
from release.dashboard.commands import DashboardResult

MAX_TEXT = 2900  # a section's text limit is 3000 characters
MAX_PAGES = 12  # code sections in one message (Slack allows 50 blocks)
ATTACH_OVER = 2  # with a thread to put it in, more pages than this go in a file
FENCE = "```"


@dataclass
class Rendered:
    text: str  # the notification text: a summary, complete in itself
    blocks: list[dict[str, Any]]
    file: tuple[str, str] | None = None  # (filename, full text) to upload next to the message


def _section(text: str) -> dict[str, Any]:
    """A mrkdwn section of ``text``, which is message text already (escaped)."""
    if len(text) > MAX_TEXT:  # callers page long text; this only guards a runaway single line
        text = text[: MAX_TEXT - 40] + "… (line shortened for Slack)"
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _code(text: str) -> str:
    """Plain text as a code block (escaped)."""
    return FENCE + escape(text.replace(FENCE, "ˋˋˋ")) + FENCE


def _fits(line: str, limit: int) -> int:
    """How many characters of ``line`` fit in ``limit`` once escaped."""
    n = min(len(line), limit)
    while len(escape(line[:n])) > limit:
        n -= max(1, (len(escape(line[:n])) - limit) // 4)
    return n


def pages(text: str, limit: int = MAX_TEXT - 2 * len(FENCE)) -> list[str]:
    """``text`` (plain) in pieces of at most ``limit`` characters once escaped, split at line
    ends (a longer line is split where it must be)."""
    out: list[str] = []
    cur: list[str] = []
    size = 0
    for whole in text.replace(FENCE, "ˋˋˋ").split("\n"):
        line = whole
        while len(escape(line)) > limit:
            if cur:
                out.append("\n".join(cur))
                cur, size = [], 0
            n = _fits(line, limit)
            out.append(line[:n])
            line = line[n:]
        width = len(escape(line))
        if cur and size + 1 + width > limit:
            out.append("\n".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += width + (1 if size else 0)
    if cur:
        out.append("\n".join(cur))
    return out


CLI_SAME = "The same command in the CLI (`torchbot release …`)"


def paged(text: str, can_attach: bool, name: str,
          cli: str = CLI_SAME) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    """Code sections for ``text``, or a note and a file when it is too long for a message;
    without a file, the note names ``cli``, which prints all of it."""
    parts = pages(text)
    if can_attach and len(parts) > ATTACH_OVER:
        lines = text.count("\n") + 1
        return [_section(f"_The full text ({lines} lines) is attached as `{name}`._")], (name, text)
    if len(parts) <= MAX_PAGES:
        return [_section(_code(p)) for p in parts], None
    shown = parts[:MAX_PAGES]
    shown_lines = sum(p.count("\n") + 1 for p in shown)
    total = text.count("\n") + 1
    note = (f"_Showing lines 1-{shown_lines} of {total}: the rest does not fit in one Slack message. "
            f"{cli} prints all of it._")
    return [_section(_code(p)) for p in shown] + [_section(note)], None


def summary_of(result: Any) -> tuple[str, list[str]]:
    """A one-line summary and the failure lines of a result (build/publish results are
    summarised by their counts), plain text."""
    data = result.to_dict() if hasattr(result, "to_dict") else {}
    rows = data.get("builds") if "builds" in data else data.get("publishes")
    if isinstance(rows, list) and data.get("action"):
        counts: dict[str, int] = {}
        for r in rows:
            counts[r.get("state", "?")] = counts.get(r.get("state", "?"), 0) + 1
        tally = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing to do"
        failed = [f"{r['package']}: {r.get('state')}" + (f" ({r['message']})" if r.get("message") else "")
                  + (f" log: {r['log']}" if r.get("log") and r["log"] not in (r.get("message") or "") else "")
                  for r in rows if bucket(r.get("state")) == FAILED]
        return f"{data['action'].capitalize()}: {tally} ({len(rows)} variant(s)).", failed
    text = result.text()
    first = text.split("\n", 1)[0]
    return (first if len(first) <= 300 else first[:297] + "…"), []


def answer_blocks(a: Answer, shareable: bool = True) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    r = a.recommendation
    if r:
        cuda = f", CUDA {r.cuda}" if r.cuda else ""
        blocks.append(_section(escape(f"*Use `{r.package}`*\nbranch `{r.branch}` "
                                      f"(PyTorch {r.pytorch}{cuda}, Python {r.python}, {r.platform})")))
        blocks.append(_section("*Build*\n" + _code(r.build_command) + "\n*Install*\n" + _code(r.install_command)))
    else:
        blocks.append(_section("*No variant to recommend.*"))
    if a.reasons:
        blocks.append(_section("*Why*\n" + "\n".join(f"• {escape(x)}" for x in a.reasons)))
    if a.warnings:
        blocks.append(_section("*Warnings*\n" + "\n".join(f":warning: {escape(x)}" for x in a.warnings)))
    if a.missing:
        blocks.append(_section("*To answer, tell me*\n" + "\n".join(f"• {escape(x)}" for x in a.missing)))
    if a.alternatives:
        blocks.append(_section("*Alternatives*\n" + "\n".join(
            escape(f"• `{x.package}` on `{x.branch}`" + (f" — {x.note}" if x.note else "")) for x in a.alternatives)))
    if shareable and r:
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "action_id": "share_answer", "text": {"type": "plain_text", "text": "Share in channel"},
             "value": a.hardware.query[:1900]}]})
    return blocks[:50]


def plan_blocks(reply: PlanReply) -> list[dict[str, Any]]:
    p = reply.pending
    text = p.plan.text()
    summary = text.split("\n", 1)[0]
    until = f" Confirm by {p.expires:%H:%M} UTC." if p.expires else ""
    body, _ = paged(text, can_attach=False, name="plan.txt")
    return [
        _section(f"*Plan for* `/{p.command} {quoted(' '.join(p.args))}`: {escape(summary)}{until}"),
        *body,
        {"type": "actions", "elements": [
            {"type": "button", "style": "primary", "action_id": "confirm_plan", "value": p.id,
             "text": {"type": "plain_text", "text": "Confirm"}},
            {"type": "button", "style": "danger", "action_id": "cancel_plan", "value": p.id,
             "text": {"type": "plain_text", "text": "Cancel"}},
            *([{"type": "button", "action_id": "show_diff", "value": p.id,
                "text": {"type": "plain_text", "text": "Show diff"}}] if hasattr(p.plan, "diff") else []),
        ]},
    ]


def diff_blocks(d: DiffResult, can_attach: bool) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    """A plan's diff, to its asker: a line saying what it is, then the diff as code; a long one
    (more than ``ATTACH_OVER`` pages, as for every long output) is a file in the channel where it
    can go (``can_attach``), else its first pages and the CLI command that prints it all."""
    head = _section(escape(d.text().partition("\n")[0]))
    name = f"{d.command}-{'-'.join(d.args[:1]) or 'plan'}.diff"
    if can_attach and len(pages(d.diff)) > ATTACH_OVER:
        lines = d.diff.count("\n") + 1
        return [head, _section(f"_The whole diff ({lines} lines) is posted in this channel as `{name}`._")], \
            (name, d.diff)
    body, _ = paged(d.diff, False, name, cli=f"`{escape(d.cli)}`")
    return [head, *body], None


def render(result: Any, can_attach: bool = False, name: str = "torchbot-output.txt", *,
           shareable: bool = True) -> Rendered:
    """Any result as a message: text (summary), blocks, and maybe a file to attach. An answer
    posted where everyone sees it already (``shareable=False``) has no Share button."""
    if isinstance(result, Answer):
        r = result.recommendation
        return Rendered(escape(f"Use {r.package}") if r else "No variant to recommend.",
                        answer_blocks(result, shareable))
    if isinstance(result, PlanReply):
        p = result.pending
        head = p.plan.text().split("\n", 1)[0]
        return Rendered(f"Plan for /{p.command} {quoted(' '.join(p.args))}: {escape(excerpt(head, 300))} "
                        "(Confirm or Cancel)", plan_blocks(result))
    if isinstance(result, DiffResult):
        blocks, file = diff_blocks(result, can_attach)
        return Rendered(escape(result.text().partition("\n")[0]), blocks, file)
    if isinstance(result, DashboardResult):
        from bot.frontends.slack import dashboard

        return Rendered(escape(dashboard.summary(result.model)), dashboard.blocks(result.model))
    if isinstance(result, JobReply):
        return Rendered(escape(result.text()), [_section(escape(result.text()))])
    summary, failures = summary_of(result)
    text = result.text()
    if "\n" not in text and len(escape(text)) <= MAX_TEXT:
        return Rendered(escape(text), [_section(escape(text))])
    blocks: list[dict[str, Any]] = []
    if summary != text.split("\n", 1)[0]:  # a structured result: its counts first
        blocks.append(_section(f"*{escape(summary)}*"))
    if failures:
        head = failures[:20]
        more = f"\n…and {len(failures) - 20} more (in the full list below)" if len(failures) > 20 else ""
        blocks.append(_section("*Failed*\n" + "\n".join(f"• {escape(f)}" for f in head) + more))
    body, file = paged(text, can_attach, name)
    return Rendered(escape(summary), blocks + body, file)

