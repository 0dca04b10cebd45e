"""`serve --http` serves the read-only /dashboard page beside /slack/events: HTML and CSS, no
JavaScript, nothing secret, served from a snapshot a background thread keeps; to a client that is
not local (judged from the client: a forwarding header from an untrusted peer is not local; from a
trusted proxy the client is its X-Forwarded-For) it asks for TORCHBOT_API_TOKEN, and a local
request must name a loopback host. The page is rendered
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
from tests.support.fixtures_dashboard import GPU_COLUMNS, REAL_BRANCHES, dashboard_world, real_width_facts, settings
from tests.support.png import pixels

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
        assert page.snapshot.wait_ready(120)  # the first snapshot made (a page load never makes one)
        self.page = page
        self.url = f"http://127.0.0.1:{self.server.server_port}{PATH}"

    def get(self, headers: dict | None = None) -> tuple[int, object, str]:
        req = urllib.request.Request(self.url, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.headers, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read().decode()

    def close(self) -> None:
        self.page.snapshot.stop()
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
        assert f"<small>{column}</small>" in html
    assert 'class="tile failed"' in html and 'class="tile built"' in html and 'class="tile running"' in html
    assert "Needs a human (8)" in html and "aa11aa1</code> 213d" not in html  # ages run to today's date
    assert "ghp-test" not in html and "page-secret" not in html and "xoxb" not in html


def test_slack_still_answers_beside_the_page(served):
    req = urllib.request.Request(served.url.replace(PATH, "/slack/events"), data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    assert err.value.code == 401  # unsigned: the Slack guard, not the page


TOKEN = "s3cret-token-" + "x" * 24  # TORCHBOT_API_TOKEN: 32 characters at least
AWAY = {"X-Forwarded-For": "203.0.113.7"}  # a client a proxy forwards: not local


def test_a_client_that_is_not_local_needs_the_api_token(world):
    bare = Served(world, world.slack, "0.0.0.0")
    try:
        status, _, text = bare.get(AWAY)
        assert status == 403 and "TORCHBOT_API_TOKEN" in text  # a proxy on this host does not make it local
        assert bare.get({"Host": "evil.example"})[0] == 421  # a local request naming another host: rebinding
        assert bare.get()[0] == 200  # local, naming 127.0.0.1
    finally:
        bare.close()
    guarded = Served(world, world.slack, "0.0.0.0", api_token=TOKEN)
    try:
        status, headers, _ = guarded.get(AWAY)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert guarded.get({**AWAY, "Authorization": "Bearer wrong"})[0] == 401
        status, _, html = guarded.get({**AWAY, "Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and TOKEN not in html
        basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
        assert guarded.get({**AWAY, "Authorization": f"Basic {basic}"})[0] == 200
    finally:
        guarded.close()


def test_behind_a_trusted_proxy_the_client_is_the_forwarded_address(world):
    proxied = Served(world, world.slack, "127.0.0.1", trusted_proxies=["127.0.0.1"], allowed_hosts=["dash.example"])
    try:
        assert proxied.get({**AWAY, "Host": "dash.example"})[0] == 403  # a remote client, no token set
        assert proxied.get({"X-Forwarded-For": "127.0.0.1", "Host": "dash.example"})[0] == 200  # a local one
        assert proxied.get({**AWAY, "Host": "other.example"})[0] == 421
    finally:
        proxied.close()


def test_a_short_api_token_is_refused_at_start_in_one_line_naming_the_setting():
    from config.errors import ConfigError
    from config.settings import load_settings

    with pytest.raises(ConfigError) as err:
        load_settings(_env_file=None, api_token="short-token")
    assert str(err.value.message).startswith("TORCHBOT_API_TOKEN: it has 11 characters; give at least 32")
    assert "short-token" not in err.value.message and len(err.value.message.splitlines()) == 1


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


def test_at_1400_pixels_the_grid_of_the_real_width_wraps_inside_the_window(tmp_path):
    """Nine real branch names, eleven GPU architectures, cpu and darwin: at 1,400 px nothing is drawn
    in the page's right margin (the grid wraps), where the table of one column per architecture ran off."""
    ci.needs(shutil.which("chromium") is not None, "Debian's chromium is not installed (make chromium)")
    from datetime import UTC, datetime

    from release.dashboard.model import build
    from release.dashboard.page import render

    page = tmp_path / "dashboard.html"
    html = render(build(real_width_facts(), datetime(2026, 11, 28, tzinfo=UTC)))
    page.write_text(html)
    assert all(f"<small>{c}</small>" in html for c in GPU_COLUMNS)
    assert all(f'id="build-pytorch--{name}"' in html for name in REAL_BRANCHES)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"dashboard-1400-{os.getpid()}.png"
    r = subprocess.run(["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        "--window-size=1400,900", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    width, _height, rows = pixels(shot)
    assert width == 1400
    drawn = [x for x in range(width) if any(row[3 * x:3 * x + 3] != b"\xff\xff\xff" for row in rows)]
    assert drawn and max(drawn) < width - 12, f"drawn up to x={max(drawn)}: the page runs off the right edge"
    assert min(drawn) < 40  # the table is there, from the left margin
    print(f"dashboard screenshot at 1400 px: {shot}")
