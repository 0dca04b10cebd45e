"""Release-thread announcements: the outbox flusher (adapter to Slack via slack_sdk).

Outbox rows are written by ``release.publishing.publish`` in the same transaction as the publish
record. ``flush(ctx)`` sends them in order: the thread parent (chat.postMessage), one reply
per published variant, and the summary (chat.update of the parent) once all are published.

Exactly once: before a row is sent, its ``attempted`` time is committed; the message
carries the row's ``client_msg_id`` in its metadata. When a row was attempted but never
marked sent (a crash between send and mark), the flusher first looks for its message in
Slack (conversations.replies for replies, conversations.history for parents, with
``include_all_metadata``) and only marks it; it re-sends only when nothing is found. Rate
limits (HTTP 429) are honoured with Retry-After by slack_sdk's retry handler; any other
Slack failure stops this flush and leaves the rest for the next one (an outage only
delays announcements).

Once across processes: a flusher claims each row before it looks at Slack
(``State.claim_outbox``: a compare-and-set on the unsent row, held ``CLAIM_SECONDS``); a row
another flusher holds is left to it, and a row sent meanwhile cannot be claimed.
"""

from __future__ import annotations

import json
import logging
import tomllib
import uuid
from collections.abc import Callable
from datetime import UTC, timedelta
from functools import lru_cache
from pathlib import Path

from sqlalchemy import func, select

from release.adapters.slack import make_client
from release.state import Outbox, Publish, Release, owner_id, state_for, utcnow

log = logging.getLogger("torchbot.announce")
TEMPLATES = Path(__file__).parents[1] / "templates" / "announce.toml"
EVENT_TYPE = "torchbot_release_announcement"
CLAIM_SECONDS = 300  # a flusher that died holding a row: another sends (or finds) it after this


@lru_cache(maxsize=1)
def templates() -> dict:
    with TEMPLATES.open("rb") as fh:
        return tomllib.load(fh)


# ---------------------------------------------------------------------------------------
# Pure: message texts


def pin_link(web: str, pin: str, previous: str | None) -> str:
    t = templates()["links"]
    if previous and previous != pin:
        return t["compare"].format(web=web, old=previous, new=pin, old_short=previous[:7], new_short=pin[:7])
    return t["commit"].format(web=web, new=pin, new_short=pin[:7])


def fields(release: Release, published: int, org: str, web: str) -> dict:
    info = json.loads(release.info or "{}")
    return {
        "branch": release.branch,
        "pytorch": info.get("pytorch") or "?",
        "cuda": ", ".join(info.get("cuda") or []) or "CPU only",
        "python": info.get("python") or "?",
        "pin": release.pin,
        "pin_short": release.pin[:7],
        "pin_link": pin_link(web, release.pin, release.previous_pin),
        "total": release.total,
        "published": published,
        "org": org,
    }


def render(kind: str, release: Release, published: int, org: str, web: str, package: str | None = None) -> str:
    f = fields(release, published, org, web)
    if package:
        f["package"] = package
        f["install"] = templates()["links"]["install"].format(org=org, package=package)
    return templates()[kind]["text"].format(**f)


def _find_sent(client, channel: str, row: Outbox, thread_ts: str | None) -> str | None:
    """The ts of the message a previous attempt of ``row`` posted, if Slack has it."""
    if thread_ts:
        resp = client.conversations_replies(channel=channel, ts=thread_ts, include_all_metadata=True, limit=1000)
    else:
        oldest = 0.0
        if row.attempted:  # naive UTC in the DB
            oldest = (row.attempted - timedelta(minutes=5)).replace(tzinfo=UTC).timestamp()
        resp = client.conversations_history(channel=channel, oldest=str(oldest), include_all_metadata=True, limit=200)
    for msg in resp.get("messages", []):
        payload = (msg.get("metadata") or {}).get("event_payload") or {}
        if msg.get("client_msg_id") == row.client_msg_id or payload.get("client_msg_id") == row.client_msg_id:
            return msg["ts"]
    return None


def flush(ctx, client=None, *, on_sent: Callable[[Outbox, str], None] | None = None) -> dict:
    """Send every unsent outbox row that can be sent now. ``on_sent(row, ts)`` runs after
    Slack accepted a message and before it is marked (tests inject a crash there).
    Returns counts: sent, recovered (found already posted), pending, error."""
    from slack_sdk.errors import SlackApiError, SlackClientError

    s = ctx.settings
    st = state_for(ctx)
    out = {"sent": 0, "recovered": 0, "pending": 0, "error": None}
    with st.session() as ses:
        rows = list(ses.scalars(select(Outbox).where(Outbox.sent.is_(None)).order_by(Outbox.id)))
    if not rows:
        return out
    client = client or make_client(s)
    web = s.nixpkgs_web_url
    who = f"{owner_id()}:{uuid.uuid4().hex[:8]}"
    blocked: set[int] = set()  # releases whose parent is not posted yet
    for i, row in enumerate(rows):
        if row.release_id in blocked or not st.claim_outbox(row.id, who, CLAIM_SECONDS):
            out["pending"] += 1  # its parent is not posted, or another flusher sends it
            if row.kind == "parent":
                blocked.add(row.release_id)
            continue
        with st.session() as ses:
            row = ses.get(Outbox, row.id)  # noqa: PLW2901  as it is now that it is ours
        with st.session() as ses:
            rel = ses.get(Release, row.release_id)
            published = ses.scalar(
                select(func.count()).select_from(Publish).where(
                    Publish.branch == rel.branch,
                    Publish.pin.is_(None) if rel.pin == "unpinned" else Publish.pin == rel.pin,
                )
            )
        channel = rel.channel or s.announce_channel
        if not channel:
            out["pending"] += 1
            out["error"] = "no announce channel configured (TORCHBOT_ANNOUNCE_CHANNEL)"
            st.unclaim_outbox(row.id, who)
            continue
        if row.kind != "parent" and not rel.thread_ts:
            blocked.add(rel.id)
            out["pending"] += 1
            st.unclaim_outbox(row.id, who)
            continue
        try:
            ts = None
            if row.kind == "summary":
                client.chat_update(channel=channel, ts=rel.thread_ts,
                                   text=render("summary", rel, published, s.flox_org, web))
                ts = rel.thread_ts
            else:
                thread_ts = rel.thread_ts if row.kind == "variant" else None
                if row.attempted is not None:
                    ts = _find_sent(client, channel, row, thread_ts)
                    if ts:
                        out["recovered"] += 1
                if ts is None:
                    with st.session() as ses:
                        ses.get(Outbox, row.id).attempted = utcnow()
                    with st.session() as ses:
                        row = ses.get(Outbox, row.id)  # noqa: PLW2901  the same row, as it is now
                    text = render(row.kind, rel, published, s.flox_org, web, row.package)
                    resp = client.chat_postMessage(
                        channel=channel,
                        text=text,
                        thread_ts=thread_ts,
                        unfurl_links=False,
                        client_msg_id=row.client_msg_id,
                        metadata={"event_type": EVENT_TYPE,
                                  "event_payload": {"client_msg_id": row.client_msg_id, "outbox_id": row.id}},
                    )
                    ts = resp["ts"]
                    out["sent"] += 1
            if on_sent:
                on_sent(row, ts)
            with st.session() as ses:
                r = ses.get(Outbox, row.id)
                r.sent, r.ts, r.error = utcnow(), ts, None
                if row.kind == "parent":
                    rr = ses.get(Release, rel.id)
                    rr.thread_ts, rr.channel = ts, channel
        except BaseException as err:
            if not isinstance(err, (SlackApiError, SlackClientError, OSError)):
                st.unclaim_outbox(row.id, who)  # a crash here: the next flush looks for it in Slack first
                raise
            msg = _describe(err)
            log.warning("announcement %s not sent: %s", row.id, msg)
            with st.session() as ses:
                r = ses.get(Outbox, row.id)
                r.error, r.claimed_by, r.claim_until = msg, None, None
            out["error"] = msg
            out["pending"] += len(rows) - i
            return out
    return out


def _describe(err: Exception) -> str:
    resp = getattr(err, "response", None)
    if resp is not None:
        status = getattr(resp, "status_code", None)
        error = resp.get("error") if hasattr(resp, "get") else None
        return f"Slack answered {status}: {error or 'error'}"
    return f"Slack unreachable: {type(err).__name__}"
