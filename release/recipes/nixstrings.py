"""What a Nix string literal evaluates to, from its parts (pure): escapes, and the indentation
Nix strips from ``''…''`` strings, by the rules of Nix's own parser (``stripIndentation``): the
smallest indentation of the lines that are not blank, counted in spaces, comes off every line; a
blank first line after the opening ``''`` and a final line of spaces go. An interpolation or an
escape ends a line's indentation when the smallest one is measured, but an escaped newline still
starts a line when it is stripped (NixOS/nix#16011): the parts keep those three kinds apart.

May import: nothing of torchbot.
"""

from __future__ import annotations

TEXT, ESCAPE, EXPR = "text", "escape", "expr"
Part = tuple[str, str]  # (text, kind): TEXT as written, an ESCAPE's character(s), an interpolated EXPR

_SIMPLE = {"n": "\n", "t": "\t", "r": "\r"}


def unescape(raw: str, indented: bool) -> str:
    """``\\n`` / ``\\"`` (``"…"`` strings) or ``''\\n`` / ``'''`` (``''…''`` strings) -> the text."""
    if indented:
        if raw == "'''":
            return "''"
        body = raw[3:] if raw.startswith("''\\") else raw[2:]
    else:
        body = raw[1:]
    return _SIMPLE.get(body, body)


def join(parts: list[Part], indented: bool) -> str:
    """The string the parts make (indentation stripped for a ``''…''`` string)."""
    if not indented:
        return "".join(text for text, _ in parts)
    merged: list[Part] = []
    for text, kind in parts:  # runs of text as Nix's lexer reads them
        if kind == TEXT and merged and merged[-1][1] == TEXT:
            merged[-1] = (merged[-1][0] + text, TEXT)
        else:
            merged.append((text, kind))
    if merged and merged[0][1] == TEXT:
        first = merged[0][0]
        blank = len(first) - len(first.lstrip(" "))
        if first[blank : blank + 1] == "\n":  # `''` then a blank first line: Nix's lexer drops it
            merged[0] = (first[blank + 1 :], TEXT)
    return _strip(merged, _min_indent(merged))


def _min_indent(parts: list[Part]) -> int:
    """The smallest indentation of a line with content (blank lines do not count)."""
    least, current, at_start = 1 << 30, 0, True
    for text, kind in parts:
        if kind != TEXT:
            if at_start:
                at_start, least = False, min(least, current)
            continue
        for c in text:
            if at_start:
                if c == " ":
                    current += 1
                elif c == "\n":
                    current = 0
                else:
                    at_start, least = False, min(least, current)
            elif c == "\n":
                at_start, current = True, 0
    return least


def _strip(parts: list[Part], indent: int) -> str:
    out: list[str] = []
    at_start, dropped = True, 0
    for i, (text, kind) in enumerate(parts):
        if kind == EXPR:
            at_start, dropped = False, 0
            out.append(text)
            continue
        kept: list[str] = []
        for c in text:
            if at_start and c == " ":
                if dropped >= indent:
                    kept.append(c)
                dropped += 1
            elif at_start and c == "\n":
                dropped = 0
                kept.append(c)
            else:
                if at_start:
                    at_start, dropped = False, 0
                kept.append(c)
                if c == "\n":
                    at_start = True
        s = "".join(kept)
        if i == len(parts) - 1:  # a last line of spaces only goes
            nl = s.rfind("\n")
            if nl >= 0 and not s[nl + 1 :].strip(" "):
                s = s[: nl + 1]
        out.append(s)
    return "".join(out)
