"""`torchbot serve` (Slack bot + schedule) and `torchbot chat` (console, no Slack)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the Slack bot (Socket Mode by default) and the release schedule")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--socket", action="store_true", help="Socket Mode (default; no public URL needed)")
    mode.add_argument("--http", action="store_true", help="request-signed HTTP on /slack/events")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--no-schedule", action="store_true", help="do not run the release schedule")
    p.set_defaults(func=_serve)

    c = sub.add_parser("chat", help="the chat commands in this terminal, with no Slack")
    c.set_defaults(func=_chat)


def _serve(args, ctx) -> int:
    from config.errors import UsageError
    from bot.slack_app import create_app, serve_http, serve_socket

    app = create_app(ctx)
    scheduler = None
    if not args.no_schedule:
        try:
            from release.schedule.jobs import start_scheduler
        except ImportError:
            start_scheduler = None
        if start_scheduler is not None:
            scheduler = start_scheduler(ctx)
    try:
        if args.http:
            serve_http(app, args.host, args.port)
        else:
            token = ctx.settings.slack_app_token
            if token is None:
                raise UsageError("Socket Mode needs TORCHBOT_SLACK_APP_TOKEN (an xapp- token); or use --http.")
            serve_socket(app, token.get_secret_value())
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)
    return 0


def _chat(args, ctx) -> int:
    from bot.console import run

    return run(ctx)
