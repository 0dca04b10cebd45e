"""Recipes and the repository model.

- ``render``  catalog -> file contents of a branch (pure; Jinja2 templates in release/templates)
- ``reader``  a repository's branches, read from git objects -> the branch model
- ``init``    create or bring up to date a repository from the catalog (one commit per branch)
- ``cli``     ``release init`` / ``release render``

May import: config, release.adapters.
"""
