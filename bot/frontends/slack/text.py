"""User text in and out of Slack: the one place that applies Slack's escaping rule.

Slack reads ``&``, ``<`` and ``>`` in message text as markup (``<!channel>``, ``<@U…>``,
``<https://…|link>``) and sends them to apps as the entities ``&amp;``, ``&lt;`` and
``&gt;``. So text arriving from Slack is read back into plain characters once
(:func:`from_slack`), everything torchbot says is plain text until it is rendered, and every
piece of text that reaches a Slack message (acks, channel posts, thread replies, file titles
and comments) goes through :func:`escape` exactly once, in ``blocks``, ``app`` and ``jobs``.
An ack quotes what the user typed as a bounded excerpt (:func:`quoted`), never all of it."""

from __future__ import annotations

EXCERPT = 200  # characters of a user's text an ack quotes


def escape(text: str) -> str:
    """Plain text as Slack message text: ``&``, ``<``, ``>`` as entities, nothing else."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def from_slack(text: str) -> str:
    """Text as Slack sends it (entities for ``&<>``) as the characters the user typed."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``text`` on one line, at most ``limit`` characters, ``…`` where it was cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def quoted(text: str, limit: int = EXCERPT) -> str:
    """A bounded excerpt of user text, escaped for a Slack message (cut first, so no
    entity is ever cut in half)."""
    return escape(excerpt(text, limit))


def inline(text: object, limit: int = 3000) -> str:
    """Untrusted text (a branch name, a reason, an error) as Slack mrkdwn on one line: whitespace
    runs one space, ``&<>`` as entities (no link, mention or markup of its own), backticks as ``ˋ``
    (it cannot close the code span it sits in), at most ``limit`` characters."""
    return escape(excerpt(str(text), limit).replace("`", "ˋ"))
