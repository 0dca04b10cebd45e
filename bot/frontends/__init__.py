"""The front ends: every way a person reaches torchbot, all through one command layer.

- ``commands``: the command layer (ask, catalog, ...): takes a ``Context``, returns result
  objects (``config/results.py``, ``bot.engine.answer``). CLI, console and Slack call it.
- ``chat``: the chat dispatcher (slash commands, mentions, who may run what, pending plans
  as data in ``pending``, the audit line), ``jobs`` (the bounded job runner for slow work),
  ``incidents`` (unexpected errors reported under an id), ``store`` (the state DB within a
  deadline: a store that does not answer is said plainly).
- ``console``: ``torchbot chat``, the chat commands in a terminal.
- ``cli``: the ``torchbot`` console script and its subcommands.
- ``slack``: the Slack app (listeners, Block Kit rendering, HTTP and Socket Mode serving,
  job messages, start-up checks): the only place that knows Slack.

Import rule: may import ``bot.engine``, ``config`` and ``release``'s command layers, context
and state; ``release`` and ``config`` never import ``bot``. Within: ``commands`` imports no
other front end; ``slack`` and ``console`` build on ``chat``; ``cli`` may import any of them.
"""
