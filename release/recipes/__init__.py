"""Recipes and the repository model.

- ``render``     catalog -> file contents of a branch (pure; Jinja2 templates in release/templates)
- ``nixgrammar`` tree-sitter-nix: the grammar (loaded on the first parse), syntax trees, syntax
                 errors by line (pure)
- ``nixdups``    on the tree: a name bound twice, which Nix's parser refuses (pure)
- ``nixtree``    on the tree: scopes and the literal values of expressions (pure)
- ``nixstrings`` what a string literal evaluates to: escapes, ``''`` indentation (pure)
- ``nixshape``   a recipe without comments and layout, the files it names, whether it uses Flox's
                 arguments (pure; what --changed-only compares when Nix cannot evaluate)
- ``buildchain`` on the tree: the override chain a recipe builds and the package set it starts
                 from (pin, CUDA set, PyTorch source override, patches) (pure)
- ``cpuflags``   on the tree: the compiler flags a build's scripts join, evaluated in the scripts' scope (pure)
- ``facts``      one recipe's text -> what it builds: kind, pin, CUDA, GPU target, ISA, platforms,
                 PyTorch source override, companion's PyTorch (pure)
- ``branchmodel`` a branch's recipe facts + README -> the catalog Branch (pure)
- ``factcache``  recipe facts kept on disk by git blob id
- ``reader``     a repository's branches, read from git objects -> the branch model (cached by commit)
- ``repos``      several repositories (build-pytorch + build-torchvision): kinds, pairing, the catalog
                 (imports the reader; the reader never imports it)
- ``init``       create or bring up to date a repository from the catalog (one commit per branch)
- ``cli``        ``release init`` / ``release render``

May import: config, release.adapters.
"""
