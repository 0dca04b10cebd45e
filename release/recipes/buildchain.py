"""The build a recipe evaluates to, on its syntax tree (pure): the override chain and the package
set it starts from.

- ``build_of`` follows the recipe's expression through lambdas, ``let``, ``with`` and bound names
  to ``<set>.<pythonXPackages>.<torch|…>`` with its ``.override { … }`` arguments and
  ``.overrideAttrs (old: { … })`` attributes, or to an ``import`` / ``callPackage`` of another file;
- ``nixpkgs_of`` reads the package set that chain starts from: its ``fetchTarball`` pin and the
  overlays of its import (the CUDA package set, a PyTorch source override, patched packages).

May import: config, release.recipes.nixtree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from config.catalog import TorchSource
from release.recipes.nixtree import STRINGS, UNKNOWN, Attrs, Inherit, Scope, Source
from release.recipes.nixtree import field as child

if TYPE_CHECKING:
    from tree_sitter import Node

NONE_PIN = "none"
KINDS = {"torch": "pytorch", "pytorch": "pytorch", "torch-bin": "pytorch", "torchvision": "torchvision",
         "torchaudio": "torchaudio"}
OVERRIDES = ("override", "overrideAttrs", "overridePythonAttrs")
NIXPKGS_URL = re.compile(r"nixpkgs/archive/([0-9a-f]{40})(?:\.tar\.gz)?")
_ARCHIVE_URL = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/archive/([0-9a-f]{7,40})(?:\.tar\.gz)?")
_CUDA_SET = re.compile(r"cudaPackages_(\d+)(?:_(\d+))?")
_IMPORTS = ("import", "callPackage", "scopedImport")


@dataclass
class Build:
    """An override chain: base attribute path, its override arguments and overrideAttrs sets."""

    src: Source
    scope: Scope
    root: str | None = None  # the name the base path starts from
    root_node: Node | None = None
    root_scope: Scope | None = None  # where the root name is looked up
    path: tuple[str, ...] = ()
    overrides: list[Attrs] = field(default_factory=list)  # outermost first
    attrsets: list[Attrs] = field(default_factory=list)  # outermost (last applied) first
    imported: str | None = None  # import ./x.nix / "${src}/…/x.nix"
    imported_node: Node | None = None

    @property
    def kind(self) -> str | None:
        return KINDS.get(self.path[-1]) if self.path else None

    def arg(self, name: str):
        for a in self.overrides:
            if name in a.ranges():
                return a.get(name)
        return UNKNOWN

    def arg_node(self, name: str) -> Node | None:
        for a in self.overrides:
            if name in a.ranges():
                return a.node_of(name)
        return None

    def attr(self, name: str):
        for a in self.attrsets:
            if name in a.names():
                return a.get(name)
        return UNKNOWN

    def attr_node(self, name: str) -> Node | None:
        for a in self.attrsets:
            got = a.ranges().get(name)
            if got is not None:
                return got.source if isinstance(got, Inherit) else got
        return None

    def strings_of(self, name: str) -> list[str]:
        """The string literals of an attribute (``${name}`` of known strings filled in)."""
        node = self.attr_node(name)
        if node is None:
            return []
        return [self.src.string(n, self.scope) for n in _string_nodes(node)]


def _string_nodes(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type in STRINGS:
            out.append(n)
        elif n.type != "comment":
            stack.extend(reversed(n.named_children))
    return out


def peel(src: Source, node: Node, scope: Scope, depth: int = 0) -> tuple[Node, Scope]:
    """Through lambdas (parameters into scope), lets, withs, asserts, parentheses and bound names."""
    while depth < 20:
        depth += 1
        t = node.type
        if t == "function_expression":
            scope = Scope(src, scope)
            scope.add_params(node)
            node = child(node, "body")
        elif t == "let_expression":
            scope = Scope(src, scope)
            scope.add(src.bindings(node))
            node = child(node, "body")
        elif t == "with_expression":
            scope = Scope(src, scope, env=child(node, "environment"))
            node = child(node, "body")
        elif t == "parenthesized_expression":
            node = child(node, "expression")
        elif t == "assert_expression":
            node = child(node, "body")
        elif t == "variable_expression":
            bound = scope.lookup(src.text(node))
            if bound is None or bound.node is None or bound.attr is not None:
                break
            node, scope = bound.node, bound.scope
        else:
            break
        if node is None:
            raise ValueError("an expression is missing")
    return node, scope


def _fn_attrs(src: Source, node: Node, scope: Scope) -> Attrs | None:
    """The attribute set an ``overrideAttrs`` argument returns (``old: { … }``, ``old: base // { … }``)."""
    node, inner = peel(src, node, scope)
    val = src.value(node, inner)
    return val if isinstance(val, Attrs) else None


def build_of(src: Source, node: Node, scope: Scope) -> Build:
    """The override chain the expression builds."""
    b = Build(src, scope)
    for _ in range(20):
        node, scope = peel(src, node, scope)
        b.scope = scope
        t = node.type
        if t == "apply_expression":
            fn, _ = peel(src, child(node, "function"), scope)
            if fn.type == "select_expression":
                base, path = src.selection(fn)
                if path and path[-1] in OVERRIDES:
                    _add_override(b, path[-1], child(node, "argument"), scope)
                    if len(path) == 1:
                        node = base
                        continue
                    _set_base(b, base, path[:-1], scope)
                    return b
            _imports(b, node, scope)
            return b
        if t == "select_expression":
            base, path = src.selection(node)
            _set_base(b, base, path, scope)
        elif t == "variable_expression":
            _set_base(b, node, (), scope)
        return b
    return b


def _add_override(b: Build, how: str, arg: Node, scope: Scope) -> None:
    if how == "override":
        node, inner = peel(b.src, arg, scope)
        val = b.src.value(node, inner)
        if isinstance(val, Attrs):
            b.overrides.append(val)
    else:
        a = _fn_attrs(b.src, arg, scope)
        if a is not None:
            b.attrsets.append(a)


def _set_base(b: Build, base: Node, path: tuple[str, ...], scope: Scope) -> None:
    """The chain's base ``root.path``; a root that ``with`` or ``inherit (s)`` binds is read through:
    ``with pkgs.python3Packages; torch`` is ``pkgs.python3Packages.torch``."""
    src = b.src
    for _ in range(10):
        if base.type != "variable_expression":
            break
        bound = scope.lookup(src.text(base))
        if bound is None or bound.attr is None or bound.node is None:
            break
        base, scope, path = bound.node, bound.scope, (bound.attr, *path)
        if base.type == "select_expression":
            base, more = src.selection(base)
            path = (*more, *path)
    b.root = src.text(base) if base.type == "variable_expression" else None
    b.root_node, b.root_scope, b.path = base, scope, path


def _imports(b: Build, node: Node, scope: Scope) -> None:
    """``import PATH { … }`` / ``callPackage PATH { … }``: the recipe builds another file."""
    args = []
    head = node
    while head.type == "apply_expression":
        args.insert(0, child(head, "argument"))
        head = child(head, "function")
    if not args or head.type not in ("variable_expression", "select_expression"):
        return
    name = b.src.text(head) if head.type == "variable_expression" else (b.src.selection(head)[1] or ("",))[-1]
    if name in _IMPORTS:
        b.imported_node = args[0] if name != "scopedImport" else args[-1]
        b.imported = _import_target(b.src, b.imported_node, scope)


def _import_target(src: Source, node: Node, scope: Scope) -> str | None:
    """``./x.nix`` -> "import:x"; ``"${src}/.flox/pkgs/x.nix"`` (src a GitHub archive) -> "remote:…"."""
    node, _ = peel(src, node, scope)
    if node.type == "path_expression":
        stem = src.text(node).rsplit("/", 1)[-1]
        return "import:" + stem.removesuffix(".nix")
    if node.type in STRINGS:
        stem = src.literal(node).rsplit("/", 1)[-1].removesuffix(".nix")
        first = node.named_children[0] if node.named_children else None
        q = 1 if node.type == "string_expression" else 2
        if first is not None and first.type == "interpolation" and first.start_byte == node.start_byte + q:
            inner = child(first, "expression")
            bound = scope.lookup(src.text(inner)) if inner.type == "variable_expression" else None
            if bound is not None and bound.node is not None:
                for text in src.strings_in(bound.node):
                    u = _ARCHIVE_URL.search(text)
                    if u:
                        return f"remote:{u[1]}@{u[2]}:{stem}"
        return "remote:?:" + stem
    return None


# ---------------------------------------------------------------------------------------
# the package set


@dataclass
class Nixpkgs:
    pin: str = NONE_PIN
    cuda_attr: tuple[str, str | None] | None = None  # ("13", "1") or ("13", None) for the alias
    torch_source: TorchSource | None = None
    patches: tuple[str, ...] = ()
    from_caller: bool = False  # a callPackage parameter (no pin of its own)


def nixpkgs_of(b: Build) -> Nixpkgs:
    """The package set a build's base path starts from: its pin and overlays."""
    out = Nixpkgs()
    if b.root is None:
        if b.root_node is not None:
            _read_pkgset(b.src, b.root_node, b.root_scope or b.scope, out)
        return out
    bound = (b.root_scope or b.scope).lookup(b.root)
    if bound is None or bound.node is None:
        out.from_caller = True
        return out
    _read_pkgset(b.src, bound.node, bound.scope, out)
    return out


def _strings_reachable(src: Source, node: Node, scope: Scope, depth: int = 0) -> list[str]:
    """String literals in an expression and in the bindings of the names it uses (two levels)."""
    out = src.strings_in(node)
    if depth >= 2:
        return out
    for name in src.names_in(node):
        bound = scope.lookup(name)
        if bound is None or bound.node is None:
            continue
        inside = node.start_byte <= bound.node.start_byte < node.end_byte
        if bound.node != node and not inside:
            out += _strings_reachable(src, bound.node, bound.scope, depth + 1)
    return out


def _read_pkgset(src: Source, node: Node, scope: Scope, out: Nixpkgs) -> None:
    key = src.data[node.start_byte : node.end_byte]
    known = _PKGSETS.get(key)
    if known is None:
        known = _PKGSETS[key] = _pkgset_from_text(src, node)
        if len(_PKGSETS) > 4096:
            _PKGSETS.clear()
    pin, out.cuda_attr, out.torch_source, out.patches = known
    if pin is None:
        m = next(filter(None, map(NIXPKGS_URL.search, _strings_reachable(src, node, scope))), None)
        pin = m[1] if m else NONE_PIN
    out.pin = pin


# The package set expression of one pin is the same text in most recipes of a branch: what
# depends on that text alone is read once per text.
_PKGSETS: dict[bytes, tuple] = {}


def _pkgset_from_text(src: Source, node: Node) -> tuple:
    """(pin named in the expression's own strings or None, CUDA set, torch source, patches)."""
    m = next(filter(None, map(NIXPKGS_URL.search, src.strings_in(node))), None)
    pin = m[1] if m else None
    cuda_attr = torch_source = None
    patches: list[str] = []
    for path, value in bindings_under(src, node):
        name = path[-1]
        t = value.type
        if cuda_attr is None and name == "cudaPackages" and t in ("select_expression", "variable_expression"):
            m = next(filter(None, map(_CUDA_SET.fullmatch, src.text(value).split("."))), None)
            if m:
                cuda_attr = (m[1], m[2])
        if t != "apply_expression":
            continue
        fn, arg = child(value, "function"), child(value, "argument")
        if fn.type != "select_expression" or arg.type != "parenthesized_expression":
            continue
        base, sel = src.selection(fn)
        if not sel or sel[-1] != "overrideAttrs":
            continue
        if name == "torch" and torch_source is None:
            torch_source = version_and_src(src, arg)
        elif sel == (name, "overrideAttrs") and base.type == "variable_expression" \
                and name not in ("torch", "python3Packages"):
            patches.append(name)
    return pin, cuda_attr, torch_source, tuple(dict.fromkeys(patches))


def bindings_under(src: Source, node: Node) -> list[tuple[tuple[str, ...], Node]]:
    """Every ``path = value;`` in the expression, nested ones included, in source order."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        t = n.type
        if t == "binding":
            path = src.attr_names(child(n, "attrpath"))
            value = child(n, "expression")
            if path and value is not None:
                out.append((path, value))
        if t not in STRINGS and t != "comment":
            stack.extend(reversed(n.named_children))
    return out


def version_and_src(src: Source, group: Node) -> TorchSource | None:
    """``… { version = "X"; src = fetchFromGitHub { repo = "pytorch"; hash = …; }; }`` in an
    expression (the overlay's ``torch = prev.torch.overrideAttrs (…)``, or a build's attributes)."""
    version = fetch = None
    stack = [group]
    while stack and (version is None or fetch is None):
        n = stack.pop()
        t = n.type
        if t == "binding" and version is None and (src.attr_names(child(n, "attrpath")) or ("",))[-1] == "version":
            value = child(n, "expression")
            version = src.literal(value) if value is not None and value.type == "string_expression" else None
        elif t == "apply_expression" and fetch is None:
            fn, arg = child(n, "function"), child(n, "argument")
            if src.text(fn).rsplit(".", 1)[-1] == "fetchFromGitHub" and arg.type == "attrset_expression":
                fetch = arg
        if t not in STRINGS and t != "comment":
            stack.extend(reversed(n.named_children))
    if version is None or fetch is None:
        return None
    binds = src.bindings(fetch)

    def lit(name):
        got = binds.get(name)
        return src.literal(got) if got is not None and not isinstance(got, Inherit) and got.type in STRINGS else None

    if (lit("repo") or "").lower() != "pytorch" or not re.fullmatch(r"\d+(?:\.\d+)+\S*", version):
        return None
    return TorchSource(version, lit("hash") or lit("sha256") or "")
