"""Settings mistakes through the real CLI: each is one line on stderr naming the TORCHBOT_
variable and what is wrong, with no traceback (issue 13's matrix)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from config.settings import Settings
from tests.support import forked_cli
from tests.support.fakes_slack import FakeSlack

ROOT = Path(__file__).resolve().parents[2]


def torchbot(tmp: Path, args: list[str], **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    base.update(PYTHONPATH=str(ROOT), TORCHBOT_STATE_DB=str(tmp / "state" / "s.db"),
                TORCHBOT_AUDIT_LOG=str(tmp / "audit.log"))
    base.update(env)
    return forked_cli.run(args, env=base, cwd=tmp, timeout=60)


def one_line(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVE = ["serve", "--http", "--host", "127.0.0.1", "--no-schedule"]
SLACK = {"TORCHBOT_SLACK_BOT_TOKEN": "xoxb-test", "TORCHBOT_SLACK_SIGNING_SECRET": "s3cr3t"}


@pytest.mark.parametrize(
    "env, needles",
    [
        ({"TORCHBOT_SLACK_APP_TOKEN": "xoxb-really-a-bot-token"}, ["TORCHBOT_SLACK_APP_TOKEN", "bot token", "xapp-"]),
        ({"TORCHBOT_SLACK_BOT_TOKEN": "xapp-1-A1-2-abc"}, ["TORCHBOT_SLACK_BOT_TOKEN", "app-level token", "xoxb-"]),
        ({"TORCHBOT_ADMINS": "@alice"}, ["TORCHBOT_ADMINS", "'@alice' is not a Slack user ID"]),
        ({"TORCHBOT_ADMINS": "U1;U2"}, ["TORCHBOT_ADMINS", "'U1;U2' is not a Slack user ID"]),
        ({"TORCHBOT_ADMINS": '["U1", "U2"'}, ["TORCHBOT_ADMINS", "not a valid JSON list"]),
        ({"TORCHBOT_ALLOWED_CHANNELS": "#releases"}, ["TORCHBOT_ALLOWED_CHANNELS", "not a Slack channel ID"]),
        ({"TORCHBOT_ANNOUNCE_CHANNEL": "releases"}, ["TORCHBOT_ANNOUNCE_CHANNEL", "not a Slack channel ID"]),
        ({"TORCHBOT_JOB_WORKERS": "0"}, ["TORCHBOT_JOB_WORKERS", "greater than or equal to 1"]),
        (
            {"TORCHBOT_STATE_DB": "postgresql+pg8000://bot:pw@127.0.0.1/db"},
            ["TORCHBOT_STATE_DB", "driver", "postgresql+psycopg"],
        ),
    ],
)
def test_each_settings_mistake_is_one_line(tmp_path, env, needles):
    line = one_line(torchbot(tmp_path, ["release", "status"], **env), *needles)
    assert "pw" not in line and "really-a-bot-token" not in line  # secrets never printed


def test_postgresql_url_without_driver_uses_psycopg_and_says_why_it_cannot_connect(tmp_path):
    line = one_line(torchbot(tmp_path, ["release", "status"],
                             TORCHBOT_STATE_DB=f"postgresql://bot:hunter2@127.0.0.1:{closed_port()}/torchbot"),
                    "TORCHBOT_STATE_DB", "postgresql+psycopg://bot:***@127.0.0.1", "Connection refused")
    assert "hunter2" not in line


def test_plain_path_state_db_is_accepted_and_its_directory_created(tmp_path):
    r = torchbot(tmp_path, ["release", "status"], TORCHBOT_STATE_DB=str(tmp_path / "new" / "dir" / "state.db"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new" / "dir" / "state.db").exists()


def test_a_state_directory_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("")
    one_line(torchbot(tmp_path, ["release", "status"], TORCHBOT_STATE_DB=str(tmp_path / "afile" / "sub" / "s.db")),
             "TORCHBOT_STATE_DB", "cannot create the directory", "Not a directory")


def test_bad_torchbot_toml_is_one_line(tmp_path):
    (tmp_path / "torchbot.toml").write_text('flox_org = "acme"\nadmins = [\n')
    one_line(torchbot(tmp_path, ["catalog"]), "torchbot.toml (TORCHBOT_CONFIG) is not valid TOML")


def test_serve_without_a_bot_token_names_torchbots_variable(tmp_path):
    line = one_line(torchbot(tmp_path, SERVE, TORCHBOT_SLACK_SIGNING_SECRET="s3cr3t"), "TORCHBOT_SLACK_BOT_TOKEN")
    assert " SLACK_BOT_TOKEN" not in line


def test_serve_with_the_port_in_use_is_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        one_line(torchbot(tmp_path, [*SERVE, "--port", str(port)], **SLACK), "TORCHBOT_PORT", f"port {port}", "in use")


@pytest.mark.parametrize("args, env, needles", [
    ([], {"TORCHBOT_HOST": "256.1.1.1"}, ["TORCHBOT_HOST", "cannot listen on '256.1.1.1'"]),
    ([], {"TORCHBOT_HOST": "not a host"}, ["TORCHBOT_HOST", "cannot listen on 'not a host'"]),
    (["--host", "300.0.0.1"], {}, ["--host", "cannot listen on '300.0.0.1'"]),
    (["--port", "-5"], {}, ["--port", "-5 is not a TCP port"]),
    (["--port", "99999"], {}, ["--port", "99999 is not a TCP port"]),
    ([], {"TORCHBOT_PORT": "99999"}, ["TORCHBOT_PORT", "less than or equal to 65535"]),
])
def test_serve_with_a_host_or_port_it_cannot_listen_on_is_one_line(tmp_path, args, env, needles):
    serve = ["serve", "--http", "--no-schedule"]
    r = torchbot(tmp_path, [*serve, *args], **SLACK, **env)
    one_line(r, *needles)
    assert r.returncode == 2


def test_serve_with_slack_unreachable_is_one_line(tmp_path):
    api = f"http://127.0.0.1:{closed_port()}/api/"
    one_line(torchbot(tmp_path, [*SERVE, "--port", "0"], TORCHBOT_SLACK_API_URL=api, **SLACK),
             "Slack is unreachable", "TORCHBOT_SLACK_API_URL", "Connection refused")


def test_serve_with_a_token_slack_refuses_is_one_line(tmp_path):
    with FakeSlack(token="xoxb-the-right-one") as slack:
        one_line(torchbot(tmp_path, [*SERVE, "--port", "0"], TORCHBOT_SLACK_API_URL=slack.url, **SLACK),
                 "TORCHBOT_SLACK_BOT_TOKEN was refused by Slack: invalid_auth")


def test_tokens_are_stripped_of_whitespace():
    s = Settings(slack_bot_token=" xoxb-abc\n", slack_app_token="xapp-def\n", slack_signing_secret=" sec \n",
                 _env_file=None)
    assert s.slack_bot_token.get_secret_value() == "xoxb-abc"
    assert s.slack_app_token.get_secret_value() == "xapp-def"
    assert s.slack_signing_secret.get_secret_value() == "sec"
    assert Settings(state_db="rel/state.db", _env_file=None).state_db.startswith("sqlite:////")


@pytest.mark.parametrize("value, needle", [
    ("inf", "finite number"), ("nan", "finite number"), ("1e300", "less than or equal to 3600")])
def test_an_http_timeout_no_client_can_take_is_one_line(tmp_path, value, needle):
    one_line(torchbot(tmp_path, ["release", "status"], TORCHBOT_HTTP_TIMEOUT=value), "TORCHBOT_HTTP_TIMEOUT", needle)
    one_line(torchbot(tmp_path, [*SERVE, "--port", "0"], TORCHBOT_HTTP_TIMEOUT=value, **SLACK),
             "TORCHBOT_HTTP_TIMEOUT", needle)


def test_an_http_timeout_under_a_second_still_reaches_slack(tmp_path):
    """slack_sdk takes whole seconds: 0.5 rounds up to 1, not down to 0 (which failed every call
    at once, reported as Slack being unreachable)."""
    from tests.support.fixtures_serve import ServeProcess

    with FakeSlack(token="xoxb-test") as slack:
        env = {**SLACK, "TORCHBOT_HTTP_TIMEOUT": "0.5", "TORCHBOT_SLACK_API_URL": slack.url,
               "TORCHBOT_STATE_DB": str(tmp_path / "state" / "s.db"), "TORCHBOT_AUDIT_LOG": str(tmp_path / "a.log")}
        bot = ServeProcess(tmp_path, env, ["--http", "--host", "127.0.0.1", "--port", "0", "--no-schedule"])
        try:
            assert "in HTTP mode" in bot.wait_line(), bot.err
        finally:
            bot.stop()


def test_a_password_in_a_urls_query_or_user_info_is_never_printed(tmp_path):
    db = f"postgresql://bot@127.0.0.1:{closed_port()}/torchbot?sslmode=disable&password=hunter2"
    shown = torchbot(tmp_path, ["paths"], TORCHBOT_STATE_DB=db)
    assert shown.returncode == 0, shown.stderr
    assert "password=***" in shown.stdout and "hunter2" not in shown.stdout + shown.stderr
    line = one_line(torchbot(tmp_path, ["release", "status"], TORCHBOT_STATE_DB=db),
                    "TORCHBOT_STATE_DB", "cannot open", "password=***", "Connection refused")
    assert "hunter2" not in line
    for url in ("ftp://u:secretpw@host/", "ftp://host/logs?password=secretpw"):
        line = one_line(torchbot(tmp_path, ["release", "status"], TORCHBOT_LOG_URL=url),
                        "TORCHBOT_LOG_URL", "the URL is not an http:// or https:// URL")
        assert "secretpw" not in line


def test_an_unreadable_env_file_is_named_not_the_toml_file(tmp_path):
    (tmp_path / ".env").write_bytes(b"TORCHBOT_ADMINS=U1\nNOTE=\xff\xfe\n")
    line = one_line(torchbot(tmp_path, ["release", "status"]), f"{tmp_path / '.env'} (the .env file) cannot be read",
                    "can't decode byte 0xff")
    assert "torchbot.toml" not in line and "TORCHBOT_CONFIG" not in line
    (tmp_path / ".env").write_text("TORCHBOT_ADMINS=U1\n")
    (tmp_path / "torchbot.toml").write_bytes(b'flox_org = "acme\xff"\n')
    line = one_line(torchbot(tmp_path, ["release", "status"]), "torchbot.toml")
    assert ".env" not in line
