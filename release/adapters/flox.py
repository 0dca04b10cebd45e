"""The build-process adapter: the only place in release/ that starts build processes.

**Which tool.** ``local_builder`` decides how local builds run: ``TORCHBOT_BUILD_COMMAND`` when
set, else ``flox build {package}`` when ``flox`` is on PATH, else ``nix-build`` of the same
recipe expression (:data:`NIX_BUILD`: the file's function called with its defaults, or through
``callPackage`` of ``<nixpkgs>`` when it takes packages as arguments, as flox does), else none.

**Builds die with the bot.** ``run_build`` starts each build in a process group of its own (a
new session) and registers the group with a watchdog: one small process per torchbot process
(``python -I -S -c`` :data:`_WATCHDOG`, started at the first build, in a session of its own so a
Ctrl-C meant for torchbot does not reach it) that reads group numbers from a pipe only torchbot
holds. When torchbot dies, however it dies (SIGKILL included), the kernel closes that pipe; the
watchdog reads end-of-file and stops every build group still registered: SIGTERM, then SIGKILL
after :data:`GRACE` seconds. This works on Linux and macOS alike, costs nothing per build but a
line on the pipe, and does not depend on which thread started a build (``PR_SET_PDEATHSIG``
fires when the *thread* that forked exits, and would need a guard process per build to reach
the whole group). Nix's own builders die with their ``nix-build`` (Nix sets
``PR_SET_PDEATHSIG`` on them). Belt and braces: every build process carries
``TORCHBOT_BUILD_RUN=<run>`` in its environment and its group is recorded, so a restarted
torchbot stops whatever a dead run left (``stop_run_processes``). The other choice, re-adopting
builds after a restart, would need torchbot to follow processes that are not its children and
to recover their exit status from somewhere; a build interrupted by a restart is resumed
(``--resume``) from a clean worktree instead.

May import: config.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

BUILD_MARK = "TORCHBOT_BUILD_RUN"  # in the environment of every build process: the run it belongs to

# nix-build of a recipe file as flox builds it: a plain expression or a function with defaults is
# called with them; a callPackage-style function ({ python3Packages, lib, ... }:) gets <nixpkgs>.
_RECIPE_EXPR = (
    "{{ recipe }}: let f = import recipe; "
    "args = if builtins.isFunction f then builtins.functionArgs f else {{ }}; "
    "needs = builtins.filter (n: !args.${{n}}) (builtins.attrNames args); "
    "in if !(builtins.isFunction f) then f else if needs == [ ] then f {{ }} "
    "else (import <nixpkgs> {{ }}).callPackage f {{ }}"
)
NIX_BUILD = f"nix-build -E '{_RECIPE_EXPR}' --arg recipe ./.flox/pkgs/{{package}}.nix -o result-{{package}}"
FLOX_BUILD = "flox build {package}"

GRACE = 10.0  # seconds between SIGTERM and SIGKILL when a dead torchbot's builds are stopped

# The watchdog: group numbers come in as "+N" / "-N" lines; at end of input (torchbot is gone)
# every group still registered is stopped. Imports nothing of torchbot (it runs with -I -S).
_WATCHDOG = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    op, n = line[:1], line[1:].strip()
    if n.isdigit():
        (groups.add if op == "+" else groups.discard)(int(n))
def signal_all(sig):
    alive = set()
    for g in groups:
        try:
            os.killpg(g, sig)
            alive.add(g)
        except ProcessLookupError:
            pass
        except PermissionError:
            alive.add(g)
    return alive
groups = signal_all(signal.SIGTERM)
end = time.monotonic() + float(sys.argv[1])
while groups and time.monotonic() < end:
    time.sleep(0.1)
    groups = signal_all(0)
signal_all(signal.SIGKILL)
"""


_HAS_PROC = Path("/proc/self/stat").exists()  # Linux: processes are read from /proc


class Watchdog:
    """This process's watchdog (see the module docstring): ``add(pgid)`` / ``remove(pgid)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._groups: set[int] = set()

    def _start(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHDOG, str(GRACE)],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True, text=True)
        for g in self._groups:  # a watchdog started again (the last one was killed) learns them all
            self._proc.stdin.write(f"+{g}\n")
        self._proc.stdin.flush()

    def _say(self, line: str) -> None:
        for _ in range(2):
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
                return
            except (BrokenPipeError, OSError):
                self._proc = None

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            self._say(f"+{pgid}\n")

    def remove(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)
            if self._proc is not None:
                self._say(f"-{pgid}\n")


WATCHDOG = Watchdog()


@dataclass
class Outcome:
    state: str
    message: str = ""
    out_path: str | None = None


@dataclass(frozen=True)
class Builder:
    """How this host builds locally: ``tool`` is flox | nix-build | command | none."""

    tool: str
    command: str | None
    path: str | None = None

    def describe(self) -> str:
        if self.tool == "flox":
            return f"local builds use flox build ({self.path})"
        if self.tool == "nix-build":
            return f"local builds use nix-build ({self.path}); flox is not on PATH"
        if self.tool == "command":
            return f"local builds run TORCHBOT_BUILD_COMMAND ({self.command})"
        return ("local builds: neither flox nor nix-build is on PATH (install one, set TORCHBOT_BUILD_COMMAND, "
                "or build on GitHub with --backend github)")


def local_builder(configured: str | None, path: str | None = None) -> Builder:
    """The build command for this host: ``configured`` (TORCHBOT_BUILD_COMMAND) when given, else
    flox when it is on ``path`` (default $PATH), else nix-build, else none."""
    if configured and configured.strip():
        return Builder("command", configured)
    flox = shutil.which("flox", path=path)
    if flox:
        return Builder("flox", FLOX_BUILD, flox)
    nix_build = shutil.which("nix-build", path=path)
    if nix_build:
        return Builder("nix-build", NIX_BUILD, nix_build)
    return Builder("none", None)


# What a build never sees of torchbot's environment: its own settings (tokens, the state DB's URL
# with its password), Slack's and GitHub's tokens, and any variable named like a secret. Nix's and
# flox's own variables are kept whatever their names (a FloxHub token is flox's to use).
_SECRET_PREFIXES = ("TORCHBOT_", "SLACK_")
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "PRIVATE_KEY", "CREDENTIAL")
_SECRET_NAMES = ("DATABASE_URL", "GH_ENTERPRISE_TOKEN", "GITHUB_PAT")
_TOOL_PREFIXES = ("NIX_", "FLOX_")


def build_env(environ: dict[str, str] | None = None, mark: str | None = None) -> dict[str, str]:
    """The environment a build runs in (pure): ``environ`` (torchbot's) without its secrets,
    plus the run's mark."""
    env = {}
    for name, value in (os.environ if environ is None else environ).items():
        upper = name.upper()
        tool = upper.startswith(_TOOL_PREFIXES)
        if upper.startswith(_SECRET_PREFIXES) or upper in _SECRET_NAMES:
            continue
        if not tool and any(word in upper for word in _SECRET_WORDS):
            continue
        env[name] = value
    if mark:
        env[BUILD_MARK] = mark
    return env


def start_build(command: str, cwd: Path, log, mark: str | None) -> subprocess.Popen:
    """``command`` in a new session (its own process group), output to ``log``, registered with
    the watchdog (the caller calls ``WATCHDOG.remove`` once it has ended). It sees torchbot's
    environment without its secrets (:func:`build_env`)."""
    env = build_env(mark=mark)
    proc = subprocess.Popen(command, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    WATCHDOG.add(proc.pid)
    return proc


def run_build(command: str, cwd: Path, log_path: Path, timeout: float, result_link: Path,
              check: str | None, *, mark: str | None = None,
              on_start: Callable[[int], None] | None = None, kill_grace: float) -> Outcome:
    """Run one build to its end. ``on_start(pgid)`` is told the build's process group; a build
    stopped gets ``kill_grace`` seconds between SIGTERM and SIGKILL (``kill_group``). A log
    directory that is full or unwritable is torchbot's fault: the build still runs (its output
    kept in memory, ``release.adapters.buildlog``) and a build that failed while its log could
    not be written is ``interrupted`` naming TORCHBOT_LOG_DIR, never ``failed``."""
    from release.adapters.buildlog import open_log

    log = open_log(log_path, f"$ {command}\n")
    try:
        out = _build_logged(command, cwd, log, timeout, result_link, check, mark, on_start, kill_grace)
    finally:
        log.close()
    if log.problem is None:
        return out
    if out.state == "succeeded":
        return Outcome(out.state, f"its log is incomplete ({log.where()})", out.out_path)
    return Outcome("interrupted", f"not a build failure: torchbot could not write the build log ({log.where()}); "
                   f"the build {out.message or out.state}; free the space and resume it (--resume)")


def _build_logged(command: str, cwd: Path, log, timeout: float, result_link: Path, check: str | None,
                  mark: str | None, on_start: Callable[[int], None] | None, kill_grace: float) -> Outcome:
    rc = _run_logged(command, cwd, log, timeout, mark, on_start, kill_grace)
    if isinstance(rc, Outcome):
        return rc
    if rc != 0:
        log.write(f"\ntorchbot: build exited with status {rc}\n")
        return Outcome("failed", f"build exited with status {rc}")
    if not result_link.exists():
        log.write(f"\ntorchbot: no result at {result_link.name}\n")
        return Outcome("failed", f"the build left no {result_link.name}")
    out = os.path.realpath(result_link)
    if check:
        log.write(f"$ {check}\n")
        chk = _run_logged(check, cwd, log, min(timeout, 600), mark, on_start, kill_grace)
        if chk != 0:
            log.write(f"\ntorchbot: result check failed ({getattr(chk, 'message', chk)})\n")
            return Outcome("failed", "the result check failed", out)
    log.write(f"\ntorchbot: ok {out}\n")
    return Outcome("succeeded", "", out)


def _run_logged(command: str, cwd: Path, log, timeout: float, mark: str | None,
                on_start: Callable[[int], None] | None, kill_grace: float) -> int | Outcome:
    try:
        proc = start_build(command, cwd, log, mark)
    except OSError as err:
        log.write(f"torchbot: could not start the build: {err}\n")
        return Outcome("failed", f"could not start: {err}")
    if on_start is not None:
        on_start(proc.pid)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        left = "" if kill_group(proc, kill_grace) else f"process group {proc.pid} still has processes after SIGKILL"
        log.write(f"\ntorchbot: timed out after {timeout:g} s\n" + (f"torchbot: {left}\n" if left else ""))
        return Outcome("failed", f"timed out after {timeout:g} s" + (f"; {left}" if left else ""))
    except BaseException:  # torchbot is stopping (KeyboardInterrupt, SystemExit): the build stops with it
        kill_group(proc, kill_grace)
        raise
    finally:
        WATCHDOG.remove(proc.pid)


def kill_group(proc: subprocess.Popen, grace: float) -> bool:
    """Stop a build's whole process group (its leader is ``proc``): SIGTERM, then SIGKILL to
    whatever of the group is still there after ``grace`` seconds, then wait (as long again at
    most) until no process of the group is left. True when the group is gone."""
    pgid = proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    for sig in (signal.SIGKILL, None):
        end = time.monotonic() + grace
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
        while group_alive(pgid) and time.monotonic() < end:
            time.sleep(0.05)
        if not group_alive(pgid):
            return True
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
    return False


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies, which are only waiting to
    be reaped, do not count; without /proc, whether the group can still be signalled)."""
    if not _HAS_PROC:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat is not None and stat[0] != "Z" and stat[2] == str(pgid):
                return True
    return False


# -- what a dead run left behind ---------------------------------------------------------------


def _proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat fields after the command name (state, ppid, pgrp, ...), None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _carries(pid: int, mark: str) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{BUILD_MARK}={mark}".encode() in env.split(b"\0")


def run_processes(mark: str) -> set[int]:
    """The live processes of a run: those carrying its mark (on Linux; an empty set elsewhere).
    A process group number reused by someone else since is left alone."""
    if not _HAS_PROC:
        return set()
    found = set()
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        stat = _proc_stat(pid)
        if stat is None or stat[0] == "Z":
            continue
        if _carries(pid, mark):
            found.add(pid)
    return found


def stop_run_processes(mark: str, pgids: Iterable[int] = (), grace: float = 10.0) -> int:
    """Stop what a dead run left running: SIGTERM to its groups and marked processes, SIGKILL to
    what is still there after ``grace`` seconds. Returns how many processes were found. Without
    /proc (not Linux) the recorded groups are signalled as they are."""
    groups = {int(g) for g in pgids if g}
    if not _HAS_PROC:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for g in groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(g, sig)
        return len(groups)
    pids = run_processes(mark)
    if not pids:
        return 0
    _signal_all(pids, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        left = {p for p in pids if _proc_stat(p) is not None and _proc_stat(p)[0] != "Z"}
        if not left:
            return len(pids)
        time.sleep(0.1)
    _signal_all(run_processes(mark), signal.SIGKILL)
    return len(pids)


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
