"""Builds of a branch's variants.

- ``plan``      which variants a build covers and in which order (pure)
- ``run``       prepare a plan from git and the state DB; the local backend; backend dispatch
- ``changes``   which variants changed since their last success: derivation paths, else syntax trees
- ``github``    the GitHub Actions backend (dispatch, follow runs into the state DB)
- ``publish_run`` the GitHub run that publishes a merged pull request's builds on their runners
- ``workflow``  the build workflow file torchbot writes into the repository
- ``commands``  the command layer (plan_build) for the CLI and chat
- ``cli``       ``release build|status|workflow``

May import: config, release.adapters, release.state, release.context, release.recipes.
Never release.publishing (which builds on this package).
"""
