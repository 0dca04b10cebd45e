"""Settings: the TORCHBOT_* names are a contract; secrets never print."""

from pathlib import Path

from config.settings import Settings

CONTRACT = {
    "TORCHBOT_SLACK_BOT_TOKEN": "xoxb-secret-bot",
    "TORCHBOT_SLACK_APP_TOKEN": "xapp-secret-app",
    "TORCHBOT_SLACK_SIGNING_SECRET": "s3cr3t-signing",
    "TORCHBOT_SLACK_API_URL": "http://127.0.0.1:9/api",
    "TORCHBOT_ADMINS": "U1,U2",
    "TORCHBOT_ALLOWED_CHANNELS": "C1 C2",
    "TORCHBOT_ANNOUNCE_CHANNEL": "C9",
    "TORCHBOT_REPO_PATH": "/srv/build-pytorch",
    "TORCHBOT_REPO_REMOTE": "upstream",
    "TORCHBOT_GITHUB_API_URL": "http://127.0.0.1:9/gh/",
    "TORCHBOT_GITHUB_TOKEN": "ghp-secret-token",
    "TORCHBOT_CHANNELS_URL": "http://127.0.0.1:9/channels",
    "TORCHBOT_STATE_DB": "sqlite:////tmp/x.sqlite",
    "TORCHBOT_FLOX_ORG": "acme",
    "TORCHBOT_BUILD_COMMAND": "nix-build .flox/pkgs/{package}.nix -o result-{package}",
    "TORCHBOT_PUBLISH_COMMAND": "true {package}",
}


def test_every_contract_name_is_read(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for k, v in CONTRACT.items():
        monkeypatch.setenv(k, v)
    s = Settings()
    assert s.slack_bot_token.get_secret_value() == "xoxb-secret-bot"
    assert s.slack_app_token.get_secret_value() == "xapp-secret-app"
    assert s.slack_signing_secret.get_secret_value() == "s3cr3t-signing"
    assert s.slack_api_url == "http://127.0.0.1:9/api/"
    assert s.admins == ["U1", "U2"] and s.allowed_channels == ["C1", "C2"]
    assert s.announce_channel == "C9" and s.repo_path == Path("/srv/build-pytorch") and s.repo_remote == "upstream"
    assert s.github_api_url == "http://127.0.0.1:9/gh/" and s.github_token.get_secret_value() == "ghp-secret-token"
    assert s.channels_url == "http://127.0.0.1:9/channels/"
    assert s.state_db == "sqlite:////tmp/x.sqlite" and s.flox_org == "acme"
    assert s.build_command.startswith("nix-build") and s.publish_command == "true {package}"
    dumped = repr(s) + str(s.model_dump())
    for secret in ("xoxb-secret-bot", "xapp-secret-app", "s3cr3t-signing", "ghp-secret-token"):
        assert secret not in dumped


def test_toml_file_and_env_precedence(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "torchbot.toml").write_text('flox_org = "from-toml"\nadmins = ["U7"]\n')
    assert Settings().flox_org == "from-toml" and Settings().admins == ["U7"]
    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "from-env")
    assert Settings().flox_org == "from-env"
    (tmp_path / "other.toml").write_text('flox_org = "other"\n')
    monkeypatch.delenv("TORCHBOT_FLOX_ORG")
    monkeypatch.setenv("TORCHBOT_CONFIG", str(tmp_path / "other.toml"))
    assert Settings().flox_org == "other"
