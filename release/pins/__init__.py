"""nixpkgs pin bumps.

- ``rules``     pins in recipe texts, groups by pin, the bump plan and edits (pure)
- ``bump``      plan a bump (git + nixpkgs facts) and apply it (commits, push, PR)
- ``commands``  the command layer (Plan / BumpResult) for the CLI and chat
- ``cli``       ``release bump-pins``

May import: config, release.adapters, release.recipes, release.context.
"""
