"""Block Kit for result objects: the only place that knows Slack formatting."""

from __future__ import annotations

from typing import Any

from bot.answer import Answer
from bot.chat import PlanReply

MAX_TEXT = 2900  # a section's text limit is 3000 characters


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_TEXT]}}


def _code(text: str) -> str:
    return "```" + text.replace("```", "ˋˋˋ")[: MAX_TEXT - 6] + "```"


def answer_blocks(a: Answer, shareable: bool = True) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    r = a.recommendation
    if r:
        cuda = f", CUDA {r.cuda}" if r.cuda else ""
        blocks.append(_section(f"*Use `{r.package}`*\nbranch `{r.branch}` (PyTorch {r.pytorch}{cuda}, Python {r.python}, {r.platform})"))
        blocks.append(_section("*Build*\n" + _code(r.build_command) + "\n*Install*\n" + _code(r.install_command)))
    else:
        blocks.append(_section("*No variant to recommend.*"))
    if a.reasons:
        blocks.append(_section("*Why*\n" + "\n".join(f"• {x}" for x in a.reasons)))
    if a.warnings:
        blocks.append(_section("*Warnings*\n" + "\n".join(f":warning: {x}" for x in a.warnings)))
    if a.missing:
        blocks.append(_section("*To answer, tell me*\n" + "\n".join(f"• {x}" for x in a.missing)))
    if a.alternatives:
        blocks.append(_section("*Alternatives*\n" + "\n".join(
            f"• `{x.package}` on `{x.branch}`" + (f" — {x.note}" if x.note else "") for x in a.alternatives)))
    if shareable and r:
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "action_id": "share_answer", "text": {"type": "plain_text", "text": "Share in channel"},
             "value": a.hardware.query[:1900]}]})
    return blocks[:50]


def plan_blocks(reply: PlanReply) -> list[dict[str, Any]]:
    p = reply.pending
    return [
        _section(f"*Plan for* `/{p.command} {' '.join(p.args)}`\n" + _code(p.plan.text())),
        {"type": "actions", "elements": [
            {"type": "button", "style": "primary", "action_id": "confirm_plan", "value": p.id,
             "text": {"type": "plain_text", "text": "Confirm"}},
            {"type": "button", "style": "danger", "action_id": "cancel_plan", "value": p.id,
             "text": {"type": "plain_text", "text": "Cancel"}},
        ]},
    ]


def blocks_for(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, Answer):
        return answer_blocks(result)
    if isinstance(result, PlanReply):
        return plan_blocks(result)
    return [_section(_code(result.text()))]
