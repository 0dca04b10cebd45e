"""The bump guards run against nixpkgs (orchestration of :mod:`release.pins.promise`).

``guard_branch`` asks the nixpkgs client for torch and the CUDA package sets at the new pin
and checks them against the branch's promise; it raises RefusedError (nothing written yet)
or returns notes for the plan.

May import: config, release.recipes, release.pins (pure parts).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from config.errors import TorchbotError
from release.pins.promise import branch_promise, check_cuda, check_torch
from release.pins.rules import cuda_attrs


def torch_source_version(path: str, text: str, catalog) -> str | None:
    """The version a recipe's torch source override builds, or None (nixpkgs' torch): the reader's facts."""
    from release.recipes.facts import read_recipe

    return read_recipe(catalog, PurePosixPath(path).name, text).pytorch


def read_model(repo_path):
    """The reader's model of the repository (cached by commit, recipe facts by blob), read once
    per bump for every branch's guards; None when the reader cannot say (the guards then read
    the recipes themselves)."""
    if repo_path is None:
        return None
    from config.catalog_data import load_catalog
    from release.recipes.reader import read_repository

    try:
        return read_repository(repo_path, load_catalog())
    except TorchbotError:  # no model: the guards fall back to the nixpkgs facts alone
        return None


def _model_overrides(model, branch: str) -> dict[str, str | None]:
    """Recipe path -> the PyTorch its source override builds, as the reader read the branch."""
    bm = model.branches.get(branch) if model is not None else None
    return {f.file: f.pytorch for f in bm.recipes.values()} if bm is not None else {}


def guard_branch(bp, recipes: dict[str, str], readme: str | None, client, new_rev: str, catalog=None,
                 model=None, move=None) -> list[str]:
    """Check branch plan ``bp`` (its moved group) against the branch's promise at ``new_rev``;
    ``model``: the repository as :func:`read_model` read it; ``move``: a deliberate PyTorch move
    (release.pins.moves), checked instead of the promise."""
    from config.catalog_data import load_catalog

    g = bp.edit.group
    entry = catalog.branches.get(bp.branch) if catalog is not None else None
    embedded = load_catalog()
    known = _model_overrides(model, bp.branch)

    def source_of(path: str, text: str) -> str | None:
        if path in known:
            return known[path]
        return torch_source_version(path, text, embedded)

    promise = branch_promise(
        bp.branch,
        {p: recipes[p] for p in g.recipes},
        readme,
        entry.pytorch if entry is not None else None,
        source_of=source_of,
    )
    if promise.pytorch is None and bp.torch_old:
        # nothing declares a version: what the branch builds today is the promise
        from release.pins.promise import Promise

        promise = Promise(bp.branch, bp.torch_old, (f"torch at its pin {g.pin[:7]}",), promise.overrides)
    bp.pytorch_old = promise.pytorch
    bp.native = sum(1 for p in g.recipes if p not in promise.overrides)
    if move is not None:
        from release.pins.moves import check_move

        kept = {p: promise.overrides[p] for p in g.recipes if p in promise.overrides}
        notes = check_move(move, bp.branch, bp.native, kept, bp.torch_new, new_rev)
        bp.pytorch_new = move.version
    else:
        notes = check_torch(promise, g.recipes, new_rev, bp.torch_new)

    def users() -> dict[str, int]:
        out: dict[str, int] = {}
        for p in g.recipes:
            for a in cuda_attrs(recipes[p]):
                out[a] = out.get(a, 0) + 1
        return out

    check_cuda(bp.branch, g.cuda_attrs, users, new_rev, client.has_cuda_set, client.cuda_sets)
    return notes
