"""`torchbot release branch create NAME --from SOURCE`: a new branch for a PyTorch / CUDA /
Python combination, derived from an existing branch (release.branches.derive: the source's
recipes and README with the branch's facts changed, every other line kept), checked against
nixpkgs (the pin exists, every CUDA package set is there, the recipes build the PyTorch the
name promises), committed without touching the user's checkout, optionally pushed, and
recorded with its repository (config.branch_records), so it shows where that repository is read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from config.branch_records import record_created_branch
from config.catalog import Branch, CudaGroup, vtuple
from config.catalog_data import branch_to_dict
from config.errors import ExternalError, NotFoundError, RefusedError, UsageError, ValidationError
from config.naming import parse_package_name
from config.results import MessageResult
from config.versions import Version
from release.adapters import git as gitops
from release.branches.statements import Facts, Follow, foreign_pins, foreign_refs, pairing, vllm_of
from release.pins.rules import README, RECIPES_DIR, short, validate_rev
from release.recipes.facts import NONE_PIN

MANIFEST = ".flox/env/manifest.toml"


def _check_name(repo, name: str) -> None:
    """Git's ref-name rules and the repository's naming pattern, before anything is made."""
    from release.branches.naming import naming_problem

    problem = naming_problem(name, list(gitops.local_branches(repo)))
    if problem:
        raise UsageError(f"'{name}' is not a valid branch name here: {problem}. Nothing was changed.")


def _default_source(name: str, heads: dict[str, str], catalog) -> str | None:
    """The branch to derive from when --from is not given: one of the same PyTorch line (the
    name's pytorch-X.Y), else the recommended branch, else main."""
    m = re.search(r"pytorch-(\d+\.\d+)", name)
    if m:
        same = sorted(b for b in heads if b.startswith(f"pytorch-{m[1]}-") and b != name)
        if same:
            return same[0]
    for b in (catalog.recommended, "main"):
        if b in heads:
            return b
    return None


_TORCH_SRC_RE = re.compile(r"^(?P<rev>[A-Za-z0-9][A-Za-z0-9._/-]{0,99}),(?P<hash>sha256-[A-Za-z0-9+/]{43}=)$")


def parse_torch_src(value: str | None) -> tuple[str, str] | None:
    if not value:
        return None
    m = _TORCH_SRC_RE.match(value.strip())
    if not m:
        raise ValidationError(
            f"--torch-src '{value}' is not REV,HASH (a PyTorch git tag or commit, and the source's SRI hash "
            "sha256-<44 base64 characters>)."
        )
    return m["rev"], m["hash"]


def _check_request(pytorch: str, python: str | None, cuda: list[str] | None) -> None:
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", pytorch or ""):
        raise ValidationError(f"--pytorch '{pytorch}' is not a PyTorch version (X.Y or X.Y.Z).")
    if python is not None and not re.fullmatch(r"3\.\d{1,2}", python):
        raise ValidationError(f"--python '{python}' is not a Python version (3.NN).")
    for v in cuda or ():
        if not re.fullmatch(r"\d+\.\d+", v):
            raise ValidationError(f"--cuda '{v}' is not a CUDA version (A.B).")


@dataclass
class _Source:
    """The source branch as read: its files, recipes, facts and the repository's docs model."""

    name: str
    tip: str
    files: dict[str, str]
    recipes: list
    python: str
    cuda: list[str]
    doc: object  # its BranchDoc, or None
    docs: dict  # branch -> BranchDoc (the README tables' facts)
    model: object  # the reader's RepoModel
    facts: Facts
    existing: str | None = None  # the tip of a local branch of the new name (an earlier run's?)


@dataclass
class _Derivation:
    req: object  # release.branches.derive.Request
    derived: object  # release.branches.derive.Derived
    plan: tuple[str, str, str]  # torch_plan: (mode, version, how)
    torch_at: str  # nixpkgs' torch at the pin
    follow: Follow
    notes: list[str] = field(default_factory=list)


def create_branch(
    ctx,
    repo_path: Path,
    name: str,
    *,
    pytorch: str,
    python: str | None = None,
    cuda: list[str] | None = None,
    pin: str,
    from_branch: str | None = None,
    gpu: list[str] | None = None,
    cpu: list[str] | None = None,
    push: bool = False,
    torch_src: str | None = None,
    purpose: str | None = None,
    summary: str | None = None,
    dry_run: bool = False,
) -> MessageResult:
    """Derive branch ``name`` from ``from_branch``: its recipes with names, Python, CUDA set and
    pin changed, its README with the branch's facts updated; checked against nixpkgs (the pin
    exists, it has every CUDA package set the recipes use, the recipes build ``pytorch``)."""
    from config.catalog_data import load_catalog

    settings = ctx.settings
    catalog = load_catalog()
    _check_request(pytorch, python, cuda)
    pin = validate_rev(pin)
    src_spec = parse_torch_src(torch_src)
    repo = gitops.open_repo(repo_path)
    source = _read_source(repo, repo_path, name, from_branch, catalog, settings)
    d = _derive(settings, source, catalog, name=name, pytorch=pytorch, python=python, cuda=cuda, pin=pin,
                src_spec=src_spec, gpu=gpu, cpu=cpu)
    new_doc = _new_doc(d, source, summary)
    changes, notes = _changes(d, source, new_doc, summary, settings)
    message = (
        f"{name}: new branch from {source.name}, PyTorch {d.derived.torch}, Python {d.req.python}, "
        f"CUDA {' / '.join(d.req.cuda) or 'none'}, nixpkgs {short(pin)} ({len(d.derived.recipes)} recipes)"
    )
    if dry_run:
        return _dry_run(d, source, changes, repo_path, notes)
    sha = gitops.make_commit(repo, source.tip, changes, message, settings.git_author_name, settings.git_author_email)
    remote = settings.repo_remote
    if source.existing is not None:
        from release.adapters.gitpush import same_work

        if not same_work(repo, remote, name, source.existing, source.tip, sha):
            raise RefusedError(f"Branch '{name}' already exists; choose another name.")
        sha = source.existing  # an earlier run made this very branch: finish what it left
    sha = _on_remote(repo, remote, name, source.tip, sha, push)
    try:
        if source.existing != sha:
            gitops.move_refs(repo, {name: (sha, source.existing or gitops.ZERO)})
    except ExternalError:
        if push:
            gitops.delete_remote_refs(repo, remote, [f"refs/heads/{name}"])
        raise
    branch = _definition(d, source, new_doc, catalog, src_spec, purpose, summary)
    try:
        recorded = _record(repo_path, branch, adopted=source.existing is not None)
    except Exception:
        repo.git.update_ref("-d", f"refs/heads/{name}", sha)
        if push:
            gitops.delete_remote_refs(repo, remote, [f"refs/heads/{name}"])
        raise
    return _result(d, source, branch, sha, push, remote, recorded, notes)


def _recorded(repo_path: Path, name: str) -> bool:
    from config.branch_records import git_dir_of, read_records, repository_key

    return name in read_records().get(repository_key(git_dir_of(repo_path)), {})


def _parent(repo, sha: str) -> str | None:
    try:
        return repo.git.rev_parse(f"{sha}^")
    except Exception:  # noqa: BLE001  a root commit has no parent
        return None


def _record(repo_path: Path, branch, adopted: bool) -> Path:
    """Record the branch; one an earlier run made and recorded already stays as recorded."""
    from config.branch_records import branches_file

    try:
        return record_created_branch(repo_path, branch)
    except RefusedError:
        if not adopted:
            raise
        return branches_file()


def _on_remote(repo, remote: str, name: str, parent: str, sha: str, push: bool) -> str:
    """Push the new branch (when asked) and return its commit. A branch of that name on the
    remote holding this very work (same tree on the same parent: an earlier run killed after
    its push landed) is adopted; any other is refused."""
    from release.adapters import gitpush

    tracked = repo.git.for_each_ref("--format=%(objectname)", f"refs/remotes/{remote}/{name}").strip()
    tip = gitpush.remote_tip(repo, remote, name) if push else tracked or None
    if tip is not None and not gitpush.same_work(repo, remote, name, tip, parent, sha):
        raise RefusedError(f"Branch '{name}' already exists on '{remote}'; choose another name.")
    if push:
        return gitpush.push_or_adopt(repo, remote, {name: (parent, sha)})[name]
    return tip or sha


def _read_source(repo, repo_path: Path, name: str, from_branch: str | None, catalog, settings) -> _Source:
    """The branch to derive from (refusing a taken name or a missing source), its files and the
    reader's facts about it and the other branches."""
    from release.adapters.gitrefs import all_branches
    from release.branches.derive import source_recipes
    from release.docs.facts import docs_from_model, skipped
    from release.recipes.reader import read_repository

    local = gitops.local_branches(repo)
    heads = all_branches(repo, settings.repo_remote)  # a source only on origin/* (a fresh clone) is read there
    if name not in local:  # an existing name is refused below (or adopted: an earlier run's own branch)
        _check_name(repo, name)
    existing = local.get(name)  # an earlier run's own work is adopted (create_branch), anything else refused
    heads.pop(name, None)  # on the remote only: _on_remote adopts this very work or refuses the name
    if from_branch and from_branch not in heads:
        raise NotFoundError(f"No branch '{from_branch}' to start from in {repo_path}.")
    source = from_branch or _default_source(name, heads, catalog)
    if existing is not None and (source is None or _parent(repo, existing) != heads[source]
                                 or _recorded(repo_path, name)):  # recorded: that run finished
        raise RefusedError(f"Branch '{name}' already exists; choose another name.")
    if source is None:
        raise RefusedError(f"No branch to derive '{name}' from in {repo_path}; name one with --from.")
    files = gitops.read_files(repo, heads[source], RECIPES_DIR, (README, MANIFEST))
    recipes = source_recipes(files, catalog)
    if not recipes:
        raise RefusedError(f"Branch '{source}' has no recipes under {RECIPES_DIR}/ to derive '{name}' from.")
    pythons = [r.parsed.python for r in recipes if r.parsed]
    src_python = max(set(pythons), key=pythons.count) if pythons else "3.13"
    src_cuda = sorted({r.parsed.cuda for r in recipes if r.parsed and r.parsed.cuda}, key=vtuple, reverse=True)
    model = read_repository(repo_path, catalog)
    model.branches.pop(name, None)  # the new branch itself, as an earlier run's push left it: derived anew
    docs = {n: d for n, d in docs_from_model(model).items() if not skipped(n, settings.docs_skip_branches)}
    src_doc = docs.get(source)
    if src_doc is not None and set(src_doc.cuda) == set(src_cuda):
        src_cuda = list(src_doc.cuda)  # the source's own CUDA order
    bm = model.branches.get(source)
    pins = tuple(dict.fromkeys([m for r in recipes for m in re.findall(r"archive/([0-9a-f]{40})\.tar\.gz", r.text)]
                               + list(bm.pins if bm is not None else ())))
    facts = Facts(source, src_python, tuple(p for p in pins if p != NONE_PIN),
                  src_doc.pytorch if src_doc else "",
                  (bm.branch.vllm if bm is not None and bm.branch is not None else None) or vllm_of(source))
    return _Source(source, heads[source], files, recipes, src_python, src_cuda, src_doc, docs, model, facts, existing)


def _derive(settings, source: _Source, catalog, *, name, pytorch, python, cuda, pin, src_spec, gpu, cpu) -> _Derivation:
    """The new recipes, checked against nixpkgs: the pin exists, the recipes build ``pytorch``
    there, every CUDA package set they use is there. Refuses before anything is written."""
    from release.adapters.nixpkgs import NixpkgsClient
    from release.branches.derive import Request, derive_recipes, plan_targets, torch_plan

    req = Request(
        name=name, source=source.name, python=python or source.python, cuda=tuple(cuda or source.cuda), pin=pin,
        pytorch=pytorch, torch_src=src_spec, gpu=tuple(gpu) if gpu else None, cpu=tuple(cpu) if cpu else None,
    )
    if not source.facts.pins:
        raise RefusedError(
            f"'{source.name}' is unpinned: its recipes take nixpkgs from `flox build` (callPackage), so there is no "
            f"pin for --pin to move; derive '{name}' from a pinned branch. Nothing was created."
        )
    plan_targets(req, source.recipes, catalog)  # the matrix is checked before nixpkgs is asked anything
    with NixpkgsClient(settings) as client:
        client.resolve(pin)  # RefusedError when nixpkgs has no such commit
        torch_at = client.torch_version(pin)
        plan = torch_plan(req, source.recipes, torch_at, short(pin))
        follow, notes = _follow(source, req, plan[1])
        derived = derive_recipes(req, source.recipes, catalog, plan, follow)
        if not derived.recipes:
            raise RefusedError(f"Nothing of '{source.name}' matches the request; '{name}' would have no recipes.")
        missing = [a for a in sorted(derived.cuda_attrs) if not client.has_cuda_set(pin, a)]
        if missing:
            there = client.cuda_sets(pin)
            raise RefusedError(
                f"Cannot create '{name}': its recipes build with "
                f"{', '.join(f'{a} ({derived.cuda_attrs[a]} recipes)' for a in missing)}, which nixpkgs {short(pin)} "
                f"does not have (it has {', '.join(there) or 'no cudaPackages sets'}). Nothing was created."
            )
    return _Derivation(req, derived, plan, torch_at, follow, notes)


def _follow(source: _Source, req, torch: str) -> tuple[Follow, list[str]]:
    """How the source's statements become the new branch's, and the pairing with other
    repositories (refs the source's texts name; pins other branches' READMEs give them)."""
    new = Facts(req.name, req.python, (req.pin,), torch, vllm_of(req.name))
    refs = set().union(*(foreign_refs(t) for t in source.files.values()))
    known: dict[str, tuple[str, str]] = {}
    for b, bm in source.model.branches.items():
        for ref, p in foreign_pins(bm.readme, bm.pins).items():
            known.setdefault(ref, (p, b))
    pairs, notes = pairing(source.facts, new, refs, known)
    return Follow(source.facts, new, pairs), notes


def _new_doc(d: _Derivation, source: _Source, summary: str | None):
    from release.docs.facts import BranchDoc

    derived, req, src_doc = d.derived, d.req, source.doc
    archs = sorted({a for v in derived.archs.values() for a in v}, key=lambda a: vtuple(a[2:]))
    return BranchDoc(
        name=req.name, pytorch=derived.torch, python=req.python, cuda=req.cuda, variants=len(derived.recipes),
        groups=((req.pin, req.cuda),), archs=tuple(archs), cpu=bool(derived.cpu_isas), darwin=derived.darwin,
        summary=summary or (src_doc.summary if src_doc else ""), cudnn=_cudnn(source, req),
        min_driver=src_doc.min_driver if src_doc else "",
    )


def _cudnn(source: _Source, req) -> str:
    """The new branch's cuDNN, which comes with nixpkgs: the source's when the new branch keeps
    one of its pins; on another pin, what the repository's READMEs say of a branch on exactly
    that pin with the new CUDA versions, else unknown (never the source's, from another nixpkgs)."""
    from release.docs.facts import UNKNOWN

    src_doc = source.doc
    if req.pin in source.facts.pins:
        return src_doc.cudnn if src_doc else ""
    said = {d.cudnn for n, d in source.docs.items()
            if n != source.name and set(d.pins) == {req.pin} and set(req.cuda) <= set(d.cuda)
            and re.match(r"\d", d.cudnn)}
    return said.pop() if len(said) == 1 else UNKNOWN


def _changes(d: _Derivation, source: _Source, new_doc, summary: str | None, settings) -> tuple[dict, list[str]]:
    """The new branch's files (recipes, README, manifest; None: a source recipe it does not
    have) and what the plan says about them."""
    from release.branches.readme import derive_readme

    derived, req = d.derived, d.req
    changes: dict[str, str | None] = dict.fromkeys(derived.removed)
    changes.update(derived.recipes)
    notes = list(derived.notes) + d.notes
    if README in source.files:
        same = len(source.cuda) == len(req.cuda)
        cuda_change = {a: b for a, b in zip(source.cuda, req.cuda, strict=False) if a != b and same}
        changes[README], readme_notes = derive_readme(
            source.files[README], source=source.name, new=new_doc, follow=d.follow, packages=set(derived.packages),
            docs=source.docs, existing=set(source.model.branches), skip=settings.docs_skip_branches, summary=summary,
            cuda_change=cuda_change,
        )
        notes.extend(readme_notes)
    if MANIFEST in source.files:
        changes[MANIFEST] = "".join(d.follow.line(line) for line in source.files[MANIFEST].splitlines(keepends=True))
    return changes, notes


def _definition(d: _Derivation, source: _Source, new_doc, catalog, src_spec, purpose, summary) -> Branch:
    """The catalog record of the new branch (what `ask` answers from)."""
    from config.catalog import Companion, TorchSource, Variant

    derived, req, pin = d.derived, d.req, d.req.pin
    variants = []
    for path in derived.recipes:
        parsed = parse_package_name(Path(path).stem)
        if parsed is None:
            continue
        platform = catalog.variant_platform(parsed.gpu_arch, parsed.cpu_isa, parsed.is_darwin)
        variants.append(Variant(Path(path).stem, parsed.kind, parsed.python, parsed.cuda, parsed.gpu_arch,
                                parsed.cpu_isa, platform, parsed.is_darwin, pin))
    comps = tuple(dict.fromkeys(Companion(v.kind, v.cuda, v.gpu_arch, v.cpu_isa) for v in variants
                                if v.is_companion and v.cuda))
    src_doc = source.doc
    same_line = src_doc is not None and Version(src_doc.pytorch).line == Version(derived.torch).line
    return Branch(
        name=req.name,
        pytorch=derived.torch,
        python=req.python,
        cudnn=new_doc.cudnn or "9.x",
        min_driver=new_doc.min_driver or ("580" if req.cuda and vtuple(max(req.cuda, key=vtuple)) >= (13,) else "550"),
        purpose=purpose or ("python-variant" if same_line else "bleeding-edge"),
        summary=summary or f"PyTorch {derived.torch} + CUDA {' / '.join(req.cuda)} + Python {req.python} "
                           f"(nixpkgs {short(pin)}), derived from {source.name}",
        pin=pin,
        cpu_isas=derived.cpu_isas,
        darwin_mps=derived.darwin,
        cuda_groups=tuple(CudaGroup(v, derived.archs.get(v, ())) for v in req.cuda),
        companions=comps,
        torch_source=_torch_source(source.recipes, derived, d.plan, src_spec, TorchSource),
        vllm=vllm_of(req.name),
        variants=tuple(variants),
    )


def _result(d: _Derivation, source: _Source, branch: Branch, sha: str, push: bool, remote: str, recorded,
            notes: list[str]) -> MessageResult:
    derived, req = d.derived, d.req
    text = (
        f"Created branch {req.name} at {short(sha)} from {source.name}: {len(derived.recipes)} recipes "
        f"(PyTorch {derived.torch}: {derived.torch_how}; Python {req.python}; CUDA {' / '.join(req.cuda) or 'none'}; "
        f"nixpkgs {short(req.pin)})" + (f", pushed to {remote}" if push else "") + f". Recorded in {recorded}."
    )
    if notes:
        text += "\n" + "\n".join(f"- {n}" for n in notes)
    return MessageResult(
        text,
        data={
            "branch": req.name,
            "source": source.name,
            "commit": sha,
            "parent": source.tip,
            "recipes": len(derived.recipes),
            "packages": derived.packages,
            "pytorch": {"version": derived.torch, "how": derived.torch_how, "nixpkgs": d.torch_at},
            "removed": derived.removed,
            "notes": notes,
            "definition": branch_to_dict(branch),
            "pushed": push,
            "recorded_in": str(recorded),
        },
    )


def _dry_run(d: _Derivation, source: _Source, changes: dict, repo_path: Path, notes: list[str]) -> MessageResult:
    """What ``create`` would commit, nothing written; ``result.changes`` holds each file's text
    now (on the source branch) and after, for a ``--diff``."""
    from config.diffs import counts, planned

    derived, req = d.derived, d.req
    files = planned([(f"{req.name} (from {source.name})", source.tip, changes)],
                    lambda names: gitops.read_paths(repo_path, names))
    n_files, n_lines = counts(files)
    text = (f"Would create branch {req.name} from {source.name} ({short(source.tip)}): {len(derived.recipes)} recipes "
            f"(PyTorch {derived.torch}: {derived.torch_how}; Python {req.python}; "
            f"CUDA {' / '.join(req.cuda) or 'none'}; nixpkgs {short(req.pin)}); {n_files} files, {n_lines} lines "
            f"differ from {source.name}.\nDry run: nothing was written.")
    if notes:
        text += "\n" + "\n".join(f"- {n}" for n in notes)
    result = MessageResult(text, data={"branch": req.name, "source": source.name, "parent": source.tip,
                                       "dry_run": True, "recipes": len(derived.recipes), "packages": derived.packages,
                                       "files_changed": sorted(changes), "notes": notes})
    result.changes = files
    return result


def _torch_source(recipes, derived, plan, src_spec, TorchSource):
    mode = plan[0]
    if mode == "new":
        return TorchSource(derived.torch, src_spec[1])
    if mode == "keep":
        return next((r.torch_source for r in recipes if r.torch_source is not None), None)
    return None
