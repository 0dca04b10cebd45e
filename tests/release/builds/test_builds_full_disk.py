"""Torchbot's own faults are its own (issue 26, point 4): a build log directory on a real, full
filesystem (a 64 KiB tmpfs; skipped where this process may not mount one) or an unwritable one
gives builds that still run, whose results are recorded (a success stays a success, its log
noted as incomplete), and a build that fails meanwhile is `interrupted` naming TORCHBOT_LOG_DIR
and the reason, never `failed`; nothing ends in an internal error."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from release.builds import run as builds
from tests.support import ci
from tests.support import fixtures_builds as fx

NOISY = "head -c 300000 /dev/zero | tr '\\\\0' x; echo; "  # more output than the filesystem holds


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    """A tmpfs of ``size`` mounted at ``where``, filled up (skipped where it cannot be mounted)."""
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        ci.skip("mounting a tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          text=True, check=False)
    if made.returncode != 0:
        ci.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        subprocess.run(f"head -c 100000000 /dev/zero > {where}/filler", shell=True, check=False,
                       capture_output=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


@pytest.fixture
def full_dir(tmp_path: Path):
    """A directory on a full 64 KiB tmpfs."""
    with tmpfs(tmp_path / "small", "64k") as where:
        yield where


def _run(tmp_path: Path, log_dir: Path, command: str):
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    ctx = fx.context(tmp_path, log_dir=log_dir, build_command=command, build_result_link="README.md")
    rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=2)
    return ctx, {r["package"]: r for r in rows}


def test_builds_with_a_full_log_directory_are_recorded_as_what_they_were(tmp_path, full_dir):
    ctx, rows = _run(tmp_path, full_dir / "logs", NOISY + "true")
    assert {r["state"] for r in rows.values()} == {"succeeded"}  # the results are kept and recorded
    for r in rows.values():
        assert "its log is incomplete" in r["message"] and "TORCHBOT_LOG_DIR" in r["message"]
        assert "No space left on device" in r["message"]
    assert {r["state"] for r in builds.status(ctx, fx.BRANCH)} == {"succeeded"}


def test_a_failing_build_with_a_full_log_directory_is_an_infrastructure_error_not_a_failure(tmp_path, full_dir):
    ctx, rows = _run(tmp_path, full_dir / "logs", NOISY + "exit 3")
    for r in rows.values():
        assert r["state"] == "interrupted", r
        assert r["message"].startswith("not a build failure") and f"TORCHBOT_LOG_DIR {full_dir}" in r["message"]
        assert "No space left on device" in r["message"] and "internal error" not in r["message"]
    assert "failed" not in {r["state"] for r in builds.status(ctx, fx.BRANCH)}


def test_a_log_directory_that_fills_during_the_build_keeps_the_failure_torchbots(tmp_path):
    if os.geteuid() != 0:
        ci.skip("mounting a tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True,
                      check=False).returncode != 0:
        ci.skip("cannot mount a tmpfs here")
    try:  # the log opens fine; the build's own output fills the filesystem, and then it fails
        _, rows = _run(tmp_path, where / "logs", NOISY + "exit 3")
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)
    assert {r["state"] for r in rows.values()} == {"interrupted"}
    assert all("TORCHBOT_LOG_DIR" in r["message"] for r in rows.values())


def test_an_unusable_log_directory_is_named_and_the_builds_still_run(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / fx.BRANCH).write_text("a file where the branch's log directory belongs\n")  # fails for root too
    _, rows = _run(tmp_path, logs, "true")
    assert {r["state"] for r in rows.values()} == {"succeeded"}
    assert all(f"TORCHBOT_LOG_DIR {logs / fx.BRANCH}" in r["message"] for r in rows.values())
    _, failing = _run(tmp_path / "again", logs, "exit 3")
    assert {r["state"] for r in failing.values()} == {"interrupted"}


def test_a_state_db_whose_disk_fills_during_the_build_records_the_results_once_space_returns(tmp_path):
    """The SQLite state DB and the logs share a filesystem that the build itself fills: the
    results cannot be written (nor spooled) and are kept in memory until the space returns."""

    with tmpfs(tmp_path / "mid", "2m") as full_dir:
        _fill_during_the_build(tmp_path, full_dir)


def _fill_during_the_build(tmp_path: Path, full_dir: Path) -> None:
    import logging
    import threading

    filler = full_dir / "filler"
    filler.unlink()  # room for the state DB and the run's records at the start
    db = full_dir / "state.sqlite"
    repo = fx.make_repo(tmp_path, packages=fx.OK[:1])
    command = f"head -c 100000000 /dev/zero > {filler}; true"  # the build fills the disk under torchbot
    ctx = fx.context(tmp_path, state_db=f"sqlite:///{db}", log_dir=full_dir / "logs", build_command=command,
                     build_result_link="README.md", state_wait_seconds=120, state_timeout_seconds=2)
    kept = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record):
            if "kept in memory" in record.getMessage() or "does not answer" in record.getMessage():
                kept.set()

    def free_space() -> None:
        if kept.wait(timeout=120):
            filler.unlink(missing_ok=True)  # the operator frees the space

    handler = Seen()
    logging.getLogger("torchbot").addHandler(handler)
    helper = threading.Thread(target=free_space, daemon=True)
    helper.start()
    try:
        rows = builds.run_local(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo), jobs=1)
    finally:
        logging.getLogger("torchbot").removeHandler(handler)
    assert kept.is_set()  # the store really could not take the result while the disk was full
    assert [r["state"] for r in rows] == ["succeeded"]
    assert [r["state"] for r in builds.status(ctx, fx.BRANCH)] == ["succeeded"]  # recorded once space returned
