"""``python -m bot``: the ``torchbot`` console script without installing it."""

from bot.frontends.cli.main import main

raise SystemExit(main())
