"""The shape every command result shares, so each front end renders the same object:
the CLI prints ``text()`` or ``to_dict()`` as JSON, the console chat prints ``text()``,
and Slack turns the same object into Block Kit in ``bot/``."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...

    def text(self) -> str: ...


class MessageResult:
    """A plain result: a sentence or a few lines, with an exit code for the CLI."""

    def __init__(self, message: str, *, ok: bool = True, data: dict[str, Any] | None = None):
        self.message = message
        self.ok = ok
        self.data = data or {}

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "message": self.message, **self.data}

    def text(self) -> str:
        return self.message
