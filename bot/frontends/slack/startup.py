"""`torchbot serve` start-up checks: every mistake a sentence naming its TORCHBOT_ variable
(missing tokens, the state DB, a port in use, Slack unreachable or refusing the token), and
the one line an operator reads once the bot is up: connected as which bot, to which
workspace, in which mode."""

from __future__ import annotations

import errno
import socket

from config.errors import ConfigError
from config.setting_values import whole_seconds


def require_tokens(settings, mode: str) -> None:
    if settings.slack_bot_token is None:
        raise ConfigError("TORCHBOT_SLACK_BOT_TOKEN is not set: the bot's xoxb- token "
                          "(OAuth & Permissions > Bot User OAuth Token).")
    if mode == "socket" and settings.slack_app_token is None:
        raise ConfigError("TORCHBOT_SLACK_APP_TOKEN is not set: Socket Mode needs an xapp- app-level token with "
                          "connections:write (Basic Information > App-Level Tokens); or run `torchbot serve --http`.")
    if mode == "http" and settings.slack_signing_secret is None:
        raise ConfigError("TORCHBOT_SLACK_SIGNING_SECRET is not set: HTTP mode checks every request against it "
                          "(Basic Information > Signing Secret).")


def listen_address(host: str, port: int, host_from: str = "TORCHBOT_HOST",
                   port_from: str = "TORCHBOT_PORT") -> None:
    """A ConfigError naming the setting (or option) when ``host``/``port`` cannot be listened on
    whatever else runs here: a port outside 0-65535 (0: any free port), a host that is not an
    address or a name that resolves (waitress would say only "Invalid host/port specified")."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"{port_from}: {port} is not a TCP port (1-65535, or 0 for any free port).")
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as err:  # socket.gaierror; an IDNA-invalid name
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err) or "not an address"
        raise ConfigError(f"{host_from}: cannot listen on {host!r}: {reason} "
                          "(an IP address of this host, 0.0.0.0 for all, or a name that resolves).") from None


def bind_error(err: OSError, host: str, port: int) -> ConfigError:
    if err.errno == errno.EADDRINUSE:
        return ConfigError(f"TORCHBOT_PORT: port {port} on {host} is in use (another torchbot?); "
                           "choose another with TORCHBOT_PORT or --port.")
    if err.errno in (errno.EADDRNOTAVAIL, -2, -3, -5):  # not an address of this host / unknown name
        return ConfigError(f"TORCHBOT_HOST: cannot listen on {host}: {err.strerror or err}.")
    return ConfigError(f"TORCHBOT_PORT: cannot listen on {host}:{port}: {err.strerror or err}.")


def slack_error(err: Exception, settings, token_var: str = "TORCHBOT_SLACK_BOT_TOKEN") -> ConfigError:
    from slack_sdk.errors import SlackApiError

    if isinstance(err, SlackApiError):
        code = err.response.get("error") if hasattr(err.response, "get") else None
        status = getattr(err.response, "status_code", 200)
        if status == 200 and code:
            return ConfigError(f"{token_var} was refused by Slack: {code}.")
        return ConfigError(f"Slack at {settings.slack_api_url} (TORCHBOT_SLACK_API_URL) answered HTTP {status}"
                           f"{': ' + code if code else ''}; try again later.")
    reason = getattr(err, "reason", None) or err
    return ConfigError(f"Slack is unreachable at {settings.slack_api_url} (TORCHBOT_SLACK_API_URL): "
                       f"{' '.join(str(reason).split()) or type(err).__name__}.")


def identity(settings) -> dict:
    """auth.test: who the bot is and in which workspace (a ConfigError when it cannot say;
    slack_sdk's own error log lines are kept out of the way of that one line)."""
    import logging

    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError, SlackClientError

    quiet = logging.getLogger("torchbot.startup.slack")
    quiet.setLevel(logging.CRITICAL)
    quiet.propagate = False
    client = WebClient(token=settings.slack_bot_token.get_secret_value(), base_url=settings.slack_api_url,
                       timeout=whole_seconds(settings.http_timeout), logger=quiet)
    try:
        resp = client.auth_test()
    except (SlackApiError, SlackClientError, OSError) as err:
        raise slack_error(err, settings) from None
    return {**{k: resp.get(k) or "?" for k in ("user", "user_id", "team", "team_id", "url")},
            "enterprise_id": resp.get("enterprise_id") or None}


def connected_line(who: dict, mode: str) -> str:
    return (f"torchbot: connected as @{who['user']} ({who['user_id']}) to workspace {who['team']} "
            f"({who['team_id']}) in {mode}")
