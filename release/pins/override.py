"""A PyTorch source override in a recipe, written the way the real 2.10 recipes carry one (pure).

The real ``pytorch-2.10-python313`` recipes build PyTorch 2.10.0 over a nixpkgs whose torch is
2.9.1 by

- an overlay of the pinned import that gives the build's package set a torch from source::

      (final: prev: {
        python3Packages = prev.python3Packages.override {
          overrides = pfinal: pprev: {
            torch = pprev.torch.overrideAttrs (oldAttrs: rec {
              version = "2.10.0";
              src = prev.fetchFromGitHub {
                owner = "pytorch"; repo = "pytorch"; rev = "v${version}"; hash = "…"; fetchSubmodules = true;
              };
              patches = [];
            });
          };
        };
      })

- and, in the build's own ``overrideAttrs``, ``patches = [];``, ``-DTORCH_BUILD_VERSION=2.10.0``
  in ``cmakeFlags``, ``export PYTORCH_BUILD_VERSION=2.10.0`` and ``echo "2.10.0" > version.txt``
  in ``preConfigure`` (without them cmake reports nixpkgs' version and the build asserts).

``add_override`` writes all of that into a recipe that builds nixpkgs' torch; ``torch_swap``
points an existing override at another version. Callers check the result with the reader's
facts (the recipe must read back as the new version).

May import: config.
"""

from __future__ import annotations

import re

from config.errors import RefusedError

SOURCE_RE = re.compile(
    r'(?P<head>version\s*=\s*")(?P<version>[0-9][0-9.]*)(?P<mid>"\s*;\s*src\s*=\s*[\w.]*fetchFromGitHub\s*\{)'
    r'(?P<body>.{0,400}?)(?P<hashhead>hash\s*=\s*")(?P<hash>sha256-[A-Za-z0-9+/=]+)"',
    re.S,
)
_BUILD_RE = re.compile(r"\b([A-Za-z_][\w']*)\.(python\d*Packages)\.(torch|pytorch)\b")
_IMPORT_RE = re.compile(r"\bimport\s*\(\s*builtins\.fetchTarball\b")


def torch_swap(text: str, old: str, new: str, rev: str, hash_: str) -> str:
    """The source override moved from ``old`` to ``new`` (rev, hash), and the texts that name
    the version (TORCH_BUILD_VERSION, version.txt, comments, ``pytorch210-`` pnames)."""
    def src(m):
        body = m["body"]
        if rev != f"v{new}":
            body = re.sub(r'rev\s*=\s*"[^"]*"', f'rev = "{rev}"', body, count=1)
        else:
            body = re.sub(r'rev\s*=\s*"[^"]*"', 'rev = "v${version}"', body, count=1)
        return f"{m['head']}{new}{m['mid']}{body}{m['hashhead']}{hash_}\""

    text = SOURCE_RE.sub(src, text, count=1)
    text = re.sub(rf"(?<![\d.]){re.escape(old)}(?![\d]|\.\d)", new, text)
    o, n = "".join(old.split(".")[:2]), "".join(new.split(".")[:2])
    if o != n:
        text = re.sub(rf"\bpytorch{o}(?=-)", f"pytorch{n}", text)
    return text


# ---------------------------------------------------------------------------------------
# a small bracket matcher over Nix text (strings and comments skipped)


def _skip(text: str, i: int) -> int:
    """Index after the string or comment starting at ``i`` (``i`` itself when none does)."""
    if text.startswith("''", i):
        j = i + 2
        while j < len(text):
            if text.startswith("'''", j) or text.startswith("''$", j) or text.startswith("''\\", j):
                j += 3
            elif text.startswith("''", j):
                return j + 2
            else:
                j += 1
        return j
    if text[i] == '"':
        j = i + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return j + 1
    if text[i] == "#":
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    return i


def _close(text: str, open_at: int) -> int:
    """Index of the bracket closing the one at ``open_at`` (``{``, ``[`` or ``(``)."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack = [pairs[text[open_at]]]
    i = open_at + 1
    while i < len(text):
        j = _skip(text, i)
        if j != i:
            i = j
            continue
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if c != stack.pop():
                break
            if not stack:
                return i
        i += 1
    raise RefusedError("the recipe's brackets do not match")


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _indent(text: str, i: int) -> str:
    start = _line_start(text, i)
    return text[start: start + len(text[start:]) - len(text[start:].lstrip(" "))]


# ---------------------------------------------------------------------------------------


def overlay(pyset: str, version: str, rev: str, hash_: str, indent: str = "      ") -> str:
    rev_text = '"v${version}"' if rev == f"v{version}" else f'"{rev}"'
    body = f"""(final: prev: {{
  {pyset} = prev.{pyset}.override {{
    overrides = pfinal: pprev: {{
      torch = pprev.torch.overrideAttrs (oldAttrs: rec {{
        version = "{version}";
        src = prev.fetchFromGitHub {{
          owner = "pytorch";
          repo = "pytorch";
          rev = {rev_text};
          hash = "{hash_}";
          fetchSubmodules = true;
        }};
        patches = [];
      }});
    }};
  }};
}})"""
    return "\n".join(indent + line for line in body.splitlines())


def add_override(text: str, version: str, rev: str, hash_: str) -> str:
    """``text`` (a recipe building nixpkgs' torch from a pinned import) building PyTorch
    ``version`` from source; RefusedError naming what is missing when the recipe is not in a
    shape torchbot can write the override into."""
    build = _BUILD_RE.search(text)
    if build is None:
        raise RefusedError("it does not build <nixpkgs>.<pythonPackages>.torch")
    if build[3] == "pytorch":
        raise RefusedError(f"it builds the old '{build[2]}.pytorch' attribute; rename it to torch first")
    pyset = build[2]
    text = _add_overlay(text, pyset, version, rev, hash_)
    build = _BUILD_RE.search(text)
    attrs = text.find("overrideAttrs", build.end())
    if attrs < 0:
        raise RefusedError("its build has no overrideAttrs to set the version in")
    attrs_open = text.find("{", attrs)
    attrs_close = _close(text, attrs_open)
    head, body, tail = text[: attrs_open + 1], text[attrs_open + 1: attrs_close], text[attrs_close:]
    return head + _version_attrs(body, version) + tail


def _add_overlay(text: str, pyset: str, version: str, rev: str, hash_: str) -> str:
    imp = _IMPORT_RE.search(text)
    if imp is None:
        raise RefusedError("it imports no pinned nixpkgs (fetchTarball) to add the overlay to")
    tarball_close = _close(text, text.index("(", imp.start()))
    args_open = text.index("{", tarball_close)
    args_close = _close(text, args_open)
    args = text[args_open: args_close]
    m = re.search(r"\boverlays\s*=\s*\[", args)
    if m:
        list_open = args_open + m.end() - 1
        list_close = _close(text, list_open)
        item_indent = _indent(text, list_open) + "  "
        before = text[:list_close].rstrip()
        sep = "\n\n" if text[list_open + 1: list_close].strip() else "\n"
        return before + sep + overlay(pyset, version, rev, hash_, item_indent) + "\n" + \
            _indent(text, list_close) + text[list_close:]
    base = _indent(text, args_open)
    key_indent = base + "  "
    block = f"{key_indent}overlays = [\n{overlay(pyset, version, rev, hash_, key_indent + '  ')}\n{key_indent}];\n"
    at = _line_start(text, args_close)
    if text[at:args_close].strip():  # `}) { config = { … }; };` on one line: one attribute a line, then the overlay
        inner = text[args_open + 1: args_close].strip()
        return f"{text[:args_open]}{{\n{key_indent}{inner}\n{block}{base}}}{text[args_close + 1:]}"
    return text[:at] + block + text[at:]


def _version_attrs(body: str, version: str) -> str:
    """The build's overrideAttrs body with patches = [], TORCH_BUILD_VERSION, PYTORCH_BUILD_VERSION
    and version.txt (each added only when missing)."""
    first = re.search(r"\n([ \t]+)\S", body)
    ind = first[1] if first else "    "
    if not re.search(r"(?m)^\s*patches\s*=", body):
        after = _after_attr(body, "passthru") or _after_attr(body, "pname") or body.find("\n") + 1
        body = body[:after] + f"{ind}patches = [];\n" + body[after:]
    if "TORCH_BUILD_VERSION" not in body:
        m = re.search(r"cmakeFlags\s*=\s*\(oldAttrs\.cmakeFlags or \[\]\)\s*\+\+\s*\[", body)
        if m:
            nl = body.find("\n", m.end())
            if nl >= 0 and not body[m.end():nl].strip():
                body = body[: nl + 1] + f'{ind}  "-DTORCH_BUILD_VERSION={version}"\n' + body[nl + 1:]
            else:
                body = body[: m.end()] + f' "-DTORCH_BUILD_VERSION={version}"' + body[m.end():]
        else:
            after = _after_attr(body, "patches")
            body = (body[:after] + f"\n{ind}cmakeFlags = (oldAttrs.cmakeFlags or []) ++ [\n"
                    f'{ind}  "-DTORCH_BUILD_VERSION={version}"\n{ind}];\n' + body[after:])
    if "PYTORCH_BUILD_VERSION" not in body:
        m = re.search(r"preConfigure\s*=\s*\(oldAttrs\.preConfigure or \"\"\)\s*\+\s*''\n", body)
        if m is None:
            raise RefusedError("its build has no preConfigure = (oldAttrs.preConfigure or \"\") + '' … '' to "
                               "export PYTORCH_BUILD_VERSION in")
        jobs = re.compile(r"(?m)^[ \t]*export MAX_JOBS=.*\n")
        string_end = body.find("''", m.end())
        j = jobs.search(body, m.end(), string_end)
        at = j.end() if j else m.end()
        sind = _indent(body, at) if body[at:at + 1] in " \t" else ind + "  "
        lines = f"{sind}export PYTORCH_BUILD_VERSION={version}\n{sind}echo \"{version}\" > version.txt\n"
        body = body[:at] + lines + body[at:]
    return body


def _after_attr(body: str, name: str) -> int | None:
    """Index after the line that ends attribute ``name`` (its closing ``};`` for a set)."""
    m = re.search(rf"(?m)^[ \t]*{name}\s*=", body)
    if not m:
        return None
    brace = body.find("{", m.end())
    semi = body.find(";", m.end())
    if 0 <= brace < semi:
        end = _close(body, brace)
        semi = body.find(";", end)
    nl = body.find("\n", semi)
    return len(body) if nl < 0 else nl + 1
