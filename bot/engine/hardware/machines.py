"""Several machines in one message ("last month's box had an RTX 3090 and an i7-8700K; the new
server has an H100 and an EPYC 9654"): the answer is for the one asked about (the new, current or
last-named target), never a mix of parts from several. A sentence that speaks of an earlier or
other machine ("last month's", "my old", "previous") beside one that speaks of the target ("the
new", "this one", "now") has its GPU, CPU and instance names blanked before anything is read;
when the message does not say which machine it asks about, ``Hardware.machines`` lists them so the
answer asks. Pure; may import config."""

from __future__ import annotations

from bot.engine.hardware.facts import Hardware
from bot.engine.hardware.matchers import Matchers
from bot.engine.hardware.retract import names
from config.catalog import Catalog
from config.regex_cache import rx

WINDOW = 4000  # characters of a message about several machines, at most
SENTENCES = 24
_SENTENCE_RE = rx(r"[^.!?;\n]*(?:[.!?;](?=\s|$)|\n|$)|[^\n]+")
_OLD_RE = rx(
    r"(?<![a-z])(?:last (?:month|week|year|time|quarter)|old(?:er)?|previous(?:ly)?|former|prior|earlier"
    r"|my other|the other (?:one|box|machine|pc|server|node)|used to|retired|decommissioned|settled|sorted"
    r"|already (?:set up|running|done|working))(?![a-z])"
)
_NEW_RE = rx(
    r"(?<![a-z])(?:new|newer|brand new|current(?:ly)?|this (?:one|box|machine|server|pc|node|workstation|laptop)"
    r"|now|today|upcoming|target|replacement|next)(?![a-z])"
)


def settle(cat: Catalog, m: Matchers, hw: Hardware, low: str) -> str:
    """``low`` with the hardware of every sentence about a settled or other machine blanked
    (same length), when another sentence names the target's hardware."""
    text = low[:WINDOW]
    if _OLD_RE.search(text) is None:
        return low
    parts = []
    for k, sm in enumerate(_SENTENCE_RE.finditer(text)):
        if k >= SENTENCES:
            return low  # a long paste, not a message about a few machines
        if not sm.group(0).strip():
            continue
        found = [n for n in names(cat, m, sm.group(0)) if n.kind in ("gpu", "cpu", "instance")]
        if found:
            s = sm.group(0)
            parts.append((sm.start(), found, bool(_OLD_RE.search(s)), bool(_NEW_RE.search(s))))
    if len(parts) < 2:
        return low
    old = [p for p in parts if p[2] and not p[3]]
    target = [p for p in parts if not (p[2] and not p[3])]
    if not old:
        return low
    if not target:  # every machine named is an earlier or other one: ask which
        hw.machines = [", ".join(n.shown for n in p[1]) for p in parts]
        return low
    gone = []
    for at, found, *_ in old:
        for n in found:
            low = low[: at + n.start] + " " * (n.end - n.start) + low[at + n.end :]
            gone.append(n.shown)
    kept = [n.shown for p in target for n in p[1]]
    hw.notes.append(f"Read the machine asked about ({', '.join(kept)}); the other machine named "
                    f"({', '.join(gone)}) is left out of this answer.")
    return low
