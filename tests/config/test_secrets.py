"""Secrets stay secret: a token or secret with whitespace or a control character inside is refused
at start in one line naming the setting and never the value (also under ``-v``), and debug
logging (httpx, httpcore, slack_sdk) never prints an Authorization header or a token: the filter
on the log handlers masks them, in messages and in tracebacks."""

from __future__ import annotations

import io
import logging
import subprocess

import httpx
import pytest

from config import redact
from tests.config.test_settings_cli import SERVE, one_line, torchbot

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
BOT = "xoxb-1234567890-0987654321-" + "Zx" * 12


@pytest.mark.parametrize("setting, value", [
    ("TORCHBOT_GITHUB_TOKEN", GH + "\nX"),
    ("TORCHBOT_SLACK_BOT_TOKEN", BOT + "\nX"),
    ("TORCHBOT_SLACK_SIGNING_SECRET", "8f742231b10e8888\r\nabcd99yyyzzz85a5"),
    ("TORCHBOT_SLACK_SIGNING_SECRET", "8f742231b10e8888\tabcd99yyyzzz85a5"),
    ("TORCHBOT_API_TOKEN", "a" * 20 + "\x1b" + "b" * 20),
])
def test_a_secret_with_whitespace_or_a_control_character_inside_is_refused_in_one_line(tmp_path, setting, value):
    env = {"TORCHBOT_SLACK_BOT_TOKEN": "xoxb-test", "TORCHBOT_SLACK_SIGNING_SECRET": "s3cr3t", setting: value}
    r = torchbot(tmp_path, ["-v", *SERVE, "--port", "0"], **env)
    line = one_line(r, setting, "inside it", "paste it again on one line")
    for part in value.split():
        if len(part) >= 8:
            assert part not in r.stderr + r.stdout, line
    assert r.returncode == 2


def test_surrounding_whitespace_is_still_only_stripped():
    from config.settings import Settings

    s = Settings(_env_file=None, github_token=f"  {GH}\n", api_token=" " + "k" * 40 + "\n")
    assert s.github_token.get_secret_value() == GH and s.api_token.get_secret_value() == "k" * 40


def _logged(*records: tuple[str, str, tuple]) -> str:
    out = io.StringIO()
    logger = logging.getLogger("redact-test")
    logger.propagate, logger.level = False, logging.DEBUG
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger.handlers = [handler]
    redact.install(logger)
    for name, msg, args in records:
        logging.getLogger(name)  # the shapes httpcore, httpx and slack_sdk log in
        logger.debug(msg, *args)
    return out.getvalue()


def test_debug_lines_of_httpcore_httpx_and_slack_sdk_never_show_a_token():
    text = _logged(
        ("httpcore.http11", "send_request_headers.failed exception=LocalProtocolError(%r)",
         (f"Illegal header value b'Bearer {GH}\\nX'",)),
        ("httpcore.http11", "headers=%s", ([(b"Authorization", f"Bearer {GH}".encode()), (b"Accept", b"x")],)),
        ("slack_sdk.web.base_client", "Sending a request - url: %s, body_params: %s, headers: %s",
         ("https://slack.test/api/auth.test", {"token": BOT}, {"Authorization": f"Bearer {BOT}"})),
        ("torchbot.x", "Authorization: Basic %s", ("dXNlcjpwYXNzd29yZA==",)),
    )
    assert GH not in text and BOT not in text and "dXNlcjpwYXNzd29yZA==" not in text, text
    assert text.count("***") >= 5 and "Illegal header value" in text and "Accept" in text


def test_a_traceback_that_carries_a_configured_secret_is_masked():
    from config.settings import Settings

    secret = "not-a-known-shape-but-configured-9f8e7d"
    redact.remember(Settings(_env_file=None, slack_signing_secret=secret))
    out = io.StringIO()
    logger = logging.getLogger("redact-test-tb")
    logger.propagate = False
    handler = logging.StreamHandler(out)
    logger.handlers = [handler]
    redact.install(logger)
    try:
        raise ValueError(f"bad value {secret!r}")
    except ValueError:
        logger.exception("failed with %s", secret)
    assert secret not in out.getvalue() and "ValueError" in out.getvalue()


def test_verbose_requests_to_github_log_no_authorization(tmp_path):
    """A real ``-v`` run: httpx and httpcore log at DEBUG to stderr; the token is nowhere in it."""
    from tests.config.test_settings_cli import closed_port
    from tests.support.fakes_github import FakeGitHub
    from tests.support.fixtures_realshapes import make_repos

    pt, _tv = make_repos(tmp_path)
    with FakeGitHub(token=GH) as gh:
        r = torchbot(tmp_path, ["-v", "dashboard", "--json"], TORCHBOT_GITHUB_TOKEN=GH, TORCHBOT_CACHE_DIR="off",
                     TORCHBOT_GITHUB_API_URL=gh.url, TORCHBOT_REPO_PATH=str(pt.path),
                     TORCHBOT_GITHUB_REPO="acme/build-pytorch", TORCHBOT_HTTP_RETRIES="1",
                     TORCHBOT_CHANNELS_URL=f"http://127.0.0.1:{closed_port()}/")
        asked = [path for _method, path in gh.requests]
    assert isinstance(r, subprocess.CompletedProcess)
    assert "/user" in asked and "/repos/acme/build-pytorch/pulls" in asked  # it did talk to GitHub with the token
    assert "DEBUG httpcore" in r.stderr or "DEBUG httpx" in r.stderr, r.stderr[-2000:]  # and logged it at DEBUG
    assert GH not in r.stderr + r.stdout


def test_an_httpx_client_logging_at_debug_through_the_filter_shows_no_token():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(redact.RedactSecrets())
    loggers = [logging.getLogger(n) for n in ("httpx", "httpcore")]
    saved = [(lg.level, lg.handlers[:], lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)
        lg.propagate = False
    try:
        with httpx.Client(transport=httpx.MockTransport(lambda req: httpx.Response(200, json={}))) as c:
            c.get("https://api.github.test/user", headers={"Authorization": f"Bearer {GH}"})
        try:
            httpx.Client().get("http://127.0.0.1:9/", headers={"Authorization": f"Bearer {GH}\nX"})
        except (httpx.HTTPError, ValueError) as err:
            logging.getLogger("httpcore").debug("failed: %r", err)
    finally:
        for lg, (level, handlers, propagate) in zip(loggers, saved, strict=True):
            lg.setLevel(level)
            lg.handlers = handlers
            lg.propagate = propagate
    assert GH not in out.getvalue(), out.getvalue()
