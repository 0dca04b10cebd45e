"""Regular expressions compiled once per interpreter, not once per process: ``rx(pattern)`` is
``re.compile(pattern)``, but the compiled program (what ``re`` builds from the pattern) is kept
in torchbot's cache directory (``config.paths.cache_dir``) and handed back to ``_sre.compile``,
the constructor ``re`` itself ends with. A one-shot ``torchbot ask`` compiles ~100 patterns,
among them one alternation of every CPU model of the catalog: a third of its CPU time before
this cache.

The entries are keyed by the pattern and its flags, in a file named by the interpreter's
version and the regular-expression engine's magic number (``_sre.MAGIC``), so a program is
only ever handed to the engine that compiled it. New patterns are compiled as usual and the
file is written once, at exit, atomically. Anything unexpected (no cache directory, an
unreadable or foreign file, an interpreter whose ``_sre`` differs) falls back to
``re.compile``: the worst the cache can cost is the compile it was meant to save. Imports
nothing of torchbot but ``config.paths`` (when first used).
"""

from __future__ import annotations

import os
import pickle
import re
import sys

try:
    import _sre
    from re import _compiler, _parser
except ImportError:  # pragma: no cover - another implementation: plain re.compile
    _sre = None

KEEP = 2000  # entries at most; past that the file starts afresh (patterns of old data fall away)
_state: dict = {"entries": None, "dirty": False, "path": None}


def _file():
    from config.paths import cache_dir

    directory = cache_dir()
    if directory is None or _sre is None:
        return None
    tag = f"{sys.implementation.cache_tag}-{_sre.MAGIC}-{sys.hexversion:x}"
    return directory / f"regex-{tag}.pickle"


def _entries() -> dict:
    entries = _state["entries"]
    if entries is None:
        entries = {}
        path = _state["path"] = _file()
        if path is not None:
            try:
                with path.open("rb") as fh:
                    stored = pickle.load(fh)
                if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == sys.version:
                    entries = stored[1]
            except FileNotFoundError:
                pass
            except Exception:  # noqa: BLE001 - deliberate: a truncated or foreign file is rebuilt
                entries = {}
        _state["entries"] = entries
    return entries


def _program(pattern: str, flags: int) -> tuple:
    """What ``re._compiler.compile`` hands to ``_sre.compile`` after the pattern."""
    p = _parser.parse(pattern, flags)
    code = [int(op) for op in _compiler._code(p, flags)]  # plain ints: the opcodes' own type does not pickle
    groupindex = p.state.groupdict
    indexgroup = [None] * p.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    return flags | p.state.flags, code, p.state.groups - 1, dict(groupindex), tuple(indexgroup)


def rx(pattern: str, flags: int = 0) -> re.Pattern:
    """``re.compile(pattern, flags)``, from the cache when this interpreter compiled it before."""
    flags = int(flags)
    if _sre is None:
        return re.compile(pattern, flags)
    entries = _entries()
    key = (pattern, flags)
    program = entries.get(key)
    if program is not None:
        try:
            return _sre.compile(pattern, *program)
        except Exception:  # noqa: BLE001 - deliberate: an entry this engine rejects is compiled again
            entries.pop(key, None)
    try:
        program = _program(pattern, flags)
        compiled = _sre.compile(pattern, *program)
    except re.error:
        raise
    except Exception:  # noqa: BLE001 - deliberate: an engine whose internals differ compiles as usual
        return re.compile(pattern, flags)
    if _state["path"] is not None:
        if len(entries) >= KEEP:
            entries.clear()
        entries[key] = program
        if not _state["dirty"]:
            import atexit

            _state["dirty"] = True
            atexit.register(_save)
    return compiled


def _save() -> None:
    path = _state["path"]
    if path is None:
        return
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".regex-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((sys.version, _state["entries"]), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, pickle.PicklingError, RecursionError):
        pass  # an optimisation: a read-only or full disk means compiling next time
    _state["dirty"] = False
