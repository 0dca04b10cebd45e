"""The torchbot CLI as a process of its own, forked from a warm interpreter.

``run(args, env=..., cwd=...)`` answers like ``subprocess.run([sys.executable, "-m", "bot",
*args], env=env, cwd=cwd, capture_output=True, text=True)``: a new process with exactly
``env`` as its environment and ``cwd`` as its working directory runs torchbot's ``main`` and
exits with its status; its stdout and stderr are captured. The process is forked from a
multiprocessing forkserver (one per test worker) that has imported only third-party libraries
(pydantic-settings, SQLAlchemy, httpx, ...), never a torchbot module: torchbot itself is imported
fresh in each process, under that process's environment, so a setting read at import is read
as in a real start. What it saves is the libraries' import, about 0.25 s of CPU per command of
the hundreds the settings and schedule tests run.

Not for what needs a process started from scratch: signals sent to it (``serve``, the kill
tests), its standard input, or Python's own start-up (``PYTHON*`` variables): those tests keep
``subprocess``.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PRELOAD = ["argparse", "json", "logging", "sqlite3", "tomllib", "pydantic", "pydantic_settings", "sqlalchemy",
           "sqlalchemy.orm", "sqlalchemy.dialects.sqlite", "httpx", "tenacity", "platformdirs"]


@functools.cache
def _forkserver():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _child(args: list[str], env: dict[str, str], cwd: str, out: str, err: str) -> None:  # pragma: no cover
    import atexit
    import traceback

    for fd, path in ((1, out), (2, err)):
        f = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(f, fd)
        os.close(f)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = ["torchbot", *args]
    code: int = 1
    try:
        from bot.frontends.cli.main import main

        code = main(list(args))
    except SystemExit as stop:  # argparse's usage errors, as `python -m bot` exits on them
        if isinstance(stop.code, int) or stop.code is None:
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001  (what Python prints and exits with for an uncaught exception)
        traceback.print_exc()
        code = 1
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def run(args: list[str], *, env: dict[str, str], cwd: str | Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``torchbot *args`` in a new process with ``env`` and ``cwd`` (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="torchbot-cli-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        out.touch()
        err.touch()
        proc = _forkserver().Process(target=_child, args=(list(args), dict(env), str(cwd), str(out), str(err)))
        proc.start()
        proc.join(timeout)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
            raise subprocess.TimeoutExpired(["torchbot", *args], timeout, out.read_text(), err.read_text())
        return subprocess.CompletedProcess(["torchbot", *args], proc.exitcode, out.read_text(), err.read_text())
