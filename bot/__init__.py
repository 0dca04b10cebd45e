"""torchbot's chat side, in two halves.

- ``bot.engine``: the answer engine. Free text and pasted command output -> typed hardware
  facts -> the variant to build, with reasons and warnings. Pure apart from ``engine.host``
  (the adapter that reads this machine's GPUs and CPU). May import ``config`` only.
- ``bot.frontends``: everything that talks to people. The command layer (``commands``) that
  every front end calls, the chat dispatcher and its pending plans and jobs, the console, the
  ``torchbot`` console script (``cli``) and Slack (``slack``: the only place that knows Slack).
  May import ``bot.engine``, ``config`` and the command layers of ``release``.
"""
