"""`torchbot ask` reads its settings (the Flox org and the repositories) without pydantic-settings
when only the environment can set them, and reads exactly what the full Settings would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.light_settings import light_settings
from config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean(tmp_path, monkeypatch):
    for k in list(os.environ):
        if k.upper().startswith("TORCHBOT_"):
            monkeypatch.delenv(k)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_and_environment_agree_with_settings(clean, monkeypatch):
    assert light_settings().flox_org == Settings().flox_org == "your-org"
    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "ml-infra")
    assert light_settings().flox_org == Settings().flox_org == "ml-infra"
    monkeypatch.delenv("TORCHBOT_FLOX_ORG")
    monkeypatch.setenv("torchbot_flox_org", "lower")  # pydantic-settings ignores the case
    assert light_settings().flox_org == Settings().flox_org == "lower"
    assert light_settings().repo_path is None


@pytest.mark.parametrize("value", ["/srv/build-pytorch", "/srv/build-pytorch, /srv/build-torchvision",
                                   "/srv/build-pytorch,/srv/build-torchvision,", "relative/repo"])
def test_repositories_from_the_environment_agree_with_settings(clean, monkeypatch, value):
    monkeypatch.setenv("TORCHBOT_REPO_PATH", value)
    light, full = light_settings(), Settings()
    assert light is not None
    assert light.repo_path == full.repo_path and light.repositories() == full.repositories()


@pytest.mark.parametrize("setup", ["dotenv", "toml", "config_env", "env_over_dotenv"])
def test_every_source_agrees_with_settings(clean, monkeypatch, setup):
    if setup == "dotenv":
        (clean / ".env").write_text("TORCHBOT_FLOX_ORG=from-dotenv\nTORCHBOT_REPO_PATH=/srv/a,/srv/b\n")
    elif setup == "toml":
        (clean / "torchbot.toml").write_text('flox_org = "from-toml"\nrepo_path = "/srv/a"\ncache_dir = "off"\n')
    elif setup == "config_env":
        (clean / "other.toml").write_text('flox_org = "from-other"\nlocal_branches = "/srv/branches.toml"\n')
        monkeypatch.setenv("TORCHBOT_CONFIG", str(clean / "other.toml"))
    else:
        (clean / ".env").write_text("TORCHBOT_FLOX_ORG=from-dotenv\n")
        (clean / "torchbot.toml").write_text('flox_org = "from-toml"\n')
        monkeypatch.setenv("TORCHBOT_FLOX_ORG", "from-env")
    light, full = light_settings(), Settings()
    assert (light.flox_org, light.repo_path, light.repositories(), light.cache_dir) == \
        (full.flox_org, full.repo_path, full.repositories(), full.cache_dir if setup == "toml" else None)
    if setup == "config_env":
        assert light.local_branches == full.local_branches


TEAM = {  # what a team that runs `serve` exports; `ask` needs none of it but the org and the repositories
    "TORCHBOT_SLACK_BOT_TOKEN": "xoxb-1-2-abc", "TORCHBOT_SLACK_APP_TOKEN": "xapp-1-A1-2-abc",
    "TORCHBOT_GITHUB_TOKEN": "ghp_" + "a" * 36, "TORCHBOT_STATE_DB": "postgresql://bot:pw@db.internal:5432/torchbot",
    "TORCHBOT_FLOX_ORG": "ml-infra", "TORCHBOT_LOG_LEVEL": "INFO", "TORCHBOT_ADMINS": "U0123ABC",
}


def test_a_teams_full_settings_are_read_lightly(clean, monkeypatch):
    for k, v in TEAM.items():
        monkeypatch.setenv(k, v)
    assert light_settings().flox_org == Settings().flox_org == "ml-infra"


def test_a_setting_ask_does_not_read_does_not_stop_it(clean, monkeypatch):
    monkeypatch.setenv("TORCHBOT_STATE_DB", "not a url")  # `serve` and `release` refuse it when they start
    assert light_settings().flox_org == "your-org"


def run_ask(cwd, *code):
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("TORCHBOT_")}
    return subprocess.run(
        [sys.executable, "-c", "\n".join(code)],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("team", [False, True])
def test_ask_runs_without_importing_pydantic(clean, team):
    r = run_ask(
        clean,
        *([f"import os; os.environ.update({TEAM!r})"] if team else []),
        "import sys",
        "from bot.frontends.cli.main import main",
        "assert main(['ask', 'H100 with Graviton3']) == 0",
        "assert not [m for m in sys.modules if m.startswith('pydantic')], 'pydantic imported'",
        "assert 're' in sys.modules and 'slack_bolt' not in sys.modules and 'git' not in sys.modules",
    )
    assert r.returncode == 0, r.stderr
    assert "pytorch-python313-cuda12_9-sm90-armv8_2" in r.stdout


def test_ask_with_a_dotenv_reads_it(clean):
    (clean / ".env").write_text("TORCHBOT_FLOX_ORG=from-dotenv\n")
    r = run_ask(clean, "from bot.frontends.cli.main import main", "main(['ask', 'DGX Spark'])")
    assert r.returncode == 0, r.stderr
    assert "flox install from-dotenv/pytorch-python313-cuda13_1-sm121-armv9" in r.stdout


def test_where_files_live_agrees_with_settings(clean, monkeypatch, tmp_path):
    from config import paths

    monkeypatch.setenv("TORCHBOT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCHBOT_LOCAL_BRANCHES", str(tmp_path / "branches.toml"))
    light, full = light_settings(), Settings()
    assert light.cache_dir == full.cache_dir and light.local_branches == full.local_branches
    for s in (light, full):
        paths.use(s)
        assert paths.cache_dir() == tmp_path / "cache" and paths.branches_file() == tmp_path / "branches.toml"


def test_a_bad_flox_org_is_the_same_line_as_the_full_settings_give(clean, monkeypatch):
    from config.errors import ConfigError
    from config.settings import load_settings

    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "my org")
    with pytest.raises(ConfigError) as light:
        light_settings()
    with pytest.raises(ConfigError) as full:
        load_settings()
    assert light.value.message == full.value.message
    assert light.value.message.startswith("TORCHBOT_FLOX_ORG: 'my org' is not a Flox organisation name")
