"""The audit log: one JSON object per line (JSON Lines), every text a person gave (a command's
arguments, a user or channel ID, a result) a field value, never part of the line's structure, so
no input can forge a record or make one look like another. Nothing reads the log back to decide
anything: what was done is kept in the state DB.

    {"at": "2026-03-02T12:00:00+00:00", "user": "U1", "channel": "C1", "what": "plan /build main"}

May import nothing of torchbot.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger("torchbot.audit")


def line(**fields: object) -> str:
    """One record: ``at`` (now, UTC) then ``fields`` (values as JSON; non-JSON values as text)."""
    return json.dumps({"at": datetime.now(UTC).isoformat(timespec="seconds"), **fields}, ensure_ascii=False,
                      default=str)


def append(path: Path | str, record: str) -> None:
    """Append one record (a ``line``) to the log at ``path``; a log that cannot be written is said in
    torchbot's log, never raised."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(record + "\n")
    except OSError:
        log.warning("audit log %s is not writable", path)


def read(path: Path | str) -> list[dict]:
    """The records of the log (for people and tests; torchbot decides nothing from it)."""
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for raw in fh:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    out.append(rec)
    except OSError:
        pass
    return out
