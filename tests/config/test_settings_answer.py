"""`torchbot ask` reads only the answer group of the settings (the Flox org, the repositories, the
cache, the branch records) from the one source reader, without pydantic-settings, whatever else a
team sets, and reads exactly what the full Settings would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings import Settings
from config.settings_answer import FIELDS, AnswerSettings, answer_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean(tmp_path, monkeypatch):
    for k in list(os.environ):
        if k.upper().startswith("TORCHBOT_"):
            monkeypatch.delenv(k)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_and_environment_agree_with_settings(clean, monkeypatch):
    assert answer_settings().flox_org == Settings().flox_org == "your-org"
    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "ml-infra")
    assert answer_settings().flox_org == Settings().flox_org == "ml-infra"
    monkeypatch.delenv("TORCHBOT_FLOX_ORG")
    monkeypatch.setenv("torchbot_flox_org", "lower")  # pydantic-settings ignores the case
    assert answer_settings().flox_org == Settings().flox_org == "lower"
    assert answer_settings().repo_path is None


@pytest.mark.parametrize("value", ["/srv/build-pytorch", "/srv/build-pytorch, /srv/build-torchvision",
                                   "/srv/build-pytorch,/srv/build-torchvision,", "relative/repo"])
def test_repositories_from_the_environment_agree_with_settings(clean, monkeypatch, value):
    monkeypatch.setenv("TORCHBOT_REPO_PATH", value)
    light, full = answer_settings(), Settings()
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
    light, full = answer_settings(), Settings()
    assert {name: getattr(light, name) for name in FIELDS} == {name: getattr(full, name) for name in FIELDS}
    assert light.repositories() == full.repositories()


TEAM = {  # what a team that runs `serve` exports; `ask` needs none of it but the org and the repositories
    "TORCHBOT_SLACK_BOT_TOKEN": "xoxb-1-2-abc", "TORCHBOT_SLACK_APP_TOKEN": "xapp-1-A1-2-abc",
    "TORCHBOT_GITHUB_TOKEN": "ghp_" + "a" * 36, "TORCHBOT_STATE_DB": "postgresql://bot:pw@db.internal:5432/torchbot",
    "TORCHBOT_FLOX_ORG": "ml-infra", "TORCHBOT_LOG_LEVEL": "INFO", "TORCHBOT_ADMINS": "U0123ABC",
}


def test_a_teams_full_settings_are_read_lightly(clean, monkeypatch):
    for k, v in TEAM.items():
        monkeypatch.setenv(k, v)
    assert answer_settings().flox_org == Settings().flox_org == "ml-infra"


def test_a_setting_ask_does_not_read_does_not_stop_it(clean, monkeypatch):
    monkeypatch.setenv("TORCHBOT_STATE_DB", "not a url")  # `serve` and `release` refuse it when they start
    assert answer_settings().flox_org == "your-org"


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
    light, full = answer_settings(), Settings()
    assert light.cache_dir == full.cache_dir and light.local_branches == full.local_branches
    for s in (light, full):
        paths.use(s)
        assert paths.cache_dir() == tmp_path / "cache" and paths.branches_file() == tmp_path / "branches.toml"


def test_a_bad_flox_org_is_the_same_line_as_the_full_settings_give(clean, monkeypatch):
    from config.errors import ConfigError
    from config.settings import load_settings

    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "my org")
    with pytest.raises(ConfigError) as light:
        answer_settings()
    with pytest.raises(ConfigError) as full:
        load_settings()
    assert light.value.message == full.value.message
    assert light.value.message.startswith("TORCHBOT_FLOX_ORG: 'my org' is not a Flox organisation name")


# One reader, one place: the full Settings and the answer group come from the same reader and rules

@pytest.mark.parametrize("given", [("env", "dotenv", "toml"), ("dotenv", "toml"), ("toml",), ("env", "toml")])
def test_the_full_settings_take_every_field_from_the_one_reader_in_its_order(clean, monkeypatch, given):
    from config.setting_sources import read

    values = {"env": "from-env", "dotenv": "from-dotenv", "toml": "from-toml"}
    if "env" in given:
        monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_NAME", values["env"])
        monkeypatch.setenv("torchbot_flox_org", values["env"])
    if "dotenv" in given:
        dotenv = values["dotenv"]
        (clean / ".env").write_text(f"TORCHBOT_GIT_AUTHOR_NAME={dotenv}\nTORCHBOT_FLOX_ORG={dotenv}\n")
    if "toml" in given:
        (clean / "torchbot.toml").write_text(f'git_author_name = "{values["toml"]}"\nflox_org = "{values["toml"]}"\n')
    raw, full = read(), Settings()
    assert raw["git_author_name"] == full.git_author_name == values[given[0]]  # a field of no group but the full one
    assert raw["flox_org"] == full.flox_org == answer_settings().flox_org == values[given[0]]


def test_the_answer_group_is_declared_from_its_one_place(clean):
    for name, spec in FIELDS.items():
        field = Settings.model_fields[name]
        assert field.description == spec.description
        assert (field.default_factory() if field.default_factory else field.default) == spec.default_value()
    assert AnswerSettings() == AnswerSettings.from_raw({})  # defaults: the same as the full Settings'
    full = Settings(_env_file=None)
    assert {n: getattr(AnswerSettings(), n) for n in FIELDS} == {n: getattr(full, n) for n in FIELDS}


@pytest.mark.parametrize("toml, line", [
    ("flox_org = 5", "TORCHBOT_FLOX_ORG: expected text, not int 5"),
    ("flox_org = 'a b'", "TORCHBOT_FLOX_ORG: 'a b' is not a Flox organisation name"),
    ("repo_paths = 5", "TORCHBOT_REPO_PATHS: expected paths, comma separated, not 5"),
    ("cache_dir = ['x']", "TORCHBOT_CACHE_DIR: expected text, not list ['x']"),
])
def test_a_wrong_value_in_the_toml_file_is_the_same_line_from_both_views(clean, toml, line):
    from config.errors import ConfigError
    from config.settings import load_settings

    (clean / "torchbot.toml").write_text(toml + "\n")
    with pytest.raises(ConfigError) as light:
        answer_settings()
    with pytest.raises(ConfigError) as full:
        load_settings()
    assert light.value.message == full.value.message and light.value.message.startswith(line)


def test_an_unreadable_settings_file_is_one_line_naming_it_from_both_views(clean):
    from config.errors import ConfigError
    from config.settings import load_settings

    (clean / ".env").write_bytes(b"TORCHBOT_FLOX_ORG=\xff\xfe\n")  # not UTF-8
    with pytest.raises(ConfigError) as light:
        answer_settings()
    with pytest.raises(ConfigError) as full:
        load_settings()
    assert light.value.message == full.value.message
    assert light.value.message.startswith(f"{clean / '.env'} (the .env file) cannot be read")


def test_blank_paths_given_to_the_constructor_are_their_defaults(clean):
    assert Settings(cache_dir=" ", local_branches="").cache_dir == AnswerSettings().cache_dir
    assert Settings(repo_path="").repositories() == AnswerSettings.from_raw({"repo_path": " "}).repositories() == []


def test_the_full_settings_read_the_outside_sources_only_through_the_one_reader(clean, monkeypatch):
    import config.setting_sources
    import config.settings

    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_NAME", "from-env")
    (clean / "torchbot.toml").write_text('flox_org = "from-toml"\n')
    asked = []

    def reader(fields=None, env_file=".env"):
        asked.append(env_file)
        return {"git_author_name": "from-the-reader"}

    monkeypatch.setattr(config.settings, "read", reader)
    monkeypatch.setattr(config.setting_sources, "read", reader)
    full = Settings()
    assert (full.git_author_name, full.flox_org) == ("from-the-reader", "your-org")
    assert answer_settings().flox_org == "your-org"
    assert Settings(_env_file=None).git_author_name == "from-the-reader" and asked == [".env", ".env", None]


def test_the_env_file_is_parsed_once_per_settings(clean, monkeypatch):
    import dotenv
    import pydantic_settings.sources.providers.dotenv as pydantic_dotenv  # where pydantic-settings would read it

    (clean / ".env").write_text("TORCHBOT_FLOX_ORG=from-dotenv\n")
    (clean / "other.env").write_text("TORCHBOT_FLOX_ORG=from-other\n")
    parsed = []
    real = dotenv.dotenv_values
    counted = lambda path, **kw: parsed.append(str(path)) or real(path, **kw)  # noqa: E731
    monkeypatch.setattr(dotenv, "dotenv_values", counted)
    monkeypatch.setattr(pydantic_dotenv, "dotenv_values", counted)
    assert Settings().flox_org == "from-dotenv" and parsed == [".env"]
    assert Settings(_env_file="other.env").flox_org == "from-other" and parsed[1:] == ["other.env"]
    assert Settings(_env_file=None).flox_org == "your-org" and len(parsed) == 2
