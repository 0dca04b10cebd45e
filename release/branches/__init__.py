"""Branch creation for a new PyTorch / CUDA / Python combination.

- ``create``    validate the matrix, render and commit the branch, record it
- ``commands``  the command layer for the CLI and chat
- ``cli``       ``release branch create``

May import: config, release.adapters, release.recipes, release.pins (its pure rules and command helpers).
"""
