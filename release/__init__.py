"""torchbot's release manager: the managed repositories' recipes, pins, branches, builds,
publishing and schedule.

One subpackage per concern, each with its pure core, its orchestration and its command layer
(``commands.py``, shared by the CLI and the chat front ends) and thin CLI wiring (``cli.py``):

- ``recipes``    rendering, reading and initialising repositories (templates in ``templates/``)
- ``pins``       nixpkgs pin bumps
- ``branches``   branch creation
- ``builds``     build plans, the local and GitHub Actions backends, the workflow file
- ``publishing`` publishing to the Flox catalog and release-thread announcements
- ``schedule``   the APScheduler jobs

Beside them: ``adapters`` (one module per external system: git, nixpkgs over HTTP, GitHub,
Slack's Web API, build processes), ``state`` (the state DB) and ``context`` (settings + the
repository model every command gets).

Import direction (checked by tests/test_architecture.py): ``config`` <- ``adapters``/``state``
<- the concern packages <- ``schedule`` <- ``bot``. release/ never imports bot/; adapters and
domain modules never import a command layer or a CLI module.
"""
