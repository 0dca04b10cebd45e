"""tests/support/forked_cli.py answers as ``python -m bot`` started from scratch does: the same
exit status, stdout and stderr, under exactly the environment and working directory given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import forked_cli

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(tmp_path / "d"), XDG_STATE_HOME=str(tmp_path / "s"),
               XDG_CACHE_HOME=str(tmp_path / "c"), **extra)
    return env


@pytest.mark.parametrize("args, extra", [
    (["--version"], {}),
    (["frobnicate"], {}),  # argparse's usage error: exit 2
    (["paths"], {"TORCHBOT_LOG_DIR": "{tmp}/logs"}),  # the environment given, and only it
    (["release", "status"], {"TORCHBOT_HTTP_TIMEOUT": "-1"}),  # a settings mistake: one line, exit 2
    (["ask", "--json", "H100 with Graviton3"], {"TORCHBOT_FLOX_ORG": "acme"}),
])
def test_a_forked_command_answers_as_one_started_from_scratch(tmp_path, args, extra) -> None:
    said = []
    for name, run in (("fresh", _fresh), ("forked", forked_cli.run)):
        home = tmp_path / name  # each its own files: the first must not change what the second finds
        cwd = home / "cwd"
        cwd.mkdir(parents=True)
        env = _env(home, **{k: v.format(tmp=home) for k, v in extra.items()})
        r = run(args, env=env, cwd=cwd)
        said.append((r.returncode, r.stdout.replace(str(home), "HOME"), r.stderr.replace(str(home), "HOME")))
        assert list(cwd.iterdir()) == []
    assert said[0] == said[1]
    assert said[0][1] or said[0][2]  # each says something


def _fresh(args: list[str], *, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_variable_of_the_test_process_does_not_leak_into_the_forked_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TORCHBOT_HTTP_TIMEOUT", "-1")  # would stop the start if it leaked
    r = forked_cli.run(["paths"], env=_env(tmp_path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
