"""`torchbot serve` (Slack bot + schedule) and `torchbot chat` (console, no Slack).

``serve`` checks everything it can before it answers anyone (bot/frontends/slack/startup.py): tokens, the
state DB, the port, Slack itself; resolves build runs a stopped torchbot left; then prints one
line saying which bot it is connected as, to which workspace, in which mode, and how local
builds run here (flox, else nix-build, or neither)."""

from __future__ import annotations

SERVE_EXAMPLES = """examples:
  torchbot serve                               Socket Mode (no public URL), with the release schedule
  torchbot serve --http --port 3000            request-signed HTTP on /slack/events (and /dashboard)
  torchbot serve --no-schedule                 answer chat only; another replica runs the schedule"""
CHAT_EXAMPLES = """examples:
  torchbot chat                                then: /pins main, @torchbot why is main held?
  torchbot chat --as U012ADMIN                 as that Slack user (an admin if in TORCHBOT_ADMINS)"""


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the Slack bot (Socket Mode by default) and the release schedule",
                       epilog=SERVE_EXAMPLES)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--socket", action="store_true", help="Socket Mode (default; no public URL needed)")
    mode.add_argument("--http", action="store_true", help="request-signed HTTP on /slack/events")
    p.add_argument("--host", default=None, help="HTTP mode: address to listen on (default TORCHBOT_HOST, 0.0.0.0)")
    p.add_argument("--port", type=int, default=None, help="HTTP mode: port (default TORCHBOT_PORT, 3000)")
    p.add_argument("--no-schedule", action="store_true", help="do not run the release schedule")
    p.set_defaults(func=_serve)

    c = sub.add_parser("chat", help="the chat commands in this terminal, with no Slack", epilog=CHAT_EXAMPLES)
    c.add_argument("--as", dest="user", default="console", metavar="USER",
                   help="act as this Slack user ID (admin if it is in TORCHBOT_ADMINS); default: console")
    c.set_defaults(func=_chat)


def _say(line: str) -> None:
    print(line, flush=True)


def _serve(args, ctx) -> int:
    from bot.frontends.slack import startup
    from bot.frontends.slack.app import create_app
    from release.state import state_for

    s = ctx.settings
    mode = "http" if args.http else "socket"
    host, port = args.host or s.host, s.port if args.port is None else args.port
    if mode == "http":
        startup.listen_address(host, port, "--host" if args.host else "TORCHBOT_HOST",
                               "--port" if args.port is not None else "TORCHBOT_PORT")
    startup.require_tokens(s, mode)
    state_for(ctx)  # the state DB opens (or a one-line ConfigError)
    app = create_app(ctx)
    server = None
    if mode == "http":
        from bot.frontends.slack.http_mode import make_http_server
        from bot.frontends.web import PATH, dashboard_app, proxy_check, route

        page = dashboard_app(ctx, host)  # its snapshot gathers on a thread of its own, from serving on
        try:
            server = make_http_server(app, host, port, pages=lambda slack: route({PATH: page}, slack),
                                      trusted=proxy_check(s))
        except OSError as err:
            raise startup.bind_error(err, host, port) from None
    who = startup.identity(s)
    app._torchbot_workspace.learn(who)  # requests from any other workspace are refused
    said = _builds_at_start(app, ctx)
    telling = _tell_ended_runs(app, ctx)
    scheduler = None
    if not args.no_schedule:  # the schedule runs in one process of those sharing the state DB
        from release.schedule.leader import Leader

        scheduler = Leader(ctx).start()
    try:
        if server is not None:
            _say(startup.connected_line(who, f"HTTP mode, listening on http://{host}:{server.server_port}/slack/events "
                                             "(and /dashboard)") + said)
            page.snapshot.start()
            server.serve_forever()
        else:
            _serve_socket(app, s, who, said)
    finally:
        telling.set()
        if scheduler is not None:
            scheduler.shutdown()
        app._torchbot_chat.runner.shutdown()
    return 0


def _builds_at_start(app, ctx) -> str:
    """Before answering anyone: resolve the build runs a stopped torchbot left (their Slack
    messages say what became of them and how to resume; the log says it too). Returns the end
    of the start line: how local builds run here."""
    import logging

    from bot.frontends.slack.jobs import report_restarts
    from release.builds.recover import reconcile
    from release.builds.run import local_tool

    resolved = reconcile(ctx)
    told = report_restarts(app.client, ctx)
    if resolved or told:
        logging.getLogger("torchbot.builds").warning(
            "%d build run(s) a stopped torchbot left were resolved; %d job message(s) updated", len(resolved), told)
    return f"; {local_tool(ctx.settings)}"


def _tell_ended_runs(app, ctx):
    """While serving: every TORCHBOT_GITHUB_POLL_SECONDS, edit the job message of each build run
    that ended with no process left following it for its message (a GitHub run dispatched
    before a restart ends hours later, polled by the schedule). Returns the Event that stops it."""
    import logging
    import threading

    from bot.frontends.slack.jobs import report_restarts

    stop = threading.Event()
    every = max(1.0, float(ctx.settings.github_poll_seconds))

    def loop() -> None:
        while not stop.wait(every):
            try:
                report_restarts(app.client, ctx)
            except Exception as err:  # noqa: BLE001  (a thread's top level: try again next time)
                logging.getLogger("torchbot.builds").warning("telling ended build runs: %s", err)

    threading.Thread(target=loop, name="torchbot-tell-ended", daemon=True).start()
    return stop


def _serve_socket(app, settings, who, said="") -> None:
    import logging
    import threading

    from slack_sdk.errors import SlackApiError, SlackClientError

    from bot.frontends.slack import startup
    from bot.frontends.slack.socket_mode import SocketHandler
    from config.errors import ConfigError

    log = logging.getLogger("torchbot.slack")

    def on_hello(n: int) -> None:
        if n > 1:
            log.warning("Socket Mode connection %d is up (reconnected)", n)

    handler = SocketHandler(app, settings.slack_app_token.get_secret_value(), settings.socket_ping_seconds, on_hello)
    try:
        handler.connect()
    except (SlackApiError, SlackClientError, OSError) as err:
        handler.client.close()
        raise startup.slack_error(err, settings, "TORCHBOT_SLACK_APP_TOKEN") from None
    if not handler.wait_hello(30):
        handler.client.close()
        raise ConfigError("Socket Mode did not connect within 30 s: Slack gave a WebSocket URL but never said "
                          "hello (a proxy or firewall in the way?); or use `torchbot serve --http`.")
    _say(startup.connected_line(who, f"Socket Mode (pings every {settings.socket_ping_seconds:g} s)") + said)
    try:
        threading.Event().wait()
    finally:
        handler.client.close()


def _chat(args, ctx) -> int:
    from bot.frontends.console import run

    return run(ctx, user=args.user)
