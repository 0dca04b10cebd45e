"""Branch creation for a new PyTorch / CUDA / Python combination.

- ``create``    validate the matrix, render and commit the branch, record it
- ``derive``    the source's recipes transformed into the new branch's (pure)
- ``statements`` what the source's texts say about it, made true of the new branch (pure)
- ``readme``    the derived README (pure)
- ``commands``  the command layer for the CLI and chat
- ``cli``       ``release branch create``

May import: config, release.adapters, release.recipes, release.pins (its pure rules and command helpers).
"""
