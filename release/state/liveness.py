"""Whether the owner of a claim or a job run is gone, so its work can be taken over at once
rather than after its lease (issue 34: a kill is just a pause). Owners are ``host:pid`` with an
optional ``:suffix`` (one claimant of several in a process). An owner on this host whose
process is gone is gone; an owner on another host is alive until its lease (``until``) ends,
since its process cannot be seen from here. May import release.state.owners only."""

from __future__ import annotations

import socket

from release.state.owners import alive


def owner_gone(owner: str | None) -> bool:
    parts = (owner or "").split(":")
    if len(parts) < 2 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    return not alive(int(parts[1]))
