"""Slack: the bolt app and its listeners (``app``), Block Kit rendering (``blocks``), job
messages and threads (``jobs``), HTTP serving (``http_mode``), Socket Mode (``socket_mode``) and
the ``serve`` start-up checks (``startup``). The only package that knows Slack's formats.
May import ``bot.frontends`` (chat, commands, jobs, incidents), ``bot.engine``, ``config`` and
``release``'s context and state."""
