"""Names a Nix file defines twice, which Nix's parser refuses (pure, on the tree-sitter tree).

tree-sitter-nix accepts ``{ cpuFlags = …; cpuFlags = …; }``; ``nix-instantiate --parse`` does not
("attribute 'cpuFlags' already defined"), so a recipe that does it is not a recipe. As in Nix's
parser, within one attribute set or ``let``: a name bound twice (``inherit`` included) is an
error, ``a.x = …; a.y = …;`` builds one set ``a``, and two attribute-set literals under one name
merge (``a = { x = 1; }; a.y = 2;``) unless they share a name. A function's formals may not
repeat either, nor name its ``@`` argument. The error names the line Nix names: the second
definition's (the function's first line for ``x@{ x }``).

May import: release.recipes.nixgrammar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from release.recipes.nixgrammar import field, language

if TYPE_CHECKING:
    import tree_sitter

_LITERALS = ("attrset_expression", "rec_attrset_expression")
_query: list = []


class _Attr:
    """A name bound in a set: the line of its definition, and its names when it is a set Nix can merge into."""

    __slots__ = ("children", "line")

    def __init__(self, line: int, children: dict[str, _Attr] | None = None):
        self.line = line
        self.children = children


def duplicate(top: tree_sitter.Node, data: bytes) -> str | None:
    """``line N: attribute 'a.b' already defined at line M`` for the first name the file defines
    twice (or a repeated formal argument); None when there is none."""
    if not _query:
        import tree_sitter

        q = tree_sitter.Query(language(), "(binding_set) @set (formals) @formals")
        _query.append(lambda node: tree_sitter.QueryCursor(q).captures(node))
    found = _query[0](top)
    errors: list[tuple[int, str]] = []
    built: dict[int, dict[str, _Attr]] = {}
    for node in found.get("set", ()):
        if _repeats(node, data):  # else no name of this set can clash (its nested sets are checked on their own)
            _defined(node, data, built, errors)
    for node in found.get("formals", ()):
        seen: set[str] = set()
        for f in node.named_children:
            name = field(f, "name") if f.type == "formal" else None
            text = _text(name, data) if name is not None else None
            if text in seen:
                line = f.start_point[0] + 1
                errors.append((f.start_byte, f"line {line}: duplicate formal function argument '{text}'"))
            seen.add(text)
        fn = node.parent
        at = field(fn, "universal") if fn is not None and fn.type == "function_expression" else None
        if at is not None and _text(at, data) in seen:  # ``x@{ x }``: Nix names the function's first line
            errors.append((fn.start_byte, f"line {fn.start_point[0] + 1}: duplicate formal function argument "
                                          f"'{_text(at, data)}'"))
    return min(errors)[1] if errors else None


def _repeats(node: tree_sitter.Node, data: bytes) -> bool:
    """Whether two bindings of a binding_set start with the same name (``a = …; a.x = …;``,
    ``inherit a; a = …;``), computed names aside: the only sets where a name can be defined twice."""
    if node.named_child_count < 2 and (node.named_child_count == 0 or node.named_child(0).type == "binding"):
        return False  # one binding defines one name
    seen: set[bytes] = set()
    for b in node.named_children:
        if b.type == "binding":
            path = field(b, "attrpath")
            first = path.named_child(0) if path is not None else None
            parts = [first] if first is not None else []
        elif b.type in ("inherit", "inherit_from"):
            attrs = field(b, "attrs")
            parts = attrs.named_children if attrs is not None else []
        else:
            continue
        for part in parts:
            key = data[part.start_byte : part.end_byte] if part.type == "identifier" else _static_name(part, data)
            if isinstance(key, str):
                key = key.encode()
            if key is None:
                continue
            if key in seen:
                return True
            seen.add(key)
    return False


def _text(node: tree_sitter.Node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode(errors="replace")


def _static_name(part: tree_sitter.Node, data: bytes) -> str | None:
    """An attribute name as Nix's parser knows it: ``a``, ``"a"``, ``${"a"}``; None when computed."""
    if part.type == "interpolation":
        inner = field(part, "expression")
        return _static_name(inner, data) if inner is not None and inner.type == "string_expression" else None
    if part.type == "identifier":
        return _text(part, data)
    if part.type == "string_expression":
        kids = part.named_children
        if all(k.type == "string_fragment" for k in kids):
            return "".join(_text(k, data) for k in kids)
    return None


def _literal_set(value: tree_sitter.Node | None) -> tree_sitter.Node | bool | None:
    """The binding_set of an attribute-set literal (True for ``{ }``); None for any other value."""
    while value is not None and value.type == "parenthesized_expression":
        value = field(value, "expression")
    if value is None or value.type not in _LITERALS:
        return None
    return next((c for c in value.named_children if c.type == "binding_set"), True)


def _defined(node: tree_sitter.Node, data: bytes, built: dict, errors: list) -> dict[str, _Attr]:
    """The names a binding_set defines (each once; duplicates go to ``errors``)."""
    got = built.get(node.id)
    if got is not None:
        return got
    out: dict[str, _Attr] = {}
    built[node.id] = out
    for b in node.named_children:
        line = b.start_point[0] + 1
        if b.type == "binding":
            path = field(b, "attrpath")
            names = [_static_name(p, data) for p in path.named_children if p.type != "comment"] if path else []
            _add(out, names, field(b, "expression"), (b.start_byte, line), data, built, errors)
        elif b.type in ("inherit", "inherit_from"):
            attrs = field(b, "attrs")
            for part in attrs.named_children if attrs is not None else ():
                name = _static_name(part, data)
                if name is None:
                    continue
                if name in out:
                    errors.append((b.start_byte, f"line {line}: attribute '{name}' already defined at line "
                                                 f"{out[name].line}"))
                else:
                    out[name] = _Attr(line)
    return out


def _add(out: dict[str, _Attr], names: list[str | None], value, where: tuple[int, int], data: bytes, built: dict,
         errors: list) -> None:
    pos, line = where
    cur = out
    for i, name in enumerate(names):
        if name is None:  # a computed name: Nix checks it only when evaluating
            return
        existing = cur.get(name)
        shown = ".".join(n for n in names if n is not None)
        if i < len(names) - 1:
            if existing is None:
                existing = cur[name] = _Attr(line, {})
            elif existing.children is None:
                errors.append((pos, f"line {line}: attribute '{shown}' already defined at line {existing.line}"))
                return
            cur = existing.children
            continue
        literal = _literal_set(value)
        children = None if literal is None else {} if literal is True else _defined(literal, data, built, errors)
        if existing is None:
            cur[name] = _Attr(line, children)
        elif existing.children is not None and children is not None:
            for k, v in children.items():
                if k in existing.children:
                    errors.append((pos, f"line {v.line}: attribute '{shown}.{k}' already defined at line "
                                        f"{existing.children[k].line}"))
                else:
                    existing.children[k] = v
        else:
            errors.append((pos, f"line {line}: attribute '{shown}' already defined at line {existing.line}"))
