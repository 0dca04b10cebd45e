"""`serve --http` serves the read-only /dashboard page beside /slack/events: HTML and CSS, no
JavaScript, nothing secret; beyond loopback it asks for TORCHBOT_API_TOKEN. The page is rendered
in Debian's real headless chromium: every fixture branch is in its DOM, and the screenshot is
kept as a test artifact (its path is printed)."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bot.frontends.slack.app import create_app
from bot.frontends.slack.http_mode import make_http_server, start_in_thread
from bot.frontends.web import PATH, dashboard_app, route
from release.context import Context
from tests.support import ci
from tests.support.fakes_slack import FakeSlack
from tests.support.fixtures_dashboard import dashboard_world, settings

ARTIFACTS = Path(os.environ.get("TORCHBOT_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "torchbot-artifacts")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


class Served:
    def __init__(self, w, slack: FakeSlack, host: str, **over):
        s = settings(w.tmp, w.pt, w.tv, w.nix, w.gh, slack_bot_token=slack.token, slack_api_url=slack.url,
                     slack_signing_secret="page-secret", **over)
        self.ctx = Context(s)
        self.app = create_app(self.ctx)
        page = dashboard_app(self.ctx, host)
        self.server = make_http_server(self.app, host, 0, pages=lambda slack_app: route({PATH: page}, slack_app))
        start_in_thread(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_port}{PATH}"

    def get(self, headers: dict | None = None) -> tuple[int, object, str]:
        req = urllib.request.Request(self.url, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.headers, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read().decode()

    def close(self) -> None:
        self.app._torchbot_chat.runner.shutdown()
        self.server.shutdown()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with dashboard_world(tmp_path_factory.mktemp("page")) as w, FakeSlack() as slack:
        w.slack = slack
        yield w


@pytest.fixture(scope="module")
def served(world):
    s = Served(world, world.slack, "127.0.0.1")
    yield s
    s.close()


def test_the_page_shows_every_branch_with_its_grid_and_nothing_secret(served, world):
    status, headers, html = served.get()
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "<script" not in html.lower() and "default-src 'none'" in headers["Content-Security-Policy"]
    for repo, fx in (("build-pytorch", world.pt), ("build-torchvision", world.tv)):
        for name in fx.branch_names:
            assert f'id="{repo}--{name}"' in html
    for column in ("sm75", "sm90", "cpu", "darwin"):
        assert f"<th>{column}</th>" in html
    assert 'class="cell failed"' in html and 'class="cell built"' in html and 'class="cell running"' in html
    assert "Needs a human (7)" in html and "aa11aa1</code> 213d" not in html  # ages run to today's date
    assert "ghp-test" not in html and "page-secret" not in html and "xoxb" not in html


def test_slack_still_answers_beside_the_page(served):
    req = urllib.request.Request(served.url.replace(PATH, "/slack/events"), data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    assert err.value.code == 401  # unsigned: the Slack guard, not the page


def test_beyond_loopback_the_page_needs_the_api_token(world):
    bare = Served(world, world.slack, "0.0.0.0")
    try:
        status, _, text = bare.get()
        assert status == 403 and "TORCHBOT_API_TOKEN" in text
    finally:
        bare.close()
    guarded = Served(world, world.slack, "0.0.0.0", api_token="s3cret-token")
    try:
        status, headers, _ = guarded.get()
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert guarded.get({"Authorization": "Bearer wrong"})[0] == 401
        status, _, html = guarded.get({"Authorization": "Bearer s3cret-token"})
        assert status == 200 and "s3cret-token" not in html
        basic = base64.b64encode(b"anyone:s3cret-token").decode()
        assert guarded.get({"Authorization": f"Basic {basic}"})[0] == 200
    finally:
        guarded.close()


def test_the_page_renders_in_headless_chromium_with_every_branch(served, world, tmp_path):
    ci.needs(shutil.which("chromium") is not None, "Debian's chromium is not installed (make chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "dashboard.png"
    shot.unlink(missing_ok=True)
    base = ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1700,1100"]
    dom = subprocess.run([*base, "--dump-dom", served.url], capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for repo, fx in (("build-pytorch", world.pt), ("build-torchvision", world.tv)):
        for name in fx.branch_names:
            assert f'id="{repo}--{name}"' in dom.stdout, name
    r = subprocess.run([*base, f"--screenshot={shot}", served.url], capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    print(f"dashboard screenshot: {shot}")
