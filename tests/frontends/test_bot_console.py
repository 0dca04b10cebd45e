"""`torchbot chat`: the same commands and mentions in a terminal, no Slack."""

import io
import subprocess
import sys
from pathlib import Path

from bot.frontends.chat import Chat
from bot.frontends.console import run
from config.settings import Settings
from release.context import Context

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
    assert "user=U0OTHER" in (tmp_path / "audit.log").read_text()
