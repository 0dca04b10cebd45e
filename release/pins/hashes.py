"""The sha256 of a recipe's nixpkgs ``fetchTarball`` (pure: strings in, strings out).

A recipe pins nixpkgs with ``builtins.fetchTarball { url = ".../archive/<rev>.tar.gz"; }``;
without ``sha256`` Nix re-downloads it whenever its tarball cache expires, pure evaluation
refuses it, and nothing proves two builds used the same tree. ``set_tarball_hash`` writes (or
replaces) ``sha256`` in every fetchTarball of that revision, keeping the recipe's layout: the
attribute goes on its own line after ``url`` with the same indentation, or after ``url`` on
the same line for a one-line attrset; the string form ``fetchTarball "URL"`` becomes the
attrset form. The URL itself is never changed (recipes keep the GitHub URL).
"""

from __future__ import annotations

import re

_ATTRSET_RE = re.compile(r"(?P<head>fetchTarball\s*\{)(?P<body>[^{}]*)(?P<tail>\})")
_STRING_FORM_RE = re.compile(r'fetchTarball\s+"(?P<url>[^"]*)"')
_URL_RE = re.compile(r'(?P<indent>[ \t]*)url\s*=\s*"(?P<url>[^"]*)"\s*;(?P<eol>[ \t]*\n)?')
_HASH_ATTR_RE = re.compile(r'\b(?:sha256|hash)\s*=\s*"(?P<value>[^"]*)"\s*;')


def _for_rev(url: str, rev: str) -> bool:
    return url.endswith(f"/{rev}.tar.gz")


def tarball_url(base: str, rev: str) -> str:
    """The URL torchbot downloads to hash ``rev`` (``TORCHBOT_NIXPKGS_TARBALL_URL`` + rev)."""
    return (base if base.endswith("/") else base + "/") + f"{rev}.tar.gz"


def tarball_hashes(text: str, rev: str) -> list[str | None]:
    """The sha256 each fetchTarball of ``rev`` in ``text`` records (None: no hash)."""
    out: list[str | None] = []
    for m in _ATTRSET_RE.finditer(text):
        u = _URL_RE.search(m.group("body"))
        if u and _for_rev(u.group("url"), rev):
            h = _HASH_ATTR_RE.search(m.group("body"))
            out.append(h.group("value") if h else None)
    out.extend(None for m in _STRING_FORM_RE.finditer(text) if _for_rev(m.group("url"), rev))
    return out


def set_tarball_hash(text: str, rev: str, sha256: str) -> str:
    """``text`` with ``sha256 = "<sha256>";`` in every fetchTarball of ``rev``."""

    def attrset(m: re.Match) -> str:
        body = m.group("body")
        u = _URL_RE.search(body)
        if not u or not _for_rev(u.group("url"), rev):
            return m.group(0)
        if _HASH_ATTR_RE.search(body):
            body = _HASH_ATTR_RE.sub(f'sha256 = "{sha256}";', body, count=1)
        elif u.group("eol") is not None:  # url on its own line: the hash on the next, same indent
            line = f'{u.group("indent")}sha256 = "{sha256}";\n'
            body = body[: u.end()] + line + body[u.end():]
        else:
            body = body[: u.end()] + f' sha256 = "{sha256}";' + body[u.end():]
        return m.group("head") + body + m.group("tail")

    def string_form(m: re.Match) -> str:
        if not _for_rev(m.group("url"), rev):
            return m.group(0)
        return f'fetchTarball {{ url = "{m.group("url")}"; sha256 = "{sha256}"; }}'

    return _STRING_FORM_RE.sub(string_form, _ATTRSET_RE.sub(attrset, text))
