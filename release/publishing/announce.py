"""Release-thread announcements: the outbox flusher (adapter to Slack via slack_sdk).

Outbox rows are written by ``release.publishing.publish`` in the same transaction as the publish
record. ``flush(ctx)`` sends them as a thread a team reads: one thread per repository, branch and
release (pin), build-torchvision's parent saying whose it is ("Release main of build-torchvision");
its parent says what was published, what is still building and what failed (named, with why), and
is edited in place (``chat.update``) as the release goes on, finally to the summary.
Published variants are grouped, one reply per accelerator (CUDA version, CPU, MPS) listing its
packages by platform and one install line, edited in place as more of the group is published: a
release is a parent plus a reply per group (a handful), never a message per variant.

Exactly once, with what Slack keeps: before a message is sent, its rows' ``attempted`` time is
committed, and the message carries the rows' ids in its ``metadata`` (``event_type``
``torchbot_release_announcement``, ``event_payload.outbox_ids``). When a row was attempted but
never marked sent (a crash between send and mark), the flusher first looks for that metadata in
Slack (``conversations.replies`` for replies, ``conversations.history`` for parents, with
``include_all_metadata``, from the attempt's time on, following ``next_cursor`` until found or
exhausted) and only marks it; it re-sends only when nothing is found. Slack answers those reads
only to a member of the channel: the flusher joins the announce channel (``conversations.join``,
scope ``channels:join``) before it reads, and when it cannot (a private channel it was not invited
to, no scope) it says so in one line and leaves the rows unsent rather than risk a second copy.
Calls keep within Slack's tiers (``release.adapters.slack.Paced``: Tier 3 for reads and edits, a
message a second per channel) and a 429 is waited out (Retry-After). Any other Slack failure stops
this flush and leaves the rest for the next one (an outage only delays announcements).

Once across processes: a flusher claims a release's thread (``State.claim``, so its group
replies are edited by one flusher at a time, from what is recorded sent) and each row before it
looks at Slack (``State.claim_outbox``: a compare-and-set on the unsent row, held
``CLAIM_SECONDS``); a row or thread another flusher holds is left to it, and a row sent meanwhile
cannot be claimed.
"""

from __future__ import annotations

import json
import logging
import re
import tomllib
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path

from sqlalchemy import select

from release.adapters.slack import Paced, make_client
from release.state import Build, Outbox, Publish, Release, owner_id, state_for, utcnow
from release.state.tables import same_repo

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
        # build-torchvision's release has its own thread, whose parent says whose it is
        "of": f" of {_esc(release.repo.rsplit('/', 1)[-1])}" if getattr(release, "repo", None) else "",
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


_CUDA = re.compile(r"-cuda(\d+)_(\d+)")
_ROCM = re.compile(r"-rocm(\d+)_(\d+)")
MARGIN = timedelta(minutes=1)  # clock skew between torchbot and Slack when reading from an attempt's time
READ_LIMIT = 200  # items asked per page (Slack may answer fewer; next_cursor says where to go on)
SHOWN_PROBLEMS = 10  # failed or held variants named in the parent; the rest are counted


def _esc(text: object) -> str:
    """Text from the repository or a build log, made inert in mrkdwn."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def platform_of(package: str, isa_platforms: Mapping[str, str]) -> str:
    """The platform a package is built for, from its name's CPU ISA (the catalog's table)."""
    isa = package.rsplit("-", 1)[-1]
    if "darwin" in package or isa == "mps":
        return "aarch64-darwin"
    return isa_platforms.get(isa) or ("aarch64-linux" if isa.startswith(("arm", "neoverse")) else "x86_64-linux")


def group_of(package: str) -> str:
    """The reply a published package is listed in: its accelerator (``CUDA 12.8``, ``ROCm 6.2``,
    ``MPS`` on macOS, ``CPU``), from its name. One reply per accelerator, its packages listed by
    platform, keeps a release within about 10 messages (build-pytorch's widest branch: CPU, four
    CUDA versions and MPS, 7 messages), where one per accelerator x platform would make 12."""
    cuda, rocm = _CUDA.search(package), _ROCM.search(package)
    if cuda:
        return f"CUDA {cuda[1]}.{cuda[2]}"
    if rocm:
        return f"ROCm {rocm[1]}.{rocm[2]}"
    return "MPS" if "darwin" in package or package.endswith("-mps") else "CPU"


def group_text(group: str, packages: list[str], org: str, isa_platforms: Mapping[str, str]) -> str:
    """A group's reply: its title (accelerator and platforms), every package by platform, one install line."""
    by_platform: dict[str, list[str]] = {}
    for p in sorted(packages):
        by_platform.setdefault(platform_of(p, isa_platforms), []).append(p)
    lines = []
    for platform, pkgs in sorted(by_platform.items()):
        if len(by_platform) > 1:
            lines.append(f"_{platform}_ ({len(pkgs)}):")
        lines += [f"• `{_esc(p)}`" for p in pkgs]
    return templates()["group"]["text"].format(
        title=f"{group} · {', '.join(sorted(by_platform))}", count=len(packages), org=org,
        packages="\n".join(lines),
        install=templates()["links"]["install"].format(org=org, package=_esc(sorted(packages)[0])))


def status_line(published: int, total: int, building: int, problems: list[tuple[str, str, str]]) -> str:
    """``3/5 published, 1 still building, 1 failed.`` and the failed or held variants, named with why
    (``problems``: package, failed|held, why)."""
    failed = sum(1 for _, what, _ in problems if what == "failed")
    held = len(problems) - failed
    parts = [f"{published}/{total} published"]
    parts += [f"{building} still building"] if building else []
    parts += [f"{failed} failed"] if failed else []
    parts += [f"{held} held"] if held else []
    unbuilt = total - published - building - len(problems)
    parts += [f"{unbuilt} not built yet"] if unbuilt > 0 else []
    text = ", ".join(parts) + "."
    for package, what, why in problems[:SHOWN_PROBLEMS]:
        line = why.strip().splitlines()[0] if why and why.strip() else "see its build log"
        text += f"\n• `{_esc(package)}` {what}: {_esc(line[:200])}"
    if len(problems) > SHOWN_PROBLEMS:
        text += f"\n• … and {len(problems) - SHOWN_PROBLEMS} more (`torchbot status`)"
    return text


class NeedsMembership(Exception):
    """Slack answers reads only to a member of the channel, and torchbot could not join it."""


def _read(client, method: str, channel: str, **kwargs):
    """A read in ``channel``; a ``not_in_channel`` answer makes torchbot join it (``channels:join``)
    and read again; when it cannot join, :class:`NeedsMembership` says so in one line."""
    from slack_sdk.errors import SlackApiError

    call = getattr(client, method)
    try:
        return call(channel=channel, **kwargs)
    except SlackApiError as err:
        if err.response.get("error") != "not_in_channel":
            raise
    try:
        client.conversations_join(channel=channel)
    except SlackApiError as err:
        raise NeedsMembership(
            f"recovering release announcements needs torchbot in channel {channel}: invite it (/invite @torchbot) "
            f"or grant the channels:join scope (Slack answered {err.response.get('error')}); "
            "nothing was sent again") from None
    return call(channel=channel, **kwargs)


def _find_sent(client, channel: str, ids: set[int], thread_ts: str | None, since: datetime | None) -> str | None:
    """The ts of the message an earlier attempt posted for outbox rows ``ids``, found by the
    metadata it carries: the thread's replies (or the channel's history for a parent) from the
    attempt's time on, page by page until found or exhausted."""
    oldest = (since - MARGIN).replace(tzinfo=UTC).timestamp() if since else 0.0
    args = {"include_all_metadata": True, "limit": READ_LIMIT, "oldest": f"{max(0.0, oldest):.6f}"}
    method = "conversations_replies" if thread_ts else "conversations_history"
    if thread_ts:
        args["ts"] = thread_ts
    cursor = None
    while True:
        resp = _read(client, method, channel, **args, **({"cursor": cursor} if cursor else {}))
        for msg in resp.get("messages", []):
            meta = msg.get("metadata") or {}
            if meta.get("event_type") != EVENT_TYPE:
                continue
            got = str((meta.get("event_payload") or {}).get("outbox_ids", "")).split(",")
            if ids & {int(x) for x in got if x.strip().isdigit()}:
                return msg["ts"]
        cursor = (resp.get("response_metadata") or {}).get("next_cursor")
        if not resp.get("has_more") or not cursor:
            return None


def _metadata(rel: Release, kind: str, ids: Iterable[int]) -> dict:
    return {"event_type": EVENT_TYPE, "event_payload": {
        "release_id": rel.id, "kind": kind, "outbox_ids": ",".join(str(i) for i in sorted(ids))}}


def _attempt(st, rows: list[Outbox]) -> None:
    with st.session() as ses:
        for r in rows:
            ses.get(Outbox, r.id).attempted = r.attempted = utcnow()


def _mark(st, rows: list[Outbox], ts: str, release: tuple[int, str] | None = None) -> None:
    with st.session() as ses:
        for r in rows:
            x = ses.get(Outbox, r.id)
            x.sent, x.ts, x.error = utcnow(), ts, None
        if release:
            rr = ses.get(Release, release[0])
            rr.thread_ts, rr.channel = ts, release[1]


def _progress(st, rel: Release) -> tuple[set[str], int, list[tuple[str, str, str]]]:
    """What of the release is published, how many variants are still building, and which failed
    or are held (with why), from the build and publish records."""
    pin = None if rel.pin == "unpinned" else rel.pin
    with st.session() as ses:
        published = set(ses.scalars(select(Publish.package).where(
            Publish.branch == rel.branch, same_repo(Publish.repo, rel.repo),
            Publish.pin.is_(None) if pin is None else Publish.pin == pin)))
        builds = list(ses.scalars(select(Build).where(
            Build.branch == rel.branch, same_repo(Build.repo, rel.repo),
            Build.pin.is_(None) if pin is None else Build.pin == pin).order_by(Build.id)))
    latest = {b.package: b for b in builds}
    building = sum(1 for p, b in latest.items() if p not in published and b.state in ("queued", "running"))
    problems = [(p, "failed" if b.state == "failed" else "held", b.message or b.state)
                for p, b in sorted(latest.items())
                if p not in published and b.state not in ("queued", "running", "succeeded")]
    return published, building, problems


def _parent_text(ctx, st, rel: Release) -> str:
    s = ctx.settings
    published, building, problems = _progress(st, rel)
    f = fields(rel, len(published), s.flox_org, s.nixpkgs_web_url)
    if len(published) >= rel.total and not problems:
        return templates()["summary"]["text"].format(**f)
    return templates()["parent"]["text"].format(**f, status=status_line(len(published), rel.total, building,
                                                                          problems))


def _isa_platforms(ctx) -> dict[str, str]:
    from config.errors import TorchbotError

    try:
        return {name: isa.platform for name, isa in ctx.catalog.isas.items()}
    except TorchbotError:
        return {}


def flush(ctx, client=None, *, on_sent: Callable[[Outbox, str], None] | None = None) -> dict:
    """Send every unsent outbox row that can be sent now. ``on_sent(row, ts)`` runs after
    Slack accepted a message (or an edit) and before its rows are marked (tests inject a crash
    there). Returns counts: sent (messages posted), updated (edits), recovered (rows found
    already posted), pending, error."""
    from slack_sdk.errors import SlackApiError, SlackClientError

    st = state_for(ctx)
    out = {"sent": 0, "updated": 0, "recovered": 0, "pending": 0, "error": None}
    with st.session() as ses:
        rows = list(ses.scalars(select(Outbox).where(Outbox.sent.is_(None)).order_by(Outbox.id)))
    if not rows:
        return out
    client = Paced(client or make_client(ctx.settings))
    who = f"{owner_id()}:{uuid.uuid4().hex[:8]}"
    by_release: dict[int, list[Outbox]] = {}
    for row in rows:
        by_release.setdefault(row.release_id, []).append(row)
    platforms = _isa_platforms(ctx)
    for n, (rel_id, rel_rows) in enumerate(by_release.items()):
        # one flusher at a time per release thread: its group replies are edited from what is sent
        if not st.claim(f"announce:{rel_id}", who, CLAIM_SECONDS):
            out["pending"] += len(rel_rows)  # another flusher is at this thread now
            continue
        claimed = [r for r in rel_rows if st.claim_outbox(r.id, who, CLAIM_SECONDS)]
        out["pending"] += len(rel_rows) - len(claimed)  # another flusher sends them
        if not claimed:
            st.unclaim(f"announce:{rel_id}", who)
            continue
        try:
            _flush_release(ctx, st, client, rel_id, [r.id for r in claimed], platforms, out, on_sent)
        except NeedsMembership as err:
            log.warning("%s", err)
            out["error"] = str(err)
            out["pending"] += len(claimed)
        except (SlackApiError, SlackClientError, OSError) as err:
            msg = _describe(err)
            log.warning("announcements of release %s not sent: %s", rel_id, msg)
            with st.session() as ses:
                for r in claimed:
                    x = ses.get(Outbox, r.id)
                    if x.sent is None:
                        x.error = msg
            out["error"] = msg
            out["pending"] += len(claimed) + sum(len(v) for v in list(by_release.values())[n + 1:])
            return out
        finally:  # what is still unsent is free for the next flush (which looks for it in Slack first)
            for r in claimed:
                st.unclaim_outbox(r.id, who)
            st.unclaim(f"announce:{rel_id}", who)
    return out


def _flush_release(ctx, st, client, rel_id: int, ids: list[int], platforms: Mapping[str, str], out: dict,
                   on_sent) -> None:
    s = ctx.settings
    with st.session() as ses:
        rel = ses.get(Release, rel_id)
        rows = [ses.get(Outbox, i) for i in ids]
    rows = [r for r in rows if r.sent is None]
    channel = rel.channel or s.announce_channel
    if not channel:
        out["pending"] += len(rows)
        out["error"] = "no announce channel configured (TORCHBOT_ANNOUNCE_CHANNEL)"
        return
    parent = next((r for r in rows if r.kind == "parent"), None)
    if parent is not None:
        ts = _find_sent(client, channel, {parent.id}, None, parent.attempted) if parent.attempted else None
        if ts:
            out["recovered"] += 1
        else:
            _attempt(st, [parent])
            ts = client.chat_postMessage(channel=channel, text=_parent_text(ctx, st, rel), unfurl_links=False,
                                         metadata=_metadata(rel, "parent", [parent.id]))["ts"]
            out["sent"] += 1
        if on_sent:
            on_sent(parent, ts)
        _mark(st, [parent], ts, release=(rel.id, channel))
        rel.thread_ts, rel.channel = ts, channel
    if not rel.thread_ts:  # the parent is not posted yet: its replies wait for it
        out["pending"] += len(rows)
        return
    variants = [r for r in rows if r.kind == "variant"]
    if variants:
        with st.session() as ses:
            before = list(ses.scalars(select(Outbox).where(
                Outbox.release_id == rel.id, Outbox.kind == "variant", Outbox.sent.is_not(None))))
        for key in sorted({group_of(r.package or "") for r in variants}):
            new = [r for r in variants if group_of(r.package or "") == key]
            old = [r for r in before if group_of(r.package or "") == key]
            ts = next((r.ts for r in old if r.ts), None)
            text = group_text(key, [r.package or "" for r in old + new], s.flox_org, platforms)
            meta = _metadata(rel, "group", [r.id for r in old + new])
            tried = [r.attempted for r in new if r.attempted]
            if ts is None and tried:
                ts = _find_sent(client, channel, {r.id for r in new}, rel.thread_ts, min(tried))
                out["recovered"] += len(tried) if ts else 0
            if ts is None:
                _attempt(st, new)
                ts = client.chat_postMessage(channel=channel, thread_ts=rel.thread_ts, text=text,
                                             unfurl_links=False, metadata=meta)["ts"]
                out["sent"] += 1
            else:  # the group's reply is there: it lists the new packages too (an edit is idempotent)
                client.chat_update(channel=channel, ts=ts, text=text, metadata=meta)
                out["updated"] += 1
            if on_sent:
                on_sent(new[0], ts)
            _mark(st, new, ts)
    summary = next((r for r in rows if r.kind == "summary"), None)
    if variants or summary is not None:  # the parent says where the release is now
        client.chat_update(channel=channel, ts=rel.thread_ts, text=_parent_text(ctx, st, rel))
        out["updated"] += 1
        if summary is not None:
            if on_sent:
                on_sent(summary, rel.thread_ts)
            _mark(st, [summary], rel.thread_ts)


def _describe(err: Exception) -> str:
    resp = getattr(err, "response", None)
    if resp is not None:
        status = getattr(resp, "status_code", None)
        error = resp.get("error") if hasattr(resp, "get") else None
        return f"Slack answered {status}: {error or 'error'}"
    return f"Slack unreachable: {type(err).__name__}"
