"""The build-process adapter: runs a build command (``flox build``, ``nix-build``, whatever
``TORCHBOT_BUILD_COMMAND`` says) in its own process group with a log file and a timeout, and
checks its result link. The only place in release/ that starts build processes.

May import: config.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Outcome:
    state: str
    message: str = ""
    out_path: str | None = None


def run_build(command: str, cwd: Path, log_path: Path, timeout: float, result_link: Path,
             check: str | None) -> Outcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        log.write(f"$ {command}\n")
        log.flush()
        try:
            proc = subprocess.Popen(
                command, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        except OSError as err:
            log.write(f"torchbot: could not start the build: {err}\n")
            return Outcome("failed", f"could not start: {err}")
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            log.write(f"\ntorchbot: timed out after {timeout:g} s\n")
            return Outcome("failed", f"timed out after {timeout:g} s")
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
            chk = subprocess.run(check, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                 timeout=min(timeout, 600))
            if chk.returncode != 0:
                log.write(f"\ntorchbot: result check failed ({chk.returncode})\n")
                return Outcome("failed", "the result check failed", out)
        log.write(f"\ntorchbot: ok {out}\n")
        return Outcome("succeeded", "", out)


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
