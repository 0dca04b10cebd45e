"""Nix source as a syntax tree (tree-sitter-nix), and the literal values the recipe reader needs.

``parse`` gives a recipe's tree (``release/recipes/nixgrammar.py``: tree-sitter, loaded on the
first parse; a syntax error raises ``NixSyntaxError`` naming its line, and so does a name bound
twice, which Nix refuses and tree-sitter does not: ``release/recipes/nixdups.py``). On the tree:

- ``Source.bindings`` reads an attribute set or ``let`` block (``a.b = …``, ``inherit x``,
  ``inherit (s) x``); ``Scope`` holds the names visible at a point: ``let`` bindings, lambda
  parameters with their defaults, ``rec`` sets, and ``with`` environments (a name bound nowhere
  else comes from the innermost ``with``, as in Nix);
- ``Source.value`` evaluates the literal parts: strings (escapes, the indentation of ``''``
  strings, interpolations of known strings; ``release/recipes/nixstrings.py``), lists, booleans,
  ``null``, names bound in scope, ``//`` merges, ``++``, and selections (with ``or`` defaults) into
  known attribute sets. Anything else is ``UNKNOWN``: the reader never guesses a value Nix would
  compute from nixpkgs (an interpolation of an unknown value stays in its string as written);
- ``Source.strings_in`` gives string literals as written, for the patterns the reader looks for
  in build scripts and URLs.

May import: release.recipes.nixstrings, release.recipes.nixgrammar, release.recipes.nixdups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from release.recipes import nixstrings
from release.recipes.nixdups import duplicate
from release.recipes.nixgrammar import FIELD, NixSyntaxError, field, tree_of

if TYPE_CHECKING:
    import tree_sitter

__all__ = ["STRINGS", "UNKNOWN", "Attrs", "Bound", "Defaulted", "Inherit", "NixSyntaxError", "Scope", "Source", "field",
           "parse"]

STRINGS = frozenset({"string_expression", "indented_string_expression"})
SETS = frozenset({"attrset_expression", "rec_attrset_expression"})


class _Unknown:
    """A value only evaluation against nixpkgs would give."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class Defaulted:
    """``x.y or DEFAULT`` where ``x.y`` is unknown: Nix takes ``x.y`` when it exists."""

    default: object


@dataclass(frozen=True, slots=True)
class Inherit:
    """``inherit name;`` (``source`` None: the name of the enclosing scope) or
    ``inherit (source) name;``."""

    source: tree_sitter.Node | None
    name: str


if TYPE_CHECKING:
    Binding = tree_sitter.Node | Inherit  # a binding's value expression, or what it inherits


def parse(text: str | bytes) -> Source:
    """The recipe's syntax tree; NixSyntaxError when it has a syntax error."""
    data = text.encode() if isinstance(text, str) else text
    tree, body = tree_of(data)
    twice = duplicate(tree.root_node, data)  # tree-sitter accepts a name bound twice; Nix does not
    if twice:
        raise NixSyntaxError(twice)
    return Source(data, tree, body)


class Source:
    """One recipe's bytes and tree, with the readings of its attribute sets kept."""

    __slots__ = ("_bindings", "data", "root", "tree")

    def __init__(self, data: bytes, tree: tree_sitter.Tree, root: tree_sitter.Node):
        self.data = data
        self.tree = tree
        self.root = root
        self._bindings: dict[int, dict[str, Binding]] = {}

    # -- text ------------------------------------------------------------------------------

    def text(self, node: tree_sitter.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode(errors="replace")

    def literal(self, node: tree_sitter.Node) -> str:
        """A string literal as written between its quotes (interpolations and escapes as written)."""
        q = 1 if node.type == "string_expression" else 2
        return self.data[node.start_byte + q : node.end_byte - q].decode(errors="replace")

    def strings_in(self, node: tree_sitter.Node | None) -> list[str]:
        """Every string literal in the expression (and unquoted URL), as written, in source order
        (comments are not strings; a string inside an interpolation is part of the string around it)."""
        out: list[str] = []
        if node is None:
            return out
        stack = [node]
        while stack:
            n = stack.pop()
            t = n.type
            if t in STRINGS:
                out.append(self.literal(n))
            elif t == "uri_expression":  # an unquoted URL is a string too
                out.append(self.text(n))
            elif t != "comment":
                stack.extend(reversed(n.named_children))
        return out

    def names_in(self, node: tree_sitter.Node) -> list[str]:
        """The names an expression uses (variables, not attribute names; strings not entered)."""
        return self._texts_of("variable_expression", node)

    def identifiers_in(self, node: tree_sitter.Node) -> list[str]:
        """Every name in an expression, attribute names included (strings not entered)."""
        return self._texts_of("identifier", node)

    def _texts_of(self, kind: str, node: tree_sitter.Node) -> list[str]:
        """The text of every ``kind`` node in ``node``, in order (strings and comments not entered)."""
        out: list[str] = []
        stack = [node]
        while stack:
            n = stack.pop()
            t = n.type
            if t == kind:
                out.append(self.text(n))
            elif t not in STRINGS and t != "comment":
                stack.extend(reversed(n.named_children))
        return out

    def in_code(self, pos: int) -> bool:
        """Whether the byte at ``pos`` is Nix code (not a comment or part of a string's text)."""
        n = self.tree.root_node.descendant_for_byte_range(pos, pos + 1)
        return n is not None and n.type == "identifier"

    def attr_names(self, attrpath: tree_sitter.Node) -> tuple[str, ...] | None:
        """``a.b."c"`` -> ("a", "b", "c"); None when a part is interpolated."""
        out = []
        for part in attrpath.named_children:
            t = part.type
            if t == "identifier":
                out.append(self.data[part.start_byte : part.end_byte].decode(errors="replace"))
            elif t == "string_expression" and not any(c.type == "interpolation" for c in part.named_children):
                out.append(self.literal(part))
            elif t != "comment":
                return None
        return tuple(out)

    def selection(self, node: tree_sitter.Node) -> tuple[tree_sitter.Node, tuple[str, ...]]:
        """A select expression's base and attribute path (empty when a part is interpolated)."""
        return field(node, "expression"), self.attr_names(field(node, "attrpath")) or ()

    # -- bindings --------------------------------------------------------------------------

    def bindings(self, node: tree_sitter.Node) -> dict[str, Binding]:
        """``{"a.b": value expression}`` of an attribute set or ``let`` (``inherit`` entries as
        ``Inherit``; ``parse`` refuses a name bound twice)."""
        got = self._bindings.get(node.id)
        if got is not None:
            return got
        out: dict[str, Binding] = {}
        kids = node.named_children
        block = kids[0] if kids and kids[0].type == "binding_set" else \
            next((c for c in kids if c.type == "binding_set"), None)
        data = self.data
        expression, attrpath = FIELD["expression"], FIELD["attrpath"]
        for b in block.named_children if block is not None else ():
            t = b.type
            if t == "binding":
                value = b.child_by_field_id(expression)
                parts = b.child_by_field_id(attrpath).named_children
                if len(parts) == 1 and parts[0].type == "identifier":  # the usual `name = value;`
                    name = data[parts[0].start_byte : parts[0].end_byte].decode(errors="replace")
                else:
                    path = self.attr_names(b.child_by_field_id(attrpath))
                    name = ".".join(path) if path else None
                if name and value is not None and name not in out:
                    out[name] = value
            elif t in ("inherit", "inherit_from"):
                source = field(b, "expression") if t == "inherit_from" else None
                names = field(b, "attrs")
                for name in self.attr_names(names) or () if names is not None else ():
                    out.setdefault(name, Inherit(source, name))
        self._bindings[node.id] = out
        return out

    def items(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        """Elements of a list expression."""
        return [c for c in node.named_children if c.type != "comment"]

    # -- values ----------------------------------------------------------------------------

    def value(self, node: tree_sitter.Node, scope: Scope | None = None, depth: int = 0):
        """The literal value of an expression: str, bool, None, list, ``Attrs`` (lazy),
        ``Defaulted``, or UNKNOWN."""
        if depth > 12:
            return UNKNOWN
        t = node.type
        if t in STRINGS:
            return self.string(node, scope, depth)
        if t == "variable_expression":
            name = self.text(node)
            if name in ("true", "false"):
                return name == "true"
            if name == "null":
                return None
            bound = scope.lookup(name) if scope else None
            return bound.value(depth + 1) if bound else UNKNOWN
        if t == "parenthesized_expression":
            return self.value(field(node, "expression"), scope, depth + 1)
        if t == "list_expression":
            return [self.value(i, scope, depth + 1) for i in self.items(node)]
        if t in SETS:
            if t == "rec_attrset_expression":
                scope = Scope(self, scope)
                scope.add(self.bindings(node))
            return Attrs(self, node, scope)
        if t == "select_expression":
            return self._select(node, scope, depth)
        if t == "binary_expression":
            return self._binary(node, scope, depth)
        if t == "let_expression":
            inner = Scope(self, scope)
            inner.add(self.bindings(node))
            return self.value(field(node, "body"), inner, depth + 1)
        if t == "with_expression":
            inner = Scope(self, scope, env=field(node, "environment"))
            return self.value(field(node, "body"), inner, depth + 1)
        if t in ("integer_expression", "float_expression", "path_expression", "spath_expression", "uri_expression"):
            return self.text(node)
        return UNKNOWN

    def _select(self, node, scope, depth):
        base, path = self.selection(node)
        val = self.value(base, scope, depth + 1) if path else UNKNOWN
        for name in path:
            val = val.get(name) if isinstance(val, Attrs) else UNKNOWN
            if val is UNKNOWN:
                break
        default = field(node, "default")
        if val is UNKNOWN and default is not None:
            return Defaulted(self.value(default, scope, depth + 1))
        return val

    def _binary(self, node, scope, depth):
        op = self.text(field(node, "operator"))
        if op not in ("//", "++"):
            return UNKNOWN
        left = self.value(field(node, "left"), scope, depth + 1)
        right = self.value(field(node, "right"), scope, depth + 1)
        if op == "//":
            return right.over(left if isinstance(left, Attrs) else None) if isinstance(right, Attrs) else UNKNOWN
        return left + right if isinstance(left, list) and isinstance(right, list) else UNKNOWN

    def string(self, node: tree_sitter.Node, scope: Scope | None, depth: int = 0) -> str:
        """What a string literal evaluates to (escapes, ``''`` indentation); an interpolation whose
        value is not a known string stays as written (``${…}``)."""
        kids = node.named_children
        indented = node.type == "indented_string_expression"
        if not indented and (not kids or (len(kids) == 1 and kids[0].type == "string_fragment")):
            return self.literal(node)  # the usual "10.0": nothing to evaluate
        data = self.data
        q = 2 if indented else 1
        pos, end = node.start_byte + q, node.end_byte - q
        parts: list[nixstrings.Part] = []
        for part in kids:
            if part.start_byte > pos:
                parts.append((data[pos : part.start_byte].decode(errors="replace"), nixstrings.TEXT))
            t = part.type
            start = max(pos, part.start_byte)
            if t == "string_fragment":
                parts.append((data[start : part.end_byte].decode(errors="replace"), nixstrings.TEXT))
            elif t == "dollar_escape":  # `\$` / `''$`: the `$` that follows is text, not an interpolation
                parts.append(("$", nixstrings.ESCAPE))
                pos = part.end_byte + 1
                continue
            elif t == "escape_sequence":
                parts.append((nixstrings.unescape(self.text(part), indented), nixstrings.ESCAPE))
            elif t == "interpolation":
                parts.append((self._interpolated(part, scope, depth), nixstrings.EXPR))
            pos = max(pos, part.end_byte)
        if end > pos:
            parts.append((data[pos:end].decode(errors="replace"), nixstrings.TEXT))
        return nixstrings.join(parts, indented)

    def _interpolated(self, part: tree_sitter.Node, scope: Scope | None, depth: int) -> str:
        inner = field(part, "expression")
        v = self.value(inner, scope, depth + 1) if inner is not None and scope is not None else UNKNOWN
        return v if isinstance(v, str) else self.text(part)


class Attrs:
    """An attribute set read lazily: ``get(name)`` evaluates one binding; ``over`` layers this set
    over another (``base // this``)."""

    def __init__(self, src: Source, node: tree_sitter.Node | None, scope: Scope | None,
                 base: Attrs | None = None, extends_unknown: bool = False):
        self.src = src
        self.node = node
        self.scope = scope
        self.base = base
        self.extends_unknown = extends_unknown  # `unknown // { … }`: other names come from nixpkgs
        self._names: set[str] | None = None
        self._ranges: dict[str, Binding] | None = None

    def over(self, base: Attrs | None) -> Attrs:
        return Attrs(self.src, self.node, self.scope, base, extends_unknown=base is None)

    def ranges(self) -> dict[str, Binding]:
        """The set's own bindings (``inherit`` ones as ``Inherit``)."""
        if self._ranges is None:
            self._ranges = self.src.bindings(self.node) if self.node is not None else {}
        return self._ranges

    def names(self) -> set[str]:
        if self._names is None:
            out = {k.split(".")[0] for k in self.ranges()}
            self._names = out | (self.base.names() if self.base else set())
        return self._names

    def node_of(self, name: str) -> tree_sitter.Node | None:
        """The expression bound to ``name`` (for ``inherit (s) name``: ``s``)."""
        got = self.ranges().get(name)
        if got is not None:
            return got.source if isinstance(got, Inherit) else got
        if any(k.startswith(name + ".") for k in self.ranges()):
            return None
        return self.base.node_of(name) if self.base else None

    def get(self, name: str):
        got = self.ranges().get(name)
        if got is not None:
            return self._bound(got).value()
        nested = {k[len(name) + 1 :]: v for k, v in self.ranges().items() if k.startswith(name + ".")}
        if nested:
            return _PathAttrs(self.src, nested, self.scope)
        if self.base is not None:
            return self.base.get(name)
        return UNKNOWN

    def _bound(self, got: Binding) -> Bound:
        if isinstance(got, Inherit):
            outer = self.scope
            if self.node is not None and self.node.type == "rec_attrset_expression" and outer is not None:
                outer = outer.parent  # `rec { inherit x; }` takes x from around the set
            if got.source is None:
                return (outer.lookup(got.name) if outer else None) or Bound(self.src, None, self.scope)
            return Bound(self.src, got.source, outer or Scope(self.src), got.name)
        return Bound(self.src, got, self.scope or Scope(self.src))


class _PathAttrs(Attrs):
    """``a.b = 1; a.c = 2;`` seen as ``a = { b = 1; c = 2; }``."""

    def __init__(self, src: Source, table: dict[str, Binding], scope):
        super().__init__(src, None, scope)
        self._table = table

    def ranges(self) -> dict[str, Binding]:
        return self._table


class Bound:
    """A name's binding: its expression, the scope it is evaluated in, and for
    ``inherit (s) name`` the attribute it takes from ``s``."""

    __slots__ = ("_known", "attr", "node", "scope", "src")

    def __init__(self, src: Source, node: tree_sitter.Node | None, scope: Scope, attr: str | None = None):
        self.src = src
        self.node = node
        self.scope = scope
        self.attr = attr
        self._known = UNKNOWN  # the value once evaluated (UNKNOWN is evaluated again: it may be depth's)

    def value(self, depth: int = 0):
        if self._known is not UNKNOWN or self.node is None:
            return self._known
        v = self.src.value(self.node, self.scope, depth)
        if self.attr is not None:
            v = v.get(self.attr) if isinstance(v, Attrs) else UNKNOWN
        self._known = v
        return v


class Scope:
    """Names visible at a point: let bindings, lambda parameters (with their defaults), the
    bindings of a ``rec`` set, and ``with`` environments."""

    __slots__ = ("env", "names", "parent", "src")

    def __init__(self, src: Source, parent: Scope | None = None, env: tree_sitter.Node | None = None):
        self.src = src
        self.parent = parent
        self.names: dict[str, Bound | None] = {}  # None: a parameter without a default
        self.env = env  # `with ENV;`: names bound nowhere lexically come from ENV

    def add(self, binds: dict[str, Binding]) -> None:
        for name, got in binds.items():
            if "." in name:
                continue
            if isinstance(got, Inherit):
                # `inherit x;` in a let: the x around the let; `inherit (s) x;`: s.x
                self.names[name] = (self.parent.lookup(name) if self.parent else None) if got.source is None \
                    else Bound(self.src, got.source, self, name)
            else:
                self.names[name] = Bound(self.src, got, self)

    def add_params(self, fn: tree_sitter.Node) -> None:
        """``x:`` or ``{ a, b ? default, ... }:`` (``x@{ … }``): parameters, with their defaults."""
        universal = field(fn, "universal")
        if universal is not None:
            self.names[self.src.text(universal)] = None
        formals = field(fn, "formals")
        if formals is None:
            return
        for f in formals.named_children:
            if f.type != "formal":
                continue
            name, default = field(f, "name"), field(f, "default")
            self.names[self.src.text(name)] = Bound(self.src, default, self) if default is not None else None

    def lookup(self, name: str) -> Bound | None:
        s: Scope | None = self
        env = None
        while s is not None:
            if name in s.names:
                return s.names[name]
            if env is None and s.env is not None:
                env = s
            s = s.parent
        if env is not None:  # the innermost `with` (its environment is evaluated outside it)
            return Bound(self.src, env.env, env.parent or Scope(self.src), name)
        return None
