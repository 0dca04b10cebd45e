"""Orchestration of a nixpkgs pin bump over a git repository.

``plan_bump`` reads the branches (git, read-only) and asks nixpkgs (HTTP) for the facts the
guards need; it writes nothing. The plan is delivered the one way every bump is
(``release.pins.named.apply_named`` -> ``deliver(mode)``): one commit per pin group without
touching the user's checkout, a push when asked, and only then the local refs in one transaction,
so every failure leaves every ref as it was (or, after a push, says so).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from config.errors import NotFoundError, RefusedError, ValidationError
from config.policy import BUMP_HEADS, is_bump_head, is_vllm_branch
from config.progress import Progress
from release.adapters import git as gitops
from release.adapters.gitrefs import all_branches
from release.pins.guards import guard_branch, read_model
from release.pins.moves import DocsEdit, parse_move
from release.pins.rules import (
    README,
    RECIPES_DIR,
    BranchEdit,
    commit_message,
    find_groups,
    plan_edit,
    select_group,
    validate_rev,
)

log = logging.getLogger(__name__)
COMPARE_URL = "https://github.com/NixOS/nixpkgs/compare/{old}...{new}"


@dataclass
class BumpOptions:
    branches: tuple[str, ...] = ()
    all: bool = False
    rev: str | None = None
    channel: str | None = None
    cuda: str | None = None
    from_pin: str | None = None
    force: bool = False
    push: bool = False
    open_pr: bool = False
    dry_run: bool = False
    with_companions: bool = False  # also bump the paired build-torchvision branches (release.pins.companions)
    pytorch: str | None = None  # --pytorch X.Y.Z: a deliberate PyTorch move (release.pins.moves)
    torch_src: str | None = None  # --torch-src REV,HASH: move to a PyTorch source override


@dataclass
class BranchPlan:
    edit: BranchEdit
    tip: str
    torch_old: str | None = None
    torch_new: str | None = None
    message: str = ""
    sha256: str | None = None  # the new pin's tarball hash (release.pins.tarball)
    notes: list[str] = field(default_factory=list)  # what the guards and the README edit want said
    pytorch_old: str | None = None  # the PyTorch the branch declares before the bump (its promise)
    pytorch_new: str | None = None  # ... after a deliberate move (--pytorch / --torch-src)
    native: int | None = None  # moved recipes that build nixpkgs' torch (no source override) before the bump

    @property
    def branch(self) -> str:
        return self.edit.branch

    def to_dict(self) -> dict:
        g = self.edit.group
        return {
            "branch": self.branch,
            "tip": self.tip,
            "old_pin": g.pin,
            "new_pin": self.edit.new_pin,
            "up_to_date": self.edit.up_to_date,
            "group": g.to_dict(),
            "torch": {"old": self.torch_old, "new": self.torch_new},
            "pytorch": {"old": self.pytorch_old, "new": self.pytorch_new or self.pytorch_old},
            "cuda_sets": list(g.cuda_attrs),
            "files_changed": sorted(self.edit.changes),
            "lines_changed": self.edit.lines_changed,
            "message": self.message,
            "sha256": self.sha256,
            "compare": COMPARE_URL.format(old=g.pin, new=self.edit.new_pin),
        }


@dataclass
class BumpPlanData:
    repo_path: Path
    new_rev: str
    source: str  # "--rev", "channel nixos-unstable"
    branches: list[BranchPlan] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    options: BumpOptions = field(default_factory=BumpOptions)
    companions: list[BumpPlanData] = field(default_factory=list)  # paired build-torchvision bumps
    docs: list[DocsEdit] = field(default_factory=list)  # other branches' README rows about a moved PyTorch

    @property
    def to_commit(self) -> list[BranchPlan]:
        return [b for b in self.branches if b.edit.changes]  # an up-to-date pin may still get its sha256


@dataclass
class BumpOutcome:
    commits: dict[str, str] = field(default_factory=dict)  # branch -> new sha
    pushed: list[str] = field(default_factory=list)
    pull_requests: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def resolve_rev(client, opts: BumpOptions, default_channel: str) -> tuple[str, str]:
    if opts.rev and opts.channel:
        raise ValidationError("Give either --rev or --channel, not both.")
    if opts.rev:
        rev = validate_rev(opts.rev)
        client.resolve(rev)  # the commit must exist in nixpkgs
        return rev, "--rev"
    channel = opts.channel or default_channel
    return client.channel_head(channel), f"channel {channel}"


def _is_vllm(name: str, catalog) -> bool:
    b = catalog.branches.get(name) if catalog is not None else None
    return is_vllm_branch(name, b.vllm if b is not None else None)


def plan_bump(repo_path, opts: BumpOptions, client, *, catalog=None, default_channel="nixos-unstable",
              docs_skip=("*-staging", *BUMP_HEADS), progress: Progress | None = None, remote: str = "origin"
              ) -> BumpPlanData:
    move = parse_move(opts.pytorch, opts.torch_src)
    if not opts.all and not opts.branches:
        raise ValidationError("Name the branches to bump with --branch B (repeatable) or use --all.")
    if opts.open_pr and opts.push:
        raise ValidationError("--open-pr already pushes (to bump/<branch>-<rev>); do not combine it with --push.")
    if move and opts.all:
        raise ValidationError("--pytorch / --torch-src say what the branches given with --branch build; "
                              "not with --all.")
    repo = gitops.open_repo(repo_path)
    heads = all_branches(repo, remote)  # local and origin/* alike, as `catalog` reads them
    if opts.all:
        targets = [b for b in heads if not is_bump_head(b)]
    else:
        targets = list(dict.fromkeys(opts.branches))
        missing = [b for b in targets if b not in heads]
        if missing:
            raise NotFoundError(f"No branch {', '.join(missing)} in {repo_path}. Branches: {', '.join(heads)}.")
    skipped: list[tuple[str, str]] = []
    chosen = _choose_groups(repo, heads, targets, opts, catalog, skipped)
    if move and move.torch_src and not opts.rev and not opts.channel:  # a source move on the current pin
        pins = {group.pin for _, _, _, group in chosen}
        if len(pins) > 1:
            raise ValidationError("--torch-src without --rev keeps each branch's pin; these branches have different "
                                  "pins: give --rev, or one branch at a time.")
        new_rev, source = (pins.pop() if pins else ""), "current pin"
    else:
        new_rev, source = resolve_rev(client, opts, default_channel)
    data = BumpPlanData(Path(repo_path), new_rev, source, skipped=skipped, options=opts)
    texts: dict[str, tuple[dict[str, str], str | None]] = {}
    for name, files, recipes, group in chosen:
        edit = plan_edit(name, group, new_rev, recipes, files.get(README), branches=heads)
        data.branches.append(BranchPlan(edit, heads[name]))
        texts[name] = (recipes, files.get(README))

    # Guards: every branch is checked before anything is written.
    model = read_model(repo_path) if move or any(not bp.edit.up_to_date for bp in data.branches) else None
    progress = progress or Progress(verb="checked")
    progress.begin(len(data.branches))
    for bp in data.branches:
        if bp.edit.up_to_date and not move:
            progress.finished(bp.branch, "up to date")
            continue
        progress.started(bp.branch)
        g = bp.edit.group
        bp.torch_old = client.torch_version(g.pin)
        bp.torch_new = client.torch_version(new_rev)
        recipes, readme = texts[bp.branch]
        bp.notes.extend(guard_branch(bp, recipes, readme, client, new_rev, catalog, model=model, move=move))
        bp.message = commit_message(g.pin, new_rev, bp.torch_new, g.cuda_attrs)
        progress.finished(bp.branch, "checked")
    progress.end()
    if move:
        from release.pins.moves import apply_move

        apply_move(data, move, texts, model, heads, docs_skip)
    return data


def _choose_groups(repo, heads, targets, opts: BumpOptions, catalog, skipped) -> list:
    """(branch, files, recipes, pin group) of every branch the bump moves; branches --all passes
    over go to ``skipped`` with the reason."""
    chosen = []
    for name in targets:
        files = gitops.read_files(repo, heads[name], RECIPES_DIR, (README,))
        recipes = {p: t for p, t in files.items() if p.startswith(RECIPES_DIR + "/") and p.endswith(".nix")}
        groups = find_groups(recipes)
        if not groups:
            if opts.all:
                skipped.append((name, "no pinned recipes"))
                continue
            raise RefusedError(f"Branch '{name}' has no recipe with a nixpkgs pin; nothing to bump.")
        if _is_vllm(name, catalog) and not opts.force:
            if opts.all:
                skipped.append((name, "vLLM-certified: pinned to vLLM's nixpkgs by design (use --force)"))
                continue
            raise RefusedError(
                f"Branch '{name}' is vLLM-certified: its pin is vLLM's nixpkgs by design. "
                "Use --force to bump it anyway. Nothing was changed."
            )
        if opts.all and (opts.cuda or opts.from_pin):
            try:
                group = select_group(name, groups, cuda=opts.cuda, from_pin=opts.from_pin)
            except RefusedError as err:
                if len(groups) > 1 and "carries" in err.message:
                    raise
                skipped.append((name, "no matching pin group"))
                continue
        else:
            group = select_group(name, groups, cuda=opts.cuda, from_pin=opts.from_pin)
        chosen.append((name, files, recipes, group))
    return chosen


def pr_body(bp: BranchPlan, plan: BumpPlanData, settings, client, head: str = "") -> str:
    """The pull request body (release.pins.review): compare link, torch/CUDA commits and
    versions before and after, variants to rebuild, notes on schedule and status. ``client``
    is one NixpkgsClient for every PR of the bump, so branches sharing pins share its cache."""
    from release.pins import review

    return review.render(review.gather(bp, plan, settings, client, head=head))
