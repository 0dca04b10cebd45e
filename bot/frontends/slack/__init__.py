"""Slack: the bolt app (``app``) and its listeners (``listeners``: ack first, then answer), one
answer per delivery (``deliveries``), Slack's escaping of user text (``text``), admins from a
user group (``admins``), Block Kit rendering (``blocks``), job messages and threads (``jobs``),
HTTP serving on waitress (``http_mode``), Socket Mode (``socket_mode``) and the ``serve``
start-up checks (``startup``). The only package that knows Slack's formats.
May import ``bot.frontends`` (chat, commands, jobs, incidents, store), ``bot.engine``,
``config`` and ``release``'s context and state."""
