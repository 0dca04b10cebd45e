"""Progress you can watch: the event stream (config.progress), its terminal rendering (rich on a
terminal, one line per finished item elsewhere) for `release build`, `release publish` and
`release bump-pins --all`, run as real processes."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

from config.progress import Progress, duration
from tests.release.pins.test_release_bump import env, fake, repo  # noqa: F401  (fixtures: a bump repository, fake nixpkgs)
from tests.support import fixtures_builds as fx
from tests.support import forked_cli

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_counts_eta_and_the_summary_line() -> None:
    clock, seen = Clock(), []
    p = Progress(seen.append, verb="built", clock=clock)
    p.begin(237)
    for i in range(61):
        p.started(f"v{i}")
    clock.t = 3600.0
    for i in range(57):
        p.finished(f"v{i}", "succeeded")
    p.finished("v57", "failed", "build exited with status 1", log="/logs/v57.log")
    p.finished("v58", "failed", "timed out", url="https://logs.example/v58.log")
    snap = seen[-1].snapshot
    assert (snap.done, snap.failed, snap.running, snap.waiting) == (57, 2, 2, 176)
    # 59 finished in an hour: 178 more take about three hours
    assert snap.line() == "57/237 built, 2 failed, 2 running, ETA 3 h"
    assert [f.item for f in snap.failures] == ["v57", "v58"]
    assert snap.failures[1].url == "https://logs.example/v58.log"
    assert seen[-1].kind == "finished" and seen[-1].seconds == 3600.0
    p.end()
    assert seen[-1].kind == "end" and seen[-1].snapshot.eta is None


def test_no_eta_before_anything_ended_and_short_durations() -> None:
    p = Progress(verb="published", clock=Clock())
    p.begin(3)
    p.started("a")
    assert p.snapshot().line() == "0/3 published, 1 running"
    assert [duration(s) for s in (5, 125, 3600, 8400, 40000)] == ["5 s", "2 min", "1 h", "2 h 20 min", "11 h"]


def test_a_failing_listener_never_stops_the_work(caplog) -> None:
    def broken(event) -> None:
        raise RuntimeError("renderer broke")

    p = Progress(broken, verb="built")
    p.begin(1)
    p.finished("a", "succeeded")
    assert p.snapshot().done == 1
    assert "a progress listener failed" in caplog.text


def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    out.update(
        PYTHONPATH=str(ROOT),
        TORCHBOT_STATE_DB=f"sqlite:///{tmp_path / 'state.sqlite'}",
        TORCHBOT_LOG_DIR=str(tmp_path / "logs"),
        TORCHBOT_PUBLISH_COMMAND="true",
        TORCHBOT_FLOX_ORG="acme",
        **extra,
    )
    return out


def _torchbot(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return forked_cli.run(list(args), env=_environment(tmp_path, **extra), cwd=tmp_path, timeout=300)


def test_build_and_publish_print_one_line_per_finished_variant_when_not_on_a_terminal(tmp_path: Path) -> None:
    work = fx.make_repo(tmp_path)
    build = _torchbot(tmp_path, "release", "build", "--repo", str(work), "--branch", fx.BRANCH, "--jobs", "2",
                      TORCHBOT_BUILD_COMMAND=fx.NIX_BUILD)
    assert build.returncode == 1  # one variant fails by design
    lines = [x for x in build.stderr.splitlines() if x.startswith("[")]
    assert len(lines) == len(fx.ALL), build.stderr
    assert [re.match(r"\[(\d+)/4\]", x).group(1) for x in lines] == ["1", "2", "3", "4"]
    failing = next(x for x in lines if fx.FAILING in x)
    assert " failed " in failing and "build exited with status" in failing and "log: " in failing
    assert re.search(r"log: \S+/logs/" + fx.BRANCH + "/" + fx.FAILING + r"-\d+\.log", failing)
    assert lines[-1].endswith("(3/4 built, 1 failed)")
    assert "\x1b[" not in build.stderr  # no terminal control codes in logs
    assert build.stderr.splitlines()[0] == "torchbot: local builds run TORCHBOT_BUILD_COMMAND (" + fx.NIX_BUILD + ")"

    publish = _torchbot(tmp_path, "release", "publish", "--repo", str(work), "--branch", fx.BRANCH)
    assert publish.returncode == 0, publish.stderr
    lines = [x for x in publish.stderr.splitlines() if x.startswith("[")]
    assert len(lines) == 3 and all(" published " in x for x in lines)
    assert lines[-1].endswith("(3/3 published)")


def test_bump_all_reports_each_branch_as_it_is_checked_and_committed(env, capsys) -> None:  # noqa: F811
    from bot.frontends.cli.main import main as cli
    from tests.support.fixtures_pins import git

    git(env, "reset", "-q", "--hard")
    rc = cli(["release", "bump-pins", "--all", "--cuda", "12.8", "--channel", "nixos-unstable"])
    err = capsys.readouterr().err
    assert rc == 0, err
    lines = [x for x in err.splitlines() if x.startswith("[")]
    checked = [x for x in lines if x.endswith(" checked)") or " checked " in x.split("(")[0]]
    # every branch is checked and gets its outcome (the vLLM one: skipped); three are committed
    assert [re.match(r"\[(\d+)/4\] checked (\S+)", x).group(2) for x in checked] == \
        ["main", "pytorch-2.10-python313", "pytorch-2.8-python312", "pytorch-2.9-vllm-0.15.1"]
    assert "torchbot: hashing the nixpkgs tarball of 0123abc (nix-prefetch-url)" in err
    committed = [x for x in lines if " committed " in x]
    assert len(committed) == 3 and committed[-1].endswith("(3/3 bumped)")


def _read_pty(fd: int, proc: subprocess.Popen) -> str:
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    return out.decode(errors="replace")


def test_on_a_terminal_the_build_shows_a_live_bar(tmp_path: Path) -> None:
    work = fx.make_repo(tmp_path)
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "bot", "release", "build", "--repo", str(work), "--branch",
                             fx.BRANCH, "--variant", "pytorch-*cpu*", "--variant", "*sm90*"],
                            cwd=tmp_path,
                            env=_environment(tmp_path, TORCHBOT_BUILD_COMMAND=fx.NIX_BUILD, COLUMNS="160"),
                            stdout=subprocess.DEVNULL, stderr=child, stdin=subprocess.DEVNULL)
    os.close(child)
    screen = _read_pty(main, proc)
    os.close(main)
    assert proc.returncode == 0, screen
    assert "\x1b[" in screen  # rich drew on the terminal
    assert "3/3 built, 0 failed, 0 running" in screen
    assert not re.search(r"^\[\d+/\d+\]", screen, re.M)  # not the log-style lines


def test_github_builds_report_through_the_same_events(tmp_path: Path) -> None:
    from release.builds import run as builds
    from tests.support.fakes_github import FakeGitHub

    work = fx.make_repo(tmp_path)
    heard: list = []
    with FakeGitHub(fail={fx.FAILING}) as gh:
        ctx = fx.context(tmp_path, github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                         github_poll_seconds=0.01)
        plan = builds.prepare(ctx, fx.BRANCH, repo=work, backend="github")
        builds.build(ctx, plan, progress=Progress(heard.append, verb="built"))
    finished = {e.item: e for e in heard if e.kind == "finished"}
    assert set(finished) == set(fx.ALL)
    assert finished[fx.FAILING].state == "failed"
    assert finished[fx.FAILING].url.startswith("https://github.com/acme/build-pytorch/actions/runs/")
    assert heard[0].kind == "begin" and heard[-1].kind == "end"
    assert heard[-1].snapshot.line() == "3/4 built, 1 failed"
