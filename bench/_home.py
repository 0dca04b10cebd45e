"""Benchmarks keep torchbot's own files (state DB, audit log, logs, cache, created branches) out
of the real home: ``isolate()`` points ``XDG_DATA_HOME``, ``XDG_STATE_HOME`` and
``XDG_CACHE_HOME`` at a temporary directory (removed at exit) for this process and the
``torchbot`` processes it starts."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def isolate() -> str:
    home = tempfile.mkdtemp(prefix="torchbot-bench-home-")
    atexit.register(shutil.rmtree, home, True)
    for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")):
        os.environ[var] = os.path.join(home, sub)
    return home
