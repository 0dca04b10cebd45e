"""Nix source scanning for the recipe reader: pure Python, no evaluation, no subprocess.

A recipe is first reduced to its *code*: comments dropped, every string literal replaced by a
placeholder (``\\x01N\\x02``, the literal kept in ``Scan.strings``), every bracket paired. Then
expressions are parsed on demand (``Scan.expr``): lambdas, ``let … in``, ``with``, function
application, attribute selection with ``or`` defaults, attribute sets, lists, strings and the
binary operators. Attribute sets and lists stay as source ranges until a caller looks inside,
so reading a recipe touches only the parts the facts come from (the recipes' long build
scripts and descriptions are skipped as single string tokens).

``Scan.value`` evaluates the literal parts: strings (with ``${name}`` interpolations of known
bindings), lists, booleans, ``null``, identifiers bound in a scope, ``//`` merges and selections
into known attribute sets. Anything else is ``UNKNOWN``: the reader never guesses a value Nix
would compute from nixpkgs.

May import: nothing of torchbot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_INTERP = r'\$\{(?:[^{}"]|"(?:[^"\\]|\\.)*"|\{[^{}]*\})*\}'
_SKIP = re.compile(  # possessive runs: fast, and no backtracking blow-up on an unterminated string
    r"(?=[#/'\"])(?:(?P<c>\#[^\n]*|/\*.*?\*/)"
    r"|''(?P<i>(?:[^']++|'(?!')|''['$\\])*)''"
    r'|"(?P<s>(?:[^"\\$]++|\\.|\$(?!\{)|' + _INTERP + r')*)")',
    re.S,
)
_BRACKETS = re.compile(r"[{}()\[\]]")
_PLACEHOLDER = re.compile(r"\x01(\d+)\x02")
_OPEN = {"{": "}", "(": ")", "[": "]"}

_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<str>\x01\d+\x02)"
    r"|(?P<open>[{(\[])"
    r"|(?P<path>(?:\.{1,2}|~)?(?:/[\w.+-]+)+/?|<[\w./+-]+>)"
    r"|(?P<uri>[a-zA-Z][\w+.-]*:[\w%/?:@&=+$,.!~*'-]+)"
    r"|(?P<id>[A-Za-z_][\w'-]*)"
    r"|(?P<num>\d+(?:\.\d+)?)"
    r"|(?P<op>\.\.\.|//|\+\+|==|!=|->|&&|\|\||<=|>=|[-+*/!<>?.:=,;@])"
    r")"
)
_WS = re.compile(r"\s*")
_BINOP_HINT = re.compile(r"//|\+|[-*<>=!&|]")
_OPERATOR_OR_GROUP = re.compile(r"[{(\[]|//|\+|(?<![\w'/.])-|[*<>=!&|:]|(?<![\w'-])(?:let|with|if|assert)(?![\w'-])")
_NAME = r"(?:[A-Za-z_][\w'-]*|\x01\d+\x02)"
_BIND_HEAD = re.compile(r"\s*(?:(inherit)(?![\w'-])|(" + _NAME + r"(?:\s*\.\s*" + _NAME + r")*)\s*=(?!=))")
_IN_KW = re.compile(r"\s*in(?![\w'-])")
_KEYWORDS = {"let", "in", "with", "if", "then", "else", "assert", "rec", "inherit", "or"}
_BINARY = {"//", "++", "+", "-", "*", "==", "!=", "&&", "||", "->", "<", ">", "<=", ">="}


class NixSyntaxError(ValueError):
    """The text is not a Nix expression this scanner can read (unterminated string, unbalanced
    brackets, an expression it cannot delimit)."""


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


# ---------------------------------------------------------------------------------------
# Expression nodes (ranges are offsets into Scan.code)


@dataclass(frozen=True, slots=True)
class Node:
    kind: str  # ident str num path uri list attrs paren lambda let with app select binop other
    start: int
    end: int
    a: object = None  # ident: name; str: index; select: base Node; app: fn Node; binop: op; lambda: param
    b: object = None  # select: (path tuple, default Node|None); app: arg Node; binop: (left, right); lambda/let/with: body
    c: object = None  # lambda: pattern range (attrset params) ; let: bindings ; attrs: rec flag


@dataclass
class Scan:
    """One recipe's code with strings and comments taken out and brackets paired. Recipes
    generated from one template share their code (only the strings differ): the bracket pairs
    and parsed expressions of a code are computed once and shared."""

    text: str
    code: str
    strings: list[str]
    close: dict[int, int] = field(default_factory=dict)
    _bindings: dict[tuple[int, int], dict[str, tuple[int, int]]] = field(default_factory=dict)
    _exprs: dict[tuple[int, int], "Node"] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)  # code-only results (shared like the parses)
    _volatile: bool = False  # a string literal was used as a name: parses depend on this recipe's strings

    # -- strings ------------------------------------------------------------------------

    def string(self, node: Node) -> str:
        return self.strings[node.a]

    def strings_in(self, start: int, end: int) -> list[str]:
        """Every string literal inside the code range."""
        return [self.strings[int(m[1])] for m in _PLACEHOLDER.finditer(self.code, start, end)]

    def code_of(self, node: Node) -> str:
        return self.code[node.start : node.end]

    # -- tokens ---------------------------------------------------------------------------

    def _token(self, pos: int, end: int):
        """(kind, text, start, stop) of the token at ``pos`` (stop is past a whole bracket group),
        or None at ``end``."""
        m = _TOKEN.match(self.code, pos, end)
        if m is None:
            if self.code[pos:end].strip():
                raise NixSyntaxError(f"cannot read {self.code[pos:pos + 20]!r}")
            return None
        kind = m.lastgroup
        start = m.start(kind)
        if kind == "open":
            return kind, m[kind], start, self.close[start] + 1
        text = m[kind]
        if kind == "id" and text in _KEYWORDS:
            kind = "kw"
        return kind, text, start, m.end()

    def _skip_ws(self, pos: int, end: int) -> int:
        return min(_WS.match(self.code, pos).end(), max(end, pos))

    # -- bindings -------------------------------------------------------------------------

    def bindings(self, start: int, end: int, stop_at_in: bool = False) -> tuple[dict[str, tuple[int, int]], int]:
        """``name = value;`` pairs of an attribute set body or a ``let`` block, as
        ``{"a.b": (value_start, value_end)}``; and where reading stopped (the ``in`` of a let)."""
        key = (start, end)
        if not stop_at_in and key in self._bindings:
            return self._bindings[key], end
        out: dict[str, tuple[int, int]] = {}
        code = self.code
        pos = start
        while True:
            if stop_at_in:
                m = _IN_KW.match(code, pos, end)
                if m:
                    return out, m.end() - 2
            m = _BIND_HEAD.match(code, pos, end)
            if m is None:
                if code[pos:end].strip():
                    raise NixSyntaxError(f"expected a binding, found {code[pos:pos + 20].strip()!r}")
                break
            if m[1]:  # inherit
                semi = self._value_end(m.end(), end)
                self._inherit(m.end(), semi, out)
                pos = semi + 1
                continue
            path = m[2]
            if "\x01" in path:
                self._volatile = True
            if "." in path or "\x01" in path:
                parts = [p.strip() for p in path.split(".")]
                path = ".".join(self.strings[int(p[1:-1])] if p.startswith("\x01") else p for p in parts)
            vend = self._value_end(m.end(), end)
            out.setdefault(path, (m.end(), vend))
            pos = vend + 1
        if stop_at_in:
            raise NixSyntaxError("'let' without 'in'")
        if not self._volatile:
            self._bindings[key] = out
        return out, end

    def _inherit(self, start: int, end: int, out: dict) -> None:
        pos = start
        source = None
        while True:
            tok = self._token(pos, end)
            if tok is None:
                return
            kind, text, tstart, tstop = tok
            if kind == "open" and text == "(":
                source = (tstart + 1, tstop - 1)
            elif kind == "id":
                # `inherit x;` binds x to the outer x; `inherit (s) x;` to s.x (kept as a range)
                out.setdefault(text, (tstart, tstop) if source is None else source)
            pos = tstop

    _VALUE_STOP = re.compile(r"[;{(\[]|\x01|(?<![\w'-])(?:let|in)(?![\w'-])")

    def _value_end(self, pos: int, end: int) -> int:
        """Offset of the ``;`` that ends the value starting at ``pos`` (nested lets counted)."""
        lets = 0
        find = self._VALUE_STOP.search
        while True:
            m = find(self.code, pos, end)
            if m is None:
                raise NixSyntaxError("missing ';'")
            t = m[0]
            if t == ";":
                if lets == 0:
                    return m.start()
                pos = m.end()
            elif t in "{([":
                pos = self.close[m.start()] + 1
            elif t == "\x01":
                pos = self.code.index("\x02", m.start()) + 1
            elif t == "let":
                lets += 1
                pos = m.end()
            else:  # in
                lets -= 1
                pos = m.end()

    # -- expressions ----------------------------------------------------------------------

    def expr(self, start: int, end: int) -> Node:
        """The expression in ``code[start:end]`` (parsed once per code)."""
        key = (start, end)
        node = self._exprs.get(key)
        if node is None:
            node = self._expr(start, end)
            if not self._volatile:
                self._exprs[key] = node
        return node

    def _expr(self, start: int, end: int) -> Node:
        start = self._skip_ws(start, end)
        while end > start and self.code[end - 1].isspace():
            end -= 1
        tok = self._token(start, end)
        if tok is None:
            raise NixSyntaxError("empty expression")
        kind, text, tstart, tstop = tok
        # lambdas: `x: body`, `{ a, b ? d }: body`, `x @ { … }: body`, `{ … } @ x: body`
        if kind in ("id", "open"):
            after = self._token(tstop, end)
            if kind == "open" and text == "{" and after and after[1] == "@":
                after = self._token(self._token(after[3], end)[3], end)
            if kind == "id" and after and after[1] == "@":
                pat = self._token(after[3], end)
                after = self._token(pat[3], end)
                if after and after[1] == ":":
                    return Node("lambda", start, end, text, self.expr(after[3], end), (pat[2] + 1, pat[3] - 1))
            if after and after[1] == ":":
                pattern = (tstart + 1, tstop - 1) if kind == "open" else None
                if kind == "id" or text == "{":
                    return Node("lambda", start, end, text if kind == "id" else None, self.expr(after[3], end), pattern)
        if kind == "kw" and text == "let":
            binds, in_pos = self.bindings(tstop, end, stop_at_in=True)
            return Node("let", start, end, None, self.expr(in_pos + 2, end), binds)
        if kind == "kw" and text == "with":
            semi = self._value_end(tstop, end)
            return Node("with", start, end, self.expr(tstop, semi), self.expr(semi + 1, end))
        if kind == "kw" and text == "assert":
            semi = self._value_end(tstop, end)
            return self.expr(semi + 1, end)
        if kind == "kw" and text == "if":
            return Node("other", start, end)
        return self._binary(start, end)

    def _binary(self, start: int, end: int) -> Node:
        """Operands and operators at this level; `//` and `++` are right-associative."""
        if not self._has_operator(start, end):
            return self._application(start, end)
        operands: list[tuple[int, int]] = []
        ops: list[str] = []
        pos = start
        seg = start
        prev_kind = None
        while pos < end:
            tok = self._token(pos, end)
            if tok is None:
                break
            kind, text, tstart, tstop = tok
            if kind == "op" and text in _BINARY and prev_kind not in (None, "op-binary"):
                operands.append((seg, tstart))
                ops.append(text)
                seg = tstop
                prev_kind = "op-binary"
            elif kind == "kw" and text in ("let", "with", "if", "assert") or (
                kind in ("id", "open") and self._is_lambda_head(tok, end)
            ):
                # a lambda / let / with in operand position runs to the end
                pos = end
                prev_kind = "expr"
                break
            else:
                prev_kind = kind
            pos = tstop
        operands.append((seg, end))
        if not ops:
            return self._application(start, end)
        for op in ("//", "++", "+"):
            if op in ops:
                i = ops.index(op) if op != "+" else len(ops) - 1 - ops[::-1].index(op)
                left = (operands[0][0], operands[i][1])
                right = (operands[i + 1][0], operands[-1][1])
                return Node("binop", start, end, op, (self.expr(*left), self.expr(*right)))
        return Node("other", start, end)

    def _has_operator(self, start: int, end: int) -> bool:
        """Whether an operator character occurs outside bracket groups (a quick pre-check)."""
        code, close = self.code, self.close
        pos = start
        search = _OPERATOR_OR_GROUP.search
        while True:
            m = search(code, pos, end)
            if m is None:
                return False
            if m[0] in "{([":
                pos = close[m.start()] + 1
                continue
            return True

    def _is_lambda_head(self, tok, end: int) -> bool:
        nxt = self._token(tok[3], end)
        return bool(nxt and nxt[1] in (":", "@") and (tok[0] == "id" or tok[1] == "{"))

    def _application(self, start: int, end: int) -> Node:
        items: list[Node] = []
        pos = start
        while True:
            pos = self._skip_ws(pos, end)
            if pos >= end:
                break
            node, pos = self._select(pos, end)
            items.append(node)
        if not items:
            raise NixSyntaxError("empty expression")
        node = items[0]
        for arg in items[1:]:
            node = Node("app", node.start, arg.end, node, arg)
        return node

    def _select(self, pos: int, end: int) -> tuple[Node, int]:
        base, pos = self._primary(pos, end)
        path: list[str] = []
        default = None
        while True:
            tok = self._token(pos, end)
            if tok is None or tok[1] != ".":
                break
            name = self._token(tok[3], end)
            if name is None:
                raise NixSyntaxError("unfinished selection")
            if name[0] in ("id", "kw"):
                path.append(name[1])
            elif name[0] == "str":
                self._volatile = True
                path.append(self.strings[int(name[1][1:-1])])
            else:
                raise NixSyntaxError(f"cannot select {name[1]!r}")
            pos = name[3]
        if path:
            tok = self._token(pos, end)
            if tok and tok[0] == "kw" and tok[1] == "or":
                default, pos = self._select(tok[3], end)
            return Node("select", base.start, pos, base, (tuple(path), default)), pos
        return base, pos

    def _primary(self, pos: int, end: int) -> tuple[Node, int]:
        tok = self._token(pos, end)
        if tok is None:
            raise NixSyntaxError("missing expression")
        kind, text, tstart, tstop = tok
        if kind == "open":
            if text == "(":
                return Node("paren", tstart, tstop, self.expr(tstart + 1, tstop - 1)), tstop
            if text == "[":
                return Node("list", tstart, tstop), tstop
            return Node("attrs", tstart, tstop, None, None, False), tstop
        if kind == "kw" and text == "rec":
            nxt = self._token(tstop, end)
            if nxt and nxt[1] == "{":
                return Node("attrs", nxt[2], nxt[3], None, None, True), nxt[3]
        if kind == "str":
            return Node("str", tstart, tstop, int(text[1:-1])), tstop
        if kind in ("id", "path", "uri", "num"):
            return Node("ident" if kind == "id" else kind, tstart, tstop, text), tstop
        if kind == "op" and text in ("!", "-"):
            inner, stop = self._select(tstop, end)
            return Node("other", tstart, stop), stop
        raise NixSyntaxError(f"unexpected {text!r}")

    # -- structure helpers ----------------------------------------------------------------

    def attrs(self, node: Node) -> dict[str, tuple[int, int]]:
        """Bindings of an attribute-set node."""
        return self.bindings(node.start + 1, node.end - 1)[0]

    def memo(self, key, compute):
        """A result that depends only on the code (shared by recipes with the same code)."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def items(self, node: Node) -> list[Node]:
        """Elements of a list node."""
        key = ("items", node.start, node.end)
        got = self._memo.get(key)
        if got is None:
            got = self._items(node)
            if not self._volatile:
                self._memo[key] = got
        return got

    def _items(self, node: Node) -> list[Node]:
        out = []
        pos, end = node.start + 1, node.end - 1
        while True:
            pos = self._skip_ws(pos, end)
            if pos >= end:
                return out
            item, pos = self._select(pos, end)
            out.append(item)

    def value(self, node: Node, scope: "Scope | None" = None, depth: int = 0):
        """The literal value of a node: str, bool, None, list, ``Attrs`` (lazy), or UNKNOWN."""
        if depth > 12:
            return UNKNOWN
        k = node.kind
        if k == "str":
            return self.interpolate(self.strings[node.a], scope, depth)
        if k == "num":
            return node.a
        if k == "ident":
            if node.a in ("true", "false"):
                return node.a == "true"
            if node.a == "null":
                return None
            bound = scope.lookup(node.a) if scope else None
            return bound.value(depth + 1) if bound else UNKNOWN
        if k == "paren":
            return self.value(node.a, scope, depth + 1)
        if k == "list":
            return [self.value(i, scope, depth + 1) for i in self.items(node)]
        if k == "attrs":
            return Attrs(self, node, scope)
        if k == "binop" and node.a == "//":
            left = self.value(node.b[0], scope, depth + 1)
            right = self.value(node.b[1], scope, depth + 1)
            if isinstance(right, Attrs):
                return right.over(left if isinstance(left, Attrs) else None)
            return UNKNOWN
        if k == "binop" and node.a == "++":
            left = self.value(node.b[0], scope, depth + 1)
            right = self.value(node.b[1], scope, depth + 1)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            return UNKNOWN
        if k == "select":
            base, (path, default) = node.a, node.b
            val = self.value(base, scope, depth + 1)
            for name in path:
                val = val.get(name) if isinstance(val, Attrs) else UNKNOWN
                if val is UNKNOWN:
                    break
            if val is UNKNOWN and default is not None:
                return Defaulted(self.value(default, scope, depth + 1))
            return val
        return UNKNOWN

    _SIMPLE_INTERP = re.compile(r"\$\{\s*([A-Za-z_][\w'-]*)\s*\}")

    def interpolate(self, s: str, scope: "Scope | None", depth: int = 0) -> str:
        """A string literal with ``${name}`` of string bindings filled in (others kept as text)."""
        if "${" not in s or scope is None:
            return s

        def fill(m):
            bound = scope.lookup(m[1])
            v = bound.value(depth + 1) if bound else UNKNOWN
            return v if isinstance(v, str) else m[0]

        return self._SIMPLE_INTERP.sub(fill, s)


@dataclass(frozen=True)
class Defaulted:
    """``x.y or DEFAULT`` where ``x.y`` is unknown: Nix takes ``x.y`` when it exists."""

    default: object


class Attrs:
    """An attribute set read lazily: ``get(name)`` evaluates one binding; ``over`` layers
    this set over another (``base // this``)."""

    def __init__(self, scan: Scan, node: Node | None, scope: "Scope | None", base: "Attrs | None" = None,
                 extends_unknown: bool = False):
        self.scan = scan
        self.node = node
        self.scope = scope
        self.base = base
        self.extends_unknown = extends_unknown  # `unknown // { … }`: other names come from nixpkgs
        self._names: set[str] | None = None

    def over(self, base: "Attrs | None") -> "Attrs":
        return Attrs(self.scan, self.node, self.scope, base, extends_unknown=base is None)

    def ranges(self) -> dict[str, tuple[int, int]]:
        return self.scan.attrs(self.node) if self.node is not None else {}

    def names(self) -> set[str]:
        if self._names is None:
            out = {k.split(".")[0] for k in self.ranges()}
            self._names = out | (self.base.names() if self.base else set())
        return self._names

    def node_of(self, name: str) -> Node | None:
        r = self.ranges().get(name)
        if r is not None:
            return self.scan.expr(*r)
        nested = {k[len(name) + 1 :]: v for k, v in self.ranges().items() if k.startswith(name + ".")}
        if nested:
            return None
        return self.base.node_of(name) if self.base else None

    def get(self, name: str):
        r = self.ranges().get(name)
        if r is not None:
            return self.scan.value(self.scan.expr(*r), self.scope)
        nested = {k[len(name) + 1 :]: v for k, v in self.ranges().items() if k.startswith(name + ".")}
        if nested:
            return _PathAttrs(self.scan, nested, self.scope)
        if self.base is not None:
            return self.base.get(name)
        return UNKNOWN


class _PathAttrs(Attrs):
    """``a.b = 1; a.c = 2;`` seen as ``a = { b = 1; c = 2; }``."""

    def __init__(self, scan: Scan, table: dict[str, tuple[int, int]], scope):
        super().__init__(scan, None, scope)
        self._table = table

    def ranges(self) -> dict[str, tuple[int, int]]:
        return self._table


@dataclass
class Bound:
    scan: Scan
    rng: tuple[int, int]
    scope: "Scope"
    _node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.scan.expr(*self.rng)
        return self._node

    def value(self, depth: int = 0):
        return self.scan.value(self.node, self.scope, depth)


class Scope:
    """Names visible at a point: let bindings and lambda parameters (with their defaults)."""

    def __init__(self, scan: Scan, parent: "Scope | None" = None):
        self.scan = scan
        self.parent = parent
        self.names: dict[str, Bound | None] = {}  # None: a parameter without a default

    def add(self, binds: dict[str, tuple[int, int]]) -> None:
        for name, rng in binds.items():
            if "." not in name:
                self.names[name] = Bound(self.scan, rng, self)

    _PARAM = re.compile(r"\s*([A-Za-z_][\w'-]*)\s*(\?)?")

    def add_params(self, pattern: tuple[int, int] | None, name: str | None) -> None:
        """``x:`` or ``{ a, b ? default, ... }:`` (``x@{ … }``): parameters, with their defaults."""
        if name:
            self.names[name] = None
        if pattern is None:
            return
        pos, end = pattern
        while pos < end:
            part_end = self._param_end(pos, end)
            m = self._PARAM.match(self.scan.code, pos, part_end)
            if m:
                self.names[m[1]] = Bound(self.scan, (m.end(), part_end), self) if m[2] else None
            pos = part_end + 1

    def _param_end(self, pos: int, end: int) -> int:
        """The next top-level ',' of a parameter list (or its end)."""
        code = self.scan.code
        while pos < end:
            c = code[pos]
            if c in "{([":
                pos = self.scan.close[pos] + 1
                continue
            if c == ",":
                return pos
            pos += 1
        return end

    def lookup(self, name: str) -> Bound | None:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


def scan(text: str) -> Scan:
    """Comments out, strings to placeholders, brackets paired; NixSyntaxError when the text
    cannot be a Nix expression."""
    strings: list[str] = []
    append = strings.append

    def repl(m: re.Match) -> str:
        g = m.lastgroup
        if g == "c":
            return " "
        append(m[g])
        return f"\x01{len(strings) - 1}\x02"

    code = _SKIP.sub(repl, text)
    shared = _SHARED.get(code)
    if shared is not None:
        return Scan(text, code, strings, shared.close, shared._bindings, shared._exprs, shared._memo)
    if '"' in code or "''" in code:
        at = code.find('"') if '"' in code else code.find("''")
        line = code.count("\n", 0, at) + 1
        raise NixSyntaxError(f"unterminated string near line {line}")
    close: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACKETS.finditer(code):
        c = m[0]
        if c in _OPEN:
            stack.append(m.start())
        else:
            if not stack or _OPEN[code[stack[-1]]] != c:
                line = code.count("\n", 0, m.start()) + 1
                raise NixSyntaxError(f"unbalanced '{c}' at line {line}")
            close[stack.pop()] = m.start()
    if stack:
        line = code.count("\n", 0, stack[-1]) + 1
        raise NixSyntaxError(f"unclosed '{code[stack[-1]]}' from line {line}")
    out = Scan(text, code, strings, close)
    if len(_SHARED) >= 4096:
        _SHARED.clear()
    _SHARED[code] = out
    return out


_SHARED: dict[str, Scan] = {}  # code -> the first Scan of it (its pairs and parses are reused)
