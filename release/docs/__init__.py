"""README upkeep: the cross-branch tables every branch's README repeats (branch list,
PyTorch/CUDA/Python, variant counts, pins, "variants on other branches"), kept in line with the
repository as the reader models it.

- ``facts``     the facts a row must state, from the reader's model (pure)
- ``tables``    check a README's cross-branch tables and fix them, nothing else (pure)
- ``moved``     another branch's README after a bump moved a branch: only the cells the move changes (pure)
- ``pairing``   build-torchvision branches against the build-pytorch branch they pair with (pure)
- ``commands``  ``docs_check`` / ``docs_write`` for the CLI, chat and the schedule
- ``cli``       ``release docs --check | --write``

May import: config, release.adapters, release.recipes, release.context, release.cli.
"""
