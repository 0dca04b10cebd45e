"""Unified diffs of planned changes: what a dry run shows with ``--diff`` (the CLI) and what a
chat plan could show beside its Confirm. Pure (difflib): the command layers hand over the
planned file contents and a reader for the current ones (git, a file), nothing is written.

Imports nothing of torchbot."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FileChange:
    """One file of a plan: where it is (a branch, a checkout), its text now and after (None:
    absent before, or deleted)."""

    where: str
    path: str
    old: str | None
    new: str | None


def _lines(text: str | None) -> list[str]:
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def unified(changes: Iterable[FileChange], context: int = 3) -> str:
    """One unified diff of every change that changes something (``git apply``-style paths,
    the branch named beside each file)."""
    out: list[str] = []
    for c in changes:
        if c.old == c.new:
            continue
        a = f"a/{c.path}" if c.old is not None else "/dev/null"
        b = f"b/{c.path}" if c.new is not None else "/dev/null"
        out.append(f"diff {c.where}: {c.path}\n")
        out.extend(difflib.unified_diff(_lines(c.old), _lines(c.new), a, b, n=context))
    return "".join(out)


def planned(edits: Iterable[tuple[str, str | None, dict[str, str | None]]],
            read: Callable[[list[str]], dict[str, str | None]]) -> list[FileChange]:
    """The file changes of ``edits`` — (where, revision it starts from, {path: new text or None})
    — with the current texts read in one call of ``read`` (``rev:path`` names -> text or None)."""
    edits = list(edits)
    names = [f"{rev}:{path}" for _w, rev, files in edits if rev for path in files]
    old = read(names) if names else {}
    return [FileChange(where, path, old.get(f"{rev}:{path}") if rev else None, new)
            for where, rev, files in edits for path, new in sorted(files.items())]


def counts(changes: Iterable[FileChange]) -> tuple[int, int]:
    """(files changed, lines added + removed)."""
    files = lines = 0
    for c in changes:
        if c.old == c.new:
            continue
        files += 1
        sm = difflib.SequenceMatcher(a=_lines(c.old), b=_lines(c.new), autojunk=False)
        lines += sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")
    return files, lines
