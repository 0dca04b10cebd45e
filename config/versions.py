"""Versions as a type: ``Version("2.9.1")`` compares by its numbers and has a ``.line`` (the
major.minor a branch promises: ``(2, 9)``). One home for "same PyTorch line". Imports nothing
of torchbot but ``config.catalog``'s ``vtuple`` parsing rule."""

from __future__ import annotations

from dataclasses import dataclass, field

from config.catalog import vtuple


@dataclass(frozen=True, order=True)
class Version:
    """A dotted version; non-numeric parts stop it (``"TBD"`` has no numbers and no line)."""

    parts: tuple[int, ...] = field(compare=True)
    text: str = field(default="", compare=False)

    def __init__(self, text: str | None):
        object.__setattr__(self, "parts", vtuple(text or ""))
        object.__setattr__(self, "text", text or "")

    @property
    def line(self) -> tuple[int, ...]:
        """The major.minor: ``Version("2.9.1").line == (2, 9)``."""
        return self.parts[:2]

    def same_line(self, other: str | Version | None) -> bool:
        """True when both have the same major.minor (and have one)."""
        theirs = other if isinstance(other, Version) else Version(other)
        return bool(self.line) and self.line == theirs.line

    def __str__(self) -> str:
        return self.text


def line(version: str | None) -> tuple[int, ...]:
    """The major.minor of a version text: ``line("2.9.1") == (2, 9)``."""
    return Version(version).line
