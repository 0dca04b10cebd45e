"""The ``torchbot`` console script: ``main`` (argument parsing, settings, errors as one line),
``ask`` (ask, catalog), ``serve`` (serve, chat). ``release`` registers its own subcommands.
Modules here import heavy libraries only inside their handlers so ``torchbot ask`` starts fast.
May import any of ``bot.frontends``, ``bot.engine``, ``config`` and ``release``."""
