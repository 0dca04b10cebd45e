"""nixpkgs pin bumps.

- ``rules``     pins in recipe texts, groups by pin, the bump plan and edits (pure)
- ``hashes``    the sha256 of a recipe's fetchTarball: read and write it (pure)
- ``tarball``   a bump records the new pin's tarball sha256 (nix-prefetch-url) in its recipes
- ``bump``      plan a bump of named branches (git + nixpkgs facts); it writes nothing
- ``sweep``     plan every branch's bump against its tracked channel (the weekly bump)
- ``deliver``   the one delivery of every bump: plan -> deliver(mode) (pr, push, local)
- ``named``     a bump of named branches (a revision, a PyTorch move, companions) through ``deliver``, all or none
- ``recorded``  the bump stage's rows in the release record, one per bumped pin group
- ``override``  a PyTorch source override written the way the real 2.10 recipes carry one (pure)
- ``moves``     deliberate PyTorch moves: --pytorch X.Y.Z and --torch-src REV,HASH, the declared
                versions they update (the branch's README, other branches' README rows)
- ``review``    the body of a bump PR: torch/CUDA commits and versions, rebuilds, notes
- ``commands``  the command layer (Plan / BumpResult) for the CLI and chat
- ``cli``       ``release bump-pins``

May import: config, release.adapters, release.state (the bump stage writes its outcomes into the
release record; people's decisions about bump PRs), release.recipes, release.context, release.docs
(the README tables' checks, for the rows a PyTorch move changes). Never the dashboard or the
schedule (they read what it wrote).
"""
