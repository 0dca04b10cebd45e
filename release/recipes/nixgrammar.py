"""tree-sitter-nix: the grammar (loaded on first use), parsing, and syntax errors named by line.

A process that finds every recipe in the fact cache never imports tree-sitter: the grammar is
loaded by the first ``tree_of``. A text Nix would refuse (its tree has ERROR or MISSING nodes)
raises ``NixSyntaxError`` naming the line of the first error node, the innermost where errors
nest: the line ``nix-instantiate --parse`` names for the same mistake.

May import: nothing of torchbot.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tree_sitter

_FIELD_NAMES = ("expression", "body", "function", "argument", "attrpath", "attr", "default", "formals", "universal",
                "name", "environment", "left", "right", "operator", "element", "attrs", "binding", "formal")
FIELD: dict[str, int] = {}  # field name -> id in the grammar (filled when the grammar is loaded)
_grammar: list = []  # [Language, Parser class] once loaded
_local = threading.local()
_loading = threading.Lock()


class NixSyntaxError(ValueError):
    """The text is not a Nix expression (what tree-sitter-nix could not read, and where)."""


def language() -> tree_sitter.Language:
    """The tree-sitter-nix grammar, loaded on first use."""
    if not _grammar:
        with _loading:
            if not _grammar:
                import tree_sitter
                import tree_sitter_nix

                lang = tree_sitter.Language(tree_sitter_nix.language())
                FIELD.update({name: lang.field_id_for_name(name) for name in _FIELD_NAMES})
                _grammar.extend([lang, tree_sitter.Parser])
    return _grammar[0]


def field(node: tree_sitter.Node, name: str) -> tree_sitter.Node | None:
    return node.child_by_field_id(FIELD[name])


def tree_of(data: bytes) -> tuple[tree_sitter.Tree, tree_sitter.Node]:
    """The syntax tree of a Nix file and its expression; NixSyntaxError when it has a syntax error."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        lang = language()
        parser = _local.parser = _grammar[1](lang)
    tree = parser.parse(data)
    top = tree.root_node
    if top.has_error:
        raise NixSyntaxError(_first_error(top, data))
    body = field(top, "expression")
    if body is None:
        raise NixSyntaxError("the file holds no expression")
    return tree, body


def _first_error(top: tree_sitter.Node, data: bytes) -> str:
    """``line N: …`` for the first ERROR or MISSING node, the innermost where errors nest (only
    branches with errors are walked)."""
    node = top
    while True:
        line = node.start_point[0] + 1
        if node.is_missing:
            what = "an expression" if node.type == "identifier" else repr(node.type)
            return f"line {line}: {what} is missing"
        inner = next((c for c in node.children if c.has_error), None)
        if node.is_error and inner is None:
            first = node.children[0] if node.children else None
            if first is not None and first.type in ('"', "''") and not first.is_named:
                return f"line {line}: a string opened here ({first.type}) is never closed"
            got = data[node.start_byte : node.end_byte].decode(errors="replace").strip().split("\n")[0][:30]
            return f"line {line}: unexpected {got!r}" if got else f"line {line}: syntax error"
        if inner is None:
            return f"line {line}: syntax error"
        node = inner
