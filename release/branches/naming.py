"""Branch names checked before they become refs (pure: no git, no I/O).

``ref_name_problem`` is ``git check-ref-format --branch`` in code: the rules git applies to a
branch name (no ``..``, no control characters, space or any of ``~ ^ : ? * [ \\``, no component
starting with ``.`` or ending with ``.lock``, no ``@{``, not ``@``, not starting with ``-``, no
empty component or trailing ``/`` or ``.``). ``naming_problem`` adds the repository's own pattern:
``<family>-X.Y`` then ``-``-separated lower-case words (``pytorch-2.9-python312``,
``pytorch-2.9-vllm-0.15.1``), where the family is one the repository's branches already use
(``pytorch`` when none does), and never a ``refs/`` path.
"""

from __future__ import annotations

import re

_BAD_CHARS = set(" ~^:?*[\\\x7f")
_FAMILY = re.compile(r"^([a-z][a-z0-9]*)-\d+\.\d+(?:-|$)")
_PATTERN = r"^{family}-\d+\.\d+(?:-[a-z0-9][a-z0-9._]*)*$"


def ref_name_problem(name: str) -> str | None:
    """Why git would refuse ``name`` as a branch name, or None."""
    if not name:
        return "it is empty"
    if name.startswith("-"):
        return "it starts with '-'"
    if name == "@" or name == "HEAD":
        return f"'{name}' is reserved"
    bad = sorted({c for c in name if c in _BAD_CHARS or ord(c) < 32})
    if bad:
        return "it contains " + ", ".join(repr(c) for c in bad)
    if ".." in name or "@{" in name:
        return "it contains '..'" if ".." in name else "it contains '@{'"
    if name.endswith(("/", ".")):
        return f"it ends with '{name[-1]}'"
    for part in name.split("/"):
        if not part:
            return "it has an empty path component ('//' or a leading '/')"
        if part.startswith("."):
            return f"the component '{part}' starts with '.'"
        if part.endswith(".lock"):
            return f"the component '{part}' ends with '.lock'"
    return None


def families(existing: list[str]) -> list[str]:
    """The ``<family>-X.Y`` prefixes the repository's branches use (``pytorch`` when none)."""
    found = sorted({m[1] for b in existing if (m := _FAMILY.match(b))})
    return found or ["pytorch"]


def naming_problem(name: str, existing: list[str]) -> str | None:
    """Why ``name`` is not a branch name torchbot creates in a repository with ``existing``
    branches, or None: git's rules, no ``refs/`` path, and the repository's naming pattern."""
    problem = ref_name_problem(name)
    if problem:
        return problem
    if name.startswith("refs/") or "/" in name:
        return "a branch name is a plain name, not a ref path (no 'refs/' and no '/')"
    fams = families(existing)
    if not any(re.fullmatch(_PATTERN.format(family=re.escape(f)), name) for f in fams):
        shown = " or ".join(f"{f}-X.Y-…" for f in fams)
        return f"it does not follow the repository's naming pattern ({shown}, lower-case words joined by '-')"
    return None
