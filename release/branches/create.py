"""`torchbot release branch create NAME`: a new branch for a PyTorch / CUDA / Python
combination. Validated against the catalog, rendered by the recipe generator, committed
without touching the user's checkout, optionally pushed, and recorded in the local catalog
file the bot answers from."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from config.errors import CatalogError, ExternalError, RefusedError, ValidationError
from config.results import MessageResult
from config.catalog import Branch, Catalog, CudaGroup, branch_to_dict, local_branches_file, vtuple
from release.adapters import git as gitops
from release.pins.rules import RECIPES_DIR, short, validate_rev


def build_definition(
    catalog: Catalog,
    name: str,
    *,
    pytorch: str,
    python: str,
    cuda: list[str],
    pin: str,
    base: Branch | None = None,
    gpu: list[str] | None = None,
    cpu: list[str] | None = None,
) -> Branch:
    """The Branch a request describes, with its variant matrix; raises ValidationError naming
    every conflict when the matrix is impossible."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", pytorch or ""):
        raise ValidationError(f"--pytorch '{pytorch}' is not a PyTorch version (X.Y or X.Y.Z).")
    if not re.fullmatch(r"3\.\d{1,2}", python or ""):
        raise ValidationError(f"--python '{python}' is not a Python version (3.NN).")
    if not cuda:
        raise ValidationError("Give at least one CUDA version with --cuda A.B[,C.D].")
    pin = validate_rev(pin)
    for v in cuda:
        if not re.fullmatch(r"\d+\.\d+", v):
            raise ValidationError(f"--cuda '{v}' is not a CUDA version (A.B).")
    if base is not None and vtuple(base.pytorch)[:2] == vtuple(pytorch)[:2] and len(vtuple(pytorch)) == 2:
        pytorch = base.pytorch  # X.Y of the base branch: keep its full version
    groups = []
    for v in cuda:
        if gpu:
            archs = tuple(gpu)
        else:
            from_base = next((g.archs for g in base.cuda_groups if g.version == v), None) if base else None
            archs = from_base or tuple(
                a.key for a in catalog.gpu_archs.values() if a.served and a.cuda_ok(v) and catalog.allowed_isas(a)
            )
        groups.append(CudaGroup(v, archs))
    isas = tuple(cpu) if cpu else (base.cpu_isas if base else catalog.all_isas)
    newest = max(cuda, key=vtuple)
    branch = Branch(
        name=name,
        pytorch=pytorch,
        python=python,
        cudnn=base.cudnn if base else "9.x",
        min_driver=(base.min_driver if base else "") or ("580" if vtuple(newest) >= (13,) else "550"),
        purpose="python-variant" if base and vtuple(base.pytorch)[:2] == vtuple(pytorch)[:2] else "bleeding-edge",
        summary=f"PyTorch {pytorch} + CUDA {' / '.join(cuda)} + Python {python} (nixpkgs {short(pin)})",
        pin=pin,
        cpu_isas=isas,
        darwin_mps=base.darwin_mps if base else True,
        cuda_groups=tuple(groups),
        torch_source=base.torch_source if base and base.pytorch == pytorch else None,
    )
    problems = catalog.matrix_conflicts(branch)
    if cpu:
        for g in groups:
            for key in g.archs:
                arch = catalog.gpu_archs.get(key)
                if arch is None or not arch.served:
                    continue
                allowed = catalog.allowed_isas(arch)
                if allowed and not set(allowed) & set(isas):
                    problems.append(
                        f"{arch.upper} builds only for {', '.join(arch.platforms)}: --cpu names none of its ISAs ({', '.join(allowed)})"
                    )
    if problems:
        seen = list(dict.fromkeys(problems))
        raise ValidationError(f"Cannot create branch '{name}': {'; '.join(seen)}.")
    return replace(branch, variants=catalog.expand(branch))


def _check_name(repo, name: str) -> None:
    import git

    try:
        repo.git.check_ref_format("--branch", name)
    except git.GitCommandError:
        raise ValidationError(f"'{name}' is not a valid branch name.") from None


def record_branch(branch: Branch, path: Path | None = None) -> Path:
    """Append a [branch."NAME"] table to the local catalog file."""
    import tomllib

    import tomli_w

    path = path or local_branches_file()
    existing = ""
    if path.is_file():
        existing = path.read_text()
        try:
            if branch.name in tomllib.loads(existing).get("branch", {}):
                raise RefusedError(f"Branch '{branch.name}' is already recorded in {path}.")
        except tomllib.TOMLDecodeError as err:
            raise CatalogError(f"{path} is not valid TOML ({err}); fix it before creating branches.") from None
    table = tomli_w.dumps({"branch": {branch.name: branch_to_dict(branch)}})
    sep = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(sep + table)
    try:
        from config.catalog import load_catalog

        load_catalog.cache_clear()
    except AttributeError:  # pragma: no cover
        pass
    return path


def create_branch(
    ctx,
    repo_path: Path,
    name: str,
    *,
    pytorch: str,
    python: str,
    cuda: list[str],
    pin: str,
    from_branch: str | None = None,
    gpu: list[str] | None = None,
    cpu: list[str] | None = None,
    push: bool = False,
) -> MessageResult:
    settings = ctx.settings
    try:
        catalog = ctx.catalog
    except Exception:
        from config.catalog import load_catalog

        catalog = load_catalog()
    repo = gitops.open_repo(repo_path)
    _check_name(repo, name)
    heads = gitops.local_branches(repo)
    remote = settings.repo_remote
    if name in heads or name in catalog.branches:
        raise RefusedError(f"Branch '{name}' already exists; choose another name.")
    if repo.git.for_each_ref(f"refs/remotes/{remote}/{name}"):
        raise RefusedError(f"Branch '{name}' already exists on '{remote}'; choose another name.")
    if from_branch and from_branch not in heads:
        raise RefusedError(f"No branch '{from_branch}' to start from in {repo_path}.")
    base = catalog.branches.get(from_branch) if from_branch else None
    branch = build_definition(
        catalog, name, pytorch=pytorch, python=python, cuda=cuda, pin=pin, base=base, gpu=gpu, cpu=cpu
    )

    try:
        from release.recipes.render import render_branch
    except ImportError:
        raise ExternalError("The recipe generator (release.recipes.render) is not available; nothing was created.") from None
    full = catalog.with_branches([*catalog.branches.values(), branch], catalog.source)
    files = render_branch(full, branch)

    parent = heads.get(from_branch) if from_branch else (heads.get(catalog.recommended) or heads.get("main"))
    message = (
        f"{name}: new branch, PyTorch {branch.pytorch}, Python {python}, CUDA {' / '.join(cuda)}, "
        f"nixpkgs {short(branch.pin)} ({len(branch.variants)} recipes)"
    )
    sha = gitops.make_commit(
        repo, parent, files, message, settings.git_author_name, settings.git_author_email, replace_prefix=RECIPES_DIR
    )
    if push:
        gitops.push(repo, remote, [f"{sha}:refs/heads/{name}"])
    try:
        gitops.move_refs(repo, {name: (sha, gitops.ZERO)})
    except ExternalError:
        if push:
            gitops.delete_remote_refs(repo, remote, [f"refs/heads/{name}"])
        raise
    try:
        recorded = record_branch(branch)
    except Exception:
        repo.git.update_ref("-d", f"refs/heads/{name}", sha)
        if push:
            gitops.delete_remote_refs(repo, remote, [f"refs/heads/{name}"])
        raise
    text = (
        f"Created branch {name} at {short(sha)}: {len(branch.variants)} recipes "
        f"(PyTorch {branch.pytorch}, Python {python}, CUDA {' / '.join(cuda)}, nixpkgs {short(branch.pin)})"
        + (f", pushed to {remote}" if push else "")
        + f". Recorded in {recorded}."
    )
    return MessageResult(
        text,
        data={
            "branch": name,
            "commit": sha,
            "parent": parent,
            "recipes": len(branch.variants),
            "packages": [v.package for v in branch.variants],
            "definition": branch_to_dict(branch),
            "pushed": push,
            "recorded_in": str(recorded),
        },
    )
