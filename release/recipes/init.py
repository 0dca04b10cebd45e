"""`torchbot release init`: create (or bring up to date) the multi-branch build-pytorch
repository from the catalog. One commit per branch, ``main`` first and the other branches
from it; re-running commits only what changed."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from config.catalog import Branch, Catalog
from config.errors import RefusedError, ValidationError
from release.recipes.render import README, RECIPES_DIR, render_branch

_BRANCH_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class BranchOutcome:
    name: str
    status: str  # created | updated | up to date
    commit: str | None
    files: int  # recipes on the branch after the run
    changed: int  # paths written or deleted by the commit (0 when up to date)

    def to_dict(self) -> dict[str, Any]:
        return {"branch": self.name, "status": self.status, "commit": self.commit, "files": self.files,
                "changed": self.changed}


@dataclass
class InitResult:
    path: str
    created_repository: bool
    branches: list[BranchOutcome] = field(default_factory=list)
    ok: bool = True

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    @property
    def up_to_date(self) -> bool:
        return all(b.status == "up to date" for b in self.branches)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "path": self.path,
            "created_repository": self.created_repository,
            "up_to_date": self.up_to_date,
            "branches": [b.to_dict() for b in self.branches],
        }

    def text(self) -> str:
        if self.up_to_date:
            return f"{self.path} is up to date ({len(self.branches)} branches)."
        head = "Created" if self.created_repository else "Updated"
        lines = [f"{head} the repository at {self.path}:"]
        for b in self.branches:
            if b.status == "up to date":
                lines.append(f"  {b.name}: up to date")
            else:
                lines.append(f"  {b.name}: {b.status} at {b.commit[:7]} ({b.files} recipes, {b.changed} files changed)")
        return "\n".join(lines)


def _is_build_pytorch_repo(repo) -> bool:
    """A git repository torchbot may write to: no commits yet, or a branch with recipes."""
    from release.adapters import git as gitops

    heads = gitops.local_branches(repo)
    if not heads:
        return True
    return any(repo.git.ls_tree(sha, "--", RECIPES_DIR) for sha in heads.values())


def _open_or_create(path: Path):
    """(repo, created) — refuses a non-empty path that is not such a repository."""
    import git

    if path.exists() and not path.is_dir():
        raise RefusedError(f"{path} is a file, not a directory; nothing was written.")
    if path.is_dir() and any(path.iterdir()):
        try:
            repo = git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise RefusedError(
                f"{path} is not empty and is not a git repository; refusing to write there. "
                "Give an empty or new directory, or an existing build-pytorch repository."
            ) from None
        if repo.working_tree_dir and Path(repo.working_tree_dir).resolve() != path.resolve():
            raise RefusedError(f"{path} is inside the git repository {repo.working_tree_dir}, not the root of one.")
        if not _is_build_pytorch_repo(repo):
            raise RefusedError(
                f"{path} is a git repository without build-pytorch recipes ({RECIPES_DIR}/); refusing to write there."
            )
        return repo, False
    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path)
    repo.git.symbolic_ref("HEAD", "refs/heads/main")
    return repo, True


def _order(catalog: Catalog, names: list[str] | None) -> list[str]:
    if names:
        unknown = [n for n in names if n not in catalog.branches]
        if unknown:
            raise ValidationError(
                f"Unknown branch{'es' if len(unknown) > 1 else ''} {', '.join(repr(n) for n in unknown)}. "
                f"Known branches: {', '.join(catalog.branches)}."
            )
        chosen = list(dict.fromkeys(names))
    else:
        chosen = list(catalog.branches)
    return sorted(chosen, key=lambda n: n != "main")  # main first, others keep their order


def init_repository(
    path: str | os.PathLike,
    catalog: Catalog,
    branches: list[str] | None,
    author_name: str,
    author_email: str,
    force: bool = False,
) -> InitResult:
    """``force``: write into a repository whose history torchbot did not make (refused otherwise,
    saying what would be replaced)."""
    names = _order(catalog, branches)
    for n in names:
        if not _BRANCH_NAME_RE.match(n) or ".." in n or n.endswith(".lock"):
            raise ValidationError(f"'{n}' is not a valid branch name.")
    # render everything first: a bad catalog fails before anything is written
    rendered = {n: render_branch(catalog, catalog.branches[n]) for n in names}

    path = Path(path)
    existed = path.exists()
    repo, created = _open_or_create(path)
    if not created and not force:
        _refuse_foreign(repo, path, names, rendered, author_email)
    result = InitResult(str(path), created)
    try:
        _write(repo, path, catalog, names, rendered, created, author_name, author_email, result)
    except BaseException:
        if created:  # leave nothing behind: the directory was ours
            import shutil

            shutil.rmtree(path / ".git" if existed else path, ignore_errors=True)
        raise
    return result


def _write(repo, path, catalog, names, rendered, created, author_name, author_email, result) -> None:
    """Build every branch commit (objects only), then move all refs in one transaction: a
    failure leaves the repository's branches as they were."""
    from release.adapters import git as gitops

    heads = gitops.local_branches(repo)
    current_pins = {} if created else _repository_pins(path, catalog)
    moves: dict[str, tuple[str, str]] = {}
    tips: dict[str, str] = {}
    for name in names:
        files = rendered[name]
        if name in current_pins:  # pins belong to the pin bumps: keep the repository's
            files = render_branch(catalog, _with_pins(catalog, catalog.branches[name], current_pins[name]))
        recipes = sum(1 for p in files if p.startswith(RECIPES_DIR + "/"))
        message = _message(catalog, name, recipes)
        tip = heads.get(name)
        if tip is not None:
            parent = tip
        elif name != "main":
            parent = tips.get("main") or heads.get("main")
        else:
            parent = None
        sha = gitops.make_commit(
            repo, parent, files, message, author_name, author_email,
            replace_prefix=RECIPES_DIR if parent else None,
        )
        if tip is not None and _tree(repo, sha) == _tree(repo, tip):
            result.branches.append(BranchOutcome(name, "up to date", tip, recipes, 0))
            tips[name] = tip
            continue
        tips[name] = sha
        moves[name] = (sha, tip or gitops.ZERO)
        if tip is None:
            result.branches.append(BranchOutcome(name, "created", sha, recipes, len(files)))
        else:
            changed = len(repo.git.diff_tree("--name-only", "-r", tip, sha).splitlines())
            result.branches.append(BranchOutcome(name, "updated", sha, recipes, changed))
    gitops.move_refs(repo, moves)
    if created:
        # our own new repository: check out main (or the first branch) so the tree is visible
        first = "main" if "main" in names else names[0]
        repo.git.symbolic_ref("HEAD", f"refs/heads/{first}")
        repo.git.read_tree("-u", "--reset", "HEAD")


def _refuse_foreign(repo, path: Path, names: list[str], rendered: dict, author_email: str) -> None:
    """Refuse a repository with commits torchbot did not make, naming what init would replace."""
    authors = repo.git.log("--all", "--format=%ae").split()
    foreign = [a for a in authors if a != author_email]
    if not foreign:
        return
    from release.adapters import git as gitops
    from release.adapters.gitrefs import all_branches, remote_only

    every = all_branches(repo)
    only_remote = remote_only(repo, every)
    lines = []
    for name in names:
        tip = every.get(name)
        new_readme = rendered[name].get(README, "")
        if tip is None:
            lines.append(f"{name}: a new branch")
            continue
        old = gitops.read_files(repo, tip, RECIPES_DIR, (README,))
        old_readme = old.get(README, "")
        recipes = sum(1 for p in old if p.startswith(RECIPES_DIR + "/"))
        unrelated = " as a new local branch unrelated to origin/" + name if name in only_remote else ""
        made = sum(1 for p in rendered[name] if p.startswith(RECIPES_DIR + "/"))
        lines.append(f"{name}{unrelated}: {recipes} recipes replaced by {made}, "
                     f"README.md {len(old_readme.splitlines())} -> {len(new_readme.splitlines())} lines")
    raise RefusedError(
        f"{path} already has recipes and history torchbot did not make ({len(foreign)} commits by "
        f"{len(set(foreign))} authors); `release init` would replace: " + "; ".join(lines)
        + ". Nothing was written. Pass --force to write it anyway (bumps, branch create and docs --write work on "
          "the repository as it is)."
    )


def _tree(repo, rev: str) -> str:
    return repo.git.rev_parse(f"{rev}^{{tree}}")


def _repository_pins(path: Path, catalog: Catalog) -> dict[str, Branch]:
    """Branches already in the repository, as read back (their pins are kept on re-runs)."""
    from release.recipes.reader import read_repository

    model = read_repository(path, catalog)
    return {n: b.branch for n, b in model.branches.items() if b.branch is not None}


def _with_pins(catalog: Catalog, branch: Branch, current: Branch) -> Branch:
    """``branch`` with the nixpkgs pins ``current`` uses (per CUDA group where they differ)."""
    by_cuda = {g.version: g.pin or current.pin for g in current.cuda_groups}
    groups = []
    for g in branch.cuda_groups:
        pin = by_cuda.get(g.version, current.pin)
        groups.append(replace(g, pin=None if pin == current.pin else pin))
    out = replace(branch, pin=current.pin, cuda_groups=tuple(groups), variants=())
    return replace(out, variants=catalog.expand(out))


def _message(catalog: Catalog, name: str, recipes: int) -> str:
    b = catalog.branches[name]
    cuda = " / ".join(b.cuda_versions) or "none"
    return (
        f"{name}: PyTorch {b.pytorch}, Python {b.python}, CUDA {cuda}, nixpkgs {b.pin[:7]} "
        f"({recipes} recipes, {README} and manifest generated by torchbot)"
    )
