"""The compiler flags a recipe's build scripts set (pure), on its syntax tree.

The recipes write ``export CXXFLAGS="${lib.concatStringsSep " " cpuFlags} $CXXFLAGS"`` in
``preConfigure``. The list is evaluated where Nix evaluates it: in the scope of the attribute set
that holds the script, so a ``cpuFlags`` bound by ``overrideAttrs (old: let cpuFlags = …; in {
… })`` is that one, not a ``cpuFlags`` of the file's outer ``let``; ``cpuFlags ++ extra`` is both
lists. A list only nixpkgs can compute (``lib.optionals …``) is not guessed: the reading says
which list it could not evaluate, and the ISA is then taken from elsewhere.

May import: release.recipes.nixtree, release.recipes.buildchain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from release.recipes.buildchain import Build
from release.recipes.nixtree import STRINGS, Inherit, Scope, Source
from release.recipes.nixtree import field as child

if TYPE_CHECKING:
    from tree_sitter import Node

SCRIPTS = ("preConfigure", "preBuild", "configurePhase", "buildPhase")
_FLAG = re.compile(r"(?<![\w-])(-m(?:arch=[\w.+-]+|avx[\w]*|no-[\w]+|fma|f16c|bmi2?|sse[\w.]*))")


@dataclass
class Flags:
    flags: tuple[str, ...] = ()
    unread: list[str] = field(default_factory=list)  # joined lists only nixpkgs could evaluate, as written


def cpu_flags(builds: list[Build | None], script: str) -> Flags:
    """The flags the builds' scripts join into a string, each list evaluated in its script's
    scope; else a ``cpuFlags`` binding in the build's scope; else flags written into the script."""
    found: list[str] = []
    unread: list[str] = []
    for b in filter(None, builds):
        for name in SCRIPTS:
            holder = next((a for a in b.attrsets if name in a.ranges()), None)
            node = holder.ranges()[name] if holder is not None else None
            if node is None or isinstance(node, Inherit):
                continue
            for expr in _interpolations(node):
                joined = _joined_list(b.src, expr, holder.scope or b.scope)
                if joined is None:
                    continue
                listed, scope = joined
                value = b.src.value(listed, scope)
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    found.extend(value)
                else:
                    unread.append(" ".join(b.src.text(listed).split()))
    if unread:
        return Flags((), list(dict.fromkeys(unread)))
    if found:
        return Flags(tuple(dict.fromkeys(found)))
    for b in filter(None, builds):
        bound = b.scope.lookup("cpuFlags")
        value = bound.value() if bound is not None else None
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return Flags(tuple(value))
    return Flags(tuple(dict.fromkeys(_FLAG.findall(script))))


def _interpolations(node: Node) -> list[Node]:
    """The expressions interpolated into the strings of an expression (``${…}``), in order."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "interpolation":
            expr = child(n, "expression")
            if expr is not None:
                out.append(expr)
        elif n.type != "comment":
            stack.extend(reversed(n.named_children))
    return out


def _joined_list(src: Source, expr: Node, scope: Scope) -> tuple[Node, Scope] | None:
    """``concatStringsSep SEP LIST`` (any ``….concatStringsSep``), directly or through a bound
    name: LIST and the scope it is evaluated in; None for any other expression."""
    for _ in range(8):
        if expr.type == "parenthesized_expression":
            expr = child(expr, "expression")
        elif expr.type == "variable_expression":
            bound = scope.lookup(src.text(expr))
            if bound is None or bound.node is None or bound.attr is not None:
                return None
            expr, scope = bound.node, bound.scope
        else:
            break
        if expr is None:
            return None
    if expr.type != "apply_expression":
        return None
    fn = child(expr, "function")
    head = child(fn, "function") if fn is not None and fn.type == "apply_expression" else None
    if head is None or head.type in STRINGS or src.text(head).rsplit(".", 1)[-1] != "concatStringsSep":
        return None
    listed = child(expr, "argument")
    return (listed, scope) if listed is not None else None
