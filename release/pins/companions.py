"""Companion bumps: the build-torchvision branch paired with a bumped build-pytorch branch moves
to the same nixpkgs pin in the same plan (``bump-pins --with-companions``).

``plan_companions`` finds, for every build-pytorch branch of the plan, the build-torchvision
branches that pair with it (the reader's pairing: same PyTorch major.minor, then Python, shared
pins and CUDA versions) and plans their bump with the same guards and README scoping (one
:func:`release.pins.bump.plan_bump` per companion on the torchvision repository). The moved
group is the one on the pytorch group's old pin, else the only one, else the one of ``--cuda``.

``apply_with_companions`` applies the build-pytorch plan, then each companion's (its own commit in
its own repository); a companion that fails puts the build-pytorch branches back where they
were (local refs; a push already made is reported). Dirty checkouts in either repository are
refused before anything moves.

May import: config, release.adapters, release.recipes, release.pins.
"""

from __future__ import annotations

from pathlib import Path

from config.errors import ExternalError, RefusedError, UsageError
from release.adapters import git as gitops
from release.adapters import gitcheckouts
from release.pins.rules import README, RECIPES_DIR, find_groups


def paired_branches(pytorch_repo: Path, vision_model) -> dict[str, list[str]]:
    """build-pytorch branch -> the build-torchvision branches that pair with it (the reader's pairing)."""
    from config.catalog_data import load_catalog
    from release.recipes.reader import read_repository
    from release.recipes.repos import pair

    pt = read_repository(pytorch_repo, load_catalog())
    candidates = [bm.branch for bm in pt.branches.values() if bm.branch is not None]
    out: dict[str, list[str]] = {}
    for name, bm in vision_model.branches.items():
        if bm.branch is None:
            continue
        best, _how = pair(bm.branch, candidates)
        if best is not None:
            out.setdefault(best.name, []).append(name)
    return out


def plan_companions(data, client, ctx, default_channel: str) -> list:
    from release.context import torchvision_model
    from release.pins.bump import BumpOptions, plan_bump

    model = torchvision_model(ctx)
    if model is None:
        raise UsageError(
            "--with-companions needs the build-torchvision repository: add its path to TORCHBOT_REPO_PATH "
            "(comma-separated, after the build-pytorch one)."
        )
    vision = Path(model.path)
    opts = data.options
    paired = paired_branches(data.repo_path, model)
    repo = gitops.open_repo(vision)
    from release.adapters.gitrefs import all_branches

    remote = ctx.settings.repo_remote
    heads = all_branches(repo, remote)  # a fresh clone's origin/* too: plan_bump puts those on new local branches
    plans = []
    for bp in data.branches:
        if bp.edit.up_to_date and not bp.pytorch_new:
            continue
        for tvb in paired.get(bp.branch, []):
            if tvb not in heads:
                continue
            files = gitops.read_files(repo, heads[tvb], RECIPES_DIR, (README,))
            recipes = {p: t for p, t in files.items() if p.startswith(RECIPES_DIR + "/") and p.endswith(".nix")}
            groups = find_groups(recipes)
            old = bp.edit.group.pin
            same = [g for g in groups if g.pin == old]
            if same:
                from_pin, cuda = old, None
            elif len(groups) == 1:
                from_pin, cuda = groups[0].pin, None
            elif opts.cuda:
                from_pin, cuda = None, opts.cuda
            else:
                listing = "; ".join(g.describe() for g in groups)
                raise RefusedError(
                    f"Companion '{tvb}' of '{bp.branch}' has several pins and none is {old[:7]}: {listing}. "
                    "Choose its group with --cuda A.B. Nothing was changed."
                )
            keep_pin = data.source == "current pin"  # a source move on each branch's own pin
            copts = BumpOptions(branches=(tvb,), rev=None if keep_pin else data.new_rev, cuda=cuda,
                                from_pin=from_pin, force=True, push=opts.push,
                                dry_run=opts.dry_run, pytorch=opts.pytorch, torch_src=opts.torch_src)
            cplan = plan_bump(vision, copts, client, catalog=None, default_channel=default_channel, remote=remote)
            cplan.source = f"{data.source}, companion of {bp.branch}"
            plans.append(cplan)
    if not plans:
        raise RefusedError(
            f"No build-torchvision branch in {vision} pairs with {', '.join(b.branch for b in data.branches)}; "
            "nothing to bump with --with-companions. Nothing was changed."
        )
    return plans


def apply_with_companions(data, settings):
    """Apply the build-pytorch plan and its companions' (see the module docstring)."""
    from release.pins.named import apply_named as apply_bump  # each repository writes its own record rows

    opts = data.options
    if opts.dry_run:
        return apply_bump(data, settings), [apply_bump(c, settings) for c in data.companions]
    # refuse dirty checkouts in every repository before anything moves
    for plan in [data, *data.companions]:
        repo = gitops.open_repo(plan.repo_path)
        gitcheckouts.check_checkouts(repo, {bp.branch: (bp.tip, bp.tip) for bp in plan.to_commit})
    outcome = apply_bump(data, settings)
    done = []
    try:
        for c in data.companions:
            done.append(apply_bump(c, settings))
    except Exception as err:  # noqa: BLE001  whatever failed, the build-pytorch branches go back first
        moved = {b: (old_tip, sha) for b, sha in outcome.commits.items()
                 for old_tip in [next(bp.tip for bp in data.branches if bp.branch == b)]}
        note = ""
        if moved and not opts.open_pr:
            repo = gitops.open_repo(data.repo_path)
            try:
                gitcheckouts.advance_branches(repo, moved)
                note = " The build-pytorch branches were put back where they were."
            except ExternalError as back:
                note = f" The build-pytorch branches could not be put back ({back.message})."
            if outcome.pushed:
                note += f" They had been pushed to '{settings.repo_remote}': reconcile the remote."
        message = getattr(err, "message", str(err))
        raise ExternalError(f"The companion bump failed: {message}.{note}") from None
    return outcome, done
