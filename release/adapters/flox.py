"""The build-process adapter: the only place in release/ that starts build processes.

**Which tool.** ``local_builder`` decides how local builds run: ``TORCHBOT_BUILD_COMMAND`` when
set, else ``flox build {package}`` when ``flox`` is on PATH, else ``nix-build`` of the same
recipe expression (:data:`NIX_BUILD`: the file's function called with its defaults, or through
``callPackage`` of ``<nixpkgs>`` when it takes packages as arguments, as flox does), else none.

**Builds die with the bot.** ``run_build`` starts each build in a process group of its own
(a new session), under a small ``sh`` guard that, on SIGTERM, sends SIGTERM to its whole group.
On Linux the guard gets ``PR_SET_PDEATHSIG`` = SIGTERM (``prctl`` in the child, then a check
that the parent did not die before it), so when torchbot dies (even by SIGKILL) the kernel
signals the guard and the guard stops the build's group. The death signal follows the *thread*
that forked; builds are started from a thread that waits for the build until it ends, so it
fires only when torchbot goes. Nix's own builders die with their ``nix-build`` (Nix sets the
same signal on them). Belt and braces: every build process carries ``TORCHBOT_BUILD_RUN=<run>``
in its environment and its group is recorded, so a restarted torchbot stops what is left of a
dead run (``stop_run_processes``: SIGTERM, then SIGKILL after a grace period). The other
choice, re-adopting builds after a restart, would need torchbot to follow processes that are
not its children and read their exit status from somewhere; a build interrupted by a restart
is instead resumed (``--resume``) from a clean worktree.

May import: config.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
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

# the guard: SIGTERM to it stops the whole group; otherwise it waits for the command's status
_GUARD = 'trap "trap - TERM; kill -TERM 0" TERM; /bin/sh -c "$1" & wait $!'
_PR_SET_PDEATHSIG = 1


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


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


def _die_with_parent(parent: int) -> Callable[[], None]:
    def in_child() -> None:
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # torchbot died between fork and prctl
            os._exit(143)

    return in_child


def start_guarded(command: str, cwd: Path, log, mark: str | None) -> subprocess.Popen:
    """``command`` under the guard, in a new session (its own process group), output to ``log``."""
    env = dict(os.environ)
    if mark:
        env[BUILD_MARK] = mark
    return subprocess.Popen(
        ["/bin/sh", "-c", _GUARD, "torchbot-build", command], cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, env=env, preexec_fn=_die_with_parent(os.getpid()),
    )


def run_build(command: str, cwd: Path, log_path: Path, timeout: float, result_link: Path,
              check: str | None, *, mark: str | None = None,
              on_start: Callable[[int], None] | None = None) -> Outcome:
    """Run one build to its end. ``on_start(pgid)`` is told the build's process group."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        log.write(f"$ {command}\n")
        log.flush()
        rc = _run_logged(command, cwd, log, timeout, mark, on_start)
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
            log.flush()
            chk = _run_logged(check, cwd, log, min(timeout, 600), mark, on_start)
            if chk != 0:
                log.write(f"\ntorchbot: result check failed ({getattr(chk, 'message', chk)})\n")
                return Outcome("failed", "the result check failed", out)
        log.write(f"\ntorchbot: ok {out}\n")
        return Outcome("succeeded", "", out)


def _run_logged(command: str, cwd: Path, log, timeout: float, mark: str | None,
                on_start: Callable[[int], None] | None) -> int | Outcome:
    try:
        proc = start_guarded(command, cwd, log, mark)
    except OSError as err:
        log.write(f"torchbot: could not start the build: {err}\n")
        return Outcome("failed", f"could not start: {err}")
    if on_start is not None:
        on_start(proc.pid)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        log.write(f"\ntorchbot: timed out after {timeout:g} s\n")
        return Outcome("failed", f"timed out after {timeout:g} s")
    except BaseException:  # torchbot is stopping (KeyboardInterrupt, SystemExit): the build stops with it
        kill_group(proc)
        raise


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


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
    if not Path("/proc/self/stat").exists():
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
    if not Path("/proc/self/stat").exists():
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for g in groups:
                try:
                    os.killpg(g, sig)
                except (ProcessLookupError, PermissionError):
                    pass
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
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
