"""What a recipe is, without its comments and layout (pure): the rule that decides whether a
variant changed when its derivation cannot be evaluated (``release.builds.changes``).

``shape`` is the recipe's tree-sitter-nix syntax tree as a sequence of tokens (every leaf but
comments, with its text: names, operators, literals and string fragments as written), hashed.
Whitespace between tokens and comments are not tokens, so re-indenting, re-wrapping or editing
a comment leaves it as it was; a string's contents (a build script) are tokens, so editing one
changes it, as it changes the derivation.

``local_paths`` are the files the recipe refers to by a relative path (``import ./x.nix``,
``./patches/a.patch``), which its derivation depends on too. ``uses_arguments`` says whether
the recipe's body uses the arguments Flox calls it with (``{ pkgs, … }:``: the nixpkgs of the
environment's ``manifest.lock``); a recipe that fetches its own pinned nixpkgs and never uses
them does not depend on ``manifest.lock``.

May import: release.recipes.nixtree.
"""

from __future__ import annotations

import hashlib

from release.recipes.nixtree import NixSyntaxError, parse


def shape(text: str) -> str:
    """A hash of the recipe's tokens without comments and layout; a recipe that does not parse
    is its own bytes (any edit is a change)."""
    h = hashlib.sha256()
    try:
        src = parse(text)
    except NixSyntaxError:
        h.update(b"unparsed\0" + text.encode())
        return h.hexdigest()
    stack = [src.tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "comment":
            continue
        if n.child_count == 0:
            h.update(n.type.encode() + b"\0" + src.data[n.start_byte:n.end_byte] + b"\0")
        else:
            stack.extend(reversed(n.children))
    return h.hexdigest()


def local_paths(text: str) -> list[str]:
    """The relative paths the recipe names (``./x``, ``../y``), as written, in order."""
    try:
        src = parse(text)
    except NixSyntaxError:
        return []
    out: list[str] = []
    stack = [src.tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "path_expression":
            t = src.text(n)
            if t.startswith(("./", "../")) and "${" not in t and t not in out:
                out.append(t)
            continue
        stack.extend(reversed(n.named_children))
    return out


def uses_arguments(text: str) -> bool:
    """Whether the recipe is a function whose body uses one of its named arguments."""
    try:
        src = parse(text)
    except NixSyntaxError:
        return True
    fn = next((c for c in src.tree.root_node.named_children if c.type != "comment"), None)
    if fn is None or fn.type != "function_expression":
        return False
    names: set[str] = set()
    body = None
    for c in fn.named_children:
        if c.type == "formals":
            names |= {src.text(f.named_children[0]) for f in c.named_children
                      if f.type == "formal" and f.named_children}
        elif c.type == "identifier":  # `pkgs: …`
            names.add(src.text(c))
        elif c.type != "comment":
            body = c
    if body is None or not names:
        return False
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and n.parent is not None and n.parent.type in (
                "variable_expression", "inherited_attrs") and src.text(n) in names:
            return True
        stack.extend(n.named_children)
    return False
