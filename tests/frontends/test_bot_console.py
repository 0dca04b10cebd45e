"""`torchbot chat`: the same commands and mentions in a terminal, no Slack."""

import io
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from bot.frontends.chat import Chat
from bot.frontends.console import run
from config.settings import Settings
from release.context import Context
from tests.support import fixtures_builds as fx
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_console_session(tmp_path):
    ctx = Context(Settings(repo_path=None, audit_log=tmp_path / "audit.log", state_db=str(tmp_path / "s.sqlite")))
    out = io.StringIO()
    script = "/variant H100 with Graviton3\n@torchbot p5.48xlarge\n/pins\n/bump all\n/nonsense\n/torchbot help\n"
    assert run(ctx, io.StringIO(script), out) == 0
    text = out.getvalue()
    assert "pytorch-python313-cuda12_9-sm90-armv8_2" in text
    assert "pytorch-python313-cuda12_9-sm90-avx2" in text
    assert "fe5e41d" in text and "manual (vLLM pin)" in text
    assert "only admins" in text  # the console user is not an admin unless configured
    assert "Unknown command /nonsense" in text
    assert "/variant <anything>" in text
    assert "refused /bump all" in (tmp_path / "audit.log").read_text()


def test_chat_errors_are_sentences_not_tracebacks(tmp_path):
    ctx = Context(Settings(repo_path=None, admins=["console"], audit_log=tmp_path / "a.log",
                           state_db=str(tmp_path / "state.sqlite")))
    chat = Chat(ctx)
    r = chat.command("bump", "main")  # admin, but no repository configured
    assert r.ok is False and "TORCHBOT_REPO_PATH" in r.text()
    assert "Traceback" not in r.text()
    assert chat.confirm("nope", "console").ok is False


def test_torchbot_chat_console_script():
    r = subprocess.run([sys.executable, "-m", "bot", "chat"], check=False, input="DGX Spark\n", capture_output=True,
                       text=True, cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert r.returncode == 0, r.stderr
    assert "pytorch-python313-cuda13_1-sm121-armv9" in r.stdout


def test_confirm_and_cancel_with_nothing_pending_say_so(tmp_path):
    ctx = Context(Settings(repo_path=None, audit_log=tmp_path / "audit.log", state_db=str(tmp_path / "s.sqlite"),
                           _env_file=None))
    out = io.StringIO()
    assert run(ctx, io.StringIO("confirm\ncancel\nCONFIRM\n"), out) == 0
    text = out.getvalue()
    assert text.count("Nothing is waiting for confirm") == 2 and "Nothing is waiting for cancel" in text
    assert "pytorch-" not in text and "No variant" not in text  # not read as a hardware question


def test_the_console_says_how_to_act_as_an_admin(tmp_path):
    ctx = Context(Settings(repo_path=None, audit_log=tmp_path / "audit.log", state_db=str(tmp_path / "s.sqlite"),
                           _env_file=None))
    out = io.StringIO()
    run(ctx, io.StringIO("/bump main\n"), out)
    assert "TORCHBOT_ADMINS=console" in out.getvalue() and "torchbot chat --as" in out.getvalue()


def test_torchbot_chat_as_an_admin_user(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TORCHBOT_ADMINS": "U0ADMIN",
           "TORCHBOT_STATE_DB": str(tmp_path / "s.db"), "TORCHBOT_AUDIT_LOG": str(tmp_path / "audit.log")}
    r = subprocess.run([sys.executable, "-m", "bot", "chat", "--as", "U0ADMIN"], input="/bump main\n",
                       capture_output=True, text=True, cwd=ROOT, timeout=60, env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert "only admins" not in r.stdout and "TORCHBOT_REPO_PATH" in r.stdout  # an admin: it got as far as the repo
    r = subprocess.run([sys.executable, "-m", "bot", "chat", "--as", "U0OTHER"], input="/bump main\n",
                       capture_output=True, text=True, cwd=ROOT, timeout=60, env=env, check=False)
    assert "only admins" in r.stdout and "add U0OTHER to TORCHBOT_ADMINS" in r.stdout
    assert '"user": "U0OTHER"' in (tmp_path / "audit.log").read_text()


class _Screen(io.StringIO):
    """The console's stdout, written by the prompt's thread and the job worker, read by the test."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)

    def text(self) -> str:
        with self.lock:
            return self.getvalue()


def test_the_console_answers_status_at_once_while_a_build_runs_and_shows_its_progress(tmp_path):
    """A build that cannot end until the test opens its gate: `/torchbot status` typed meanwhile is
    answered at once, with the job's counts; the build's result is printed when it ends."""
    gate, starts = tmp_path / "gate", tmp_path / "starts"
    work = fx.make_repo(tmp_path)
    ctx = fx.context(tmp_path, repo_path=work, admins=["console"], audit_log=tmp_path / "audit.log",
                     build_command=f"echo {{package}} >> {starts} && while [ ! -e {gate} ]; do sleep 0.05; done"
                                   " && echo ok > result-{package}")
    read_end, write_end = os.pipe()
    stdin, typed = os.fdopen(read_end), os.fdopen(write_end, "w")
    screen = _Screen()
    console = threading.Thread(target=run, args=(ctx, stdin, screen), daemon=True)
    console.start()

    def type_line(line: str) -> None:
        typed.write(line + "\n")
        typed.flush()

    try:
        type_line(f"/build {fx.BRANCH}")
        wait_for(lambda: "Type 'confirm'" in screen.text(), "the build's plan")
        type_line("confirm")
        wait_for(lambda: starts.exists() and starts.read_text().strip(), "the first build to start")
        type_line("/torchbot status")
        status = wait_for(lambda: re.search(r"j\d+ running /build \S+ \(\d+ min, asked by console\): (.*)",
                                            screen.text()), "the status, while the build still runs")
        assert re.match(r"0/\d+ built, 1 running", status.group(1)), status.group(1)
        assert "jobs: 1 running, 0 queued" in screen.text()
        assert not gate.exists() and "finished (/build" not in screen.text()  # answered during the build
    finally:
        gate.touch()
        typed.close()
    console.join(120)
    assert not console.is_alive()
    assert re.search(r"j\d+ finished \(/build .*\):\n.*succeeded", screen.text())
