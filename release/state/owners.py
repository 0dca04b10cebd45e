"""Who runs a build and whether it still lives: ``host:pid`` plus the process start time, so a
restart can tell a dead owner (its builds to resolve) from a live one, and a reused pid from the
owner. Imports nothing of torchbot."""

from __future__ import annotations

import os
import socket
from pathlib import Path

RUNNING: dict[int, bool] = {}  # build ids this process is running right now


def owner_id() -> str:
    """Who runs a build: host and pid, so a restart can tell dead owners from live ones."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_start(pid: int | None = None) -> str | None:
    """When a process started (clock ticks since boot, from /proc), so a pid reused by another
    process is not taken for the owner; None where /proc is missing."""
    try:
        text = Path(f"/proc/{pid or os.getpid()}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def owner_alive(owner: str | None, start: str | None = None) -> bool | None:
    """True/False for an owner on this host (``host:pid``, with its process start time when
    known); None for an owner on another host (its liveness cannot be seen from here)."""
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None if host and host != socket.gethostname() else False
    if not alive(int(pid)):
        return False
    return start is None or process_start(int(pid)) in (None, start)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
