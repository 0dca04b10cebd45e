"""Failures say why: a failed build's line in the terminal and in Slack carries the last error
lines of its log (Nix's ``error:`` lines, a few at most), the log path, and the command that
retries it."""

from __future__ import annotations

import io
from pathlib import Path

from bot.frontends.slack.blocks import summary_of
from bot.frontends.slack.jobs import _failures
from config.progress import Progress
from release.builds import failures
from release.builds import run as builds
from release.builds.commands import BuildsResult
from release.cli import TerminalProgress
from tests.support import fixtures_builds as fx

NIX_LOG = """$ flox build pytorch-python313-cuda12_8-sm90-avx512
building '/nix/store/abc-source.drv'...
error: unable to download 'https://github.com/pytorch/pytorch/releases/download/v2.9.1/pytorch-v2.9.1.tar.gz': \
HTTP error 404

       response body:

       Not Found
error: builder for '/nix/store/abc-source.drv' failed with exit code 1
error: 1 dependencies of derivation '/nix/store/def-python3.13-torch-2.9.1.drv' failed to build
error: 1 dependencies of derivation '/nix/store/def-python3.13-torch-2.9.1.drv' failed to build

torchbot: build exited with status 1
"""


def test_the_last_error_lines_of_a_nix_log() -> None:
    lines = failures.error_lines(NIX_LOG)
    assert lines == [
        "error: unable to download 'https://github.com/pytorch/pytorch/releases/download/v2.9.1/pytorch-v2.9.1"
        ".tar.gz': HTTP error 404",
        "error: builder for '/nix/store/abc-source.drv' failed with exit code 1",
        "error: 1 dependencies of derivation '/nix/store/def-python3.13-torch-2.9.1.drv' failed to build",
    ]
    assert failures.error_lines("\x1b[31;1merror:\x1b[0m boom\n") == ["error: boom"]
    # a log without error: lines gives its last own lines, not torchbot's
    assert failures.error_lines("$ make\ncc: fatal\nmake: *** [all] Error 1\ntorchbot: build exited\n", 2) == [
        "cc: fatal", "make: *** [all] Error 1"]
    assert failures.retry_command("b", "p", "github", "bump/b-1") == (
        "torchbot release build --branch b --variant p --backend github --head bump/b-1")


def test_a_failed_local_build_says_why_in_the_terminal_and_in_slack(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=[fx.OK[0], fx.FAILING])
    ctx = fx.context(tmp_path)  # a real nix-build; the failing recipe's builder exits 1
    out = io.StringIO()
    progress = Progress(TerminalProgress(out, live=False), verb="built")
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo)
    rows = {r["package"]: r for r in builds.run_local(ctx, plan, progress=progress)}
    bad = rows[fx.FAILING]
    assert bad["state"] == "failed"
    message = bad["message"]
    assert message.startswith("build exited with status ") and "error: builder for '/nix/store/" in message
    assert message.endswith(f"(retry: torchbot release build --branch {fx.BRANCH} --variant {fx.FAILING})")
    assert message.count("error:") <= failures.MAX_LINES and "\n" not in message
    # the terminal line: the error lines, the retry command and the log path
    (line,) = [ln for ln in out.getvalue().splitlines() if f"failed {fx.FAILING}" in ln]
    assert "error: builder for" in line and f"--variant {fx.FAILING}" in line and f"log: {bad['log']}" in line
    # Slack: the live message names the first failure's why and log, the result lists it
    text = _failures(progress.snapshot())
    assert "error: builder for" in text and "retry: torchbot release build" in text and bad["log"] in text
    _, failed = summary_of(BuildsResult("build", list(rows.values())))
    (only,) = failed
    assert "error: builder for" in only and f"log: {bad['log']}" in only and "retry:" in only
