"""The repository reader on real git repositories: a round trip through `release init`
returns exactly the catalog, for all eight branches; unusable files are problems, not errors."""

from __future__ import annotations

import pytest

from config.catalog_data import branch_to_dict, load_catalog
from config.errors import CatalogError, RefusedError
from release.adapters.git import commit_changes
from release.recipes.init import init_repository
from release.recipes.reader import read_repository
from release.recipes.repos import catalog_from_repository
from tests.support.fixtures_repo import git, refs, with_origin


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def made(catalog, tmp_path_factory):
    root = tmp_path_factory.mktemp("reader")
    work = root / "work"
    init_repository(work, catalog, None, "torchbot", "bot@example.com")
    with_origin(work, root / "origin.git")
    return root, work


def assert_same(got, want):
    assert branch_to_dict(got) == branch_to_dict(want), want.name
    assert got.variants == want.variants, want.name


def test_round_trip_all_branches(catalog, made):
    _root, work = made
    model = read_repository(work, catalog)
    assert set(model.branches) == set(catalog.branches) and len(model.branches) == 8
    assert model.all_problems == []
    for name, want in catalog.branches.items():
        got = model.branches[name]
        assert_same(got.branch, want)
        assert set(got.pins) == set(want.pins)
    back = catalog_from_repository(work, catalog)
    assert back.source.startswith("repository") and back.recommended == catalog.recommended
    for name, want in catalog.branches.items():
        assert_same(back.branches[name], want)


def test_fresh_clone_reads_remote_tracking_branches(catalog, made):
    root, _work = made
    clone = root / "clone"
    git(root, "clone", "-q", str(root / "origin.git"), str(clone))
    assert git(clone, "branch").strip() == "* main"  # one local branch, seven remote ones
    model = read_repository(clone, catalog)
    assert set(model.branches) == set(catalog.branches)
    for name, want in catalog.branches.items():
        assert_same(model.branches[name].branch, want)


def test_unknown_and_malformed_files_are_reported(catalog, made, tmp_path):
    _root, work = made
    repo = tmp_path / "copy"
    git(tmp_path, "clone", "-q", "--no-local", str(work), str(repo))
    before = refs(repo)
    sha = commit_changes(
        repo, "main",
        {
            ".flox/pkgs/notes.txt": "hello\n",
            ".flox/pkgs/my-own-thing.nix": "{ }: 1\n",
            ".flox/pkgs/pytorch-python313-cpu-sse9.nix": "{ }: 1\n",
            ".flox/pkgs/pytorch-python313-cpu-avx2.nix": "{ pkgs ? import <nixpkgs> {} }: pkgs.hello\n",
            ".flox/pkgs/pytorch-python313-cuda12_8-sm90-avx2.nix": None,
        },
        "foreign files", "t", "t@example.com",
    )
    assert sha and refs(repo)["refs/heads/main"] == sha != before["refs/heads/main"]
    model = read_repository(repo, catalog)
    problems = model.branches["main"].problems
    assert any("notes.txt: not a Nix recipe" in p for p in problems)
    # only unusable recipes are problems, each named by its file
    assert any(p.startswith(".flox/pkgs/my-own-thing.nix: does not build PyTorch") for p in problems)
    assert any(p.startswith(".flox/pkgs/pytorch-python313-cpu-sse9.nix: does not build PyTorch") for p in problems)
    assert any(p.startswith(".flox/pkgs/pytorch-python313-cpu-avx2.nix: does not build PyTorch") and "pkgs.hello" in p
               for p in problems)
    assert len(problems) == 4
    got = model.branches["main"]
    packages = {v.package for v in got.variants}
    assert "pytorch-python313-cpu-avx2" not in packages and "pytorch-python313-cuda12_8-sm90-avx2" not in packages
    assert len(packages) == 60 and got.branch.cpu_isas == ("avx512", "avx512bf16", "avx512vnni", "armv8_2", "armv9")
    assert "main:" in model.text() and "Problems" in model.text()
    assert model.to_dict()["branches"]["main"]["problems"] == problems
    # the other branches are read as before
    assert_same(model.branches["pytorch-2.9-python313"].branch, catalog.branches["pytorch-2.9-python313"])


def test_bad_paths(catalog, tmp_path):
    with pytest.raises(CatalogError, match="does not exist"):
        catalog_from_repository(tmp_path / "nope", catalog)
    (tmp_path / "plain").mkdir()
    with pytest.raises(RefusedError, match="not a git repository"):
        read_repository(tmp_path / "plain", catalog)
    git(tmp_path, "init", "-q", "empty")
    with pytest.raises(CatalogError, match="no branch with recipes"):
        catalog_from_repository(tmp_path / "empty", catalog)


def test_context_answers_from_the_repository(catalog, tmp_path, monkeypatch):
    """With TORCHBOT_REPO_PATH set, the bot's catalog is the repository's real branches."""
    from config.settings import Settings
    from release.context import Context

    work = tmp_path / "two"
    init_repository(work, catalog, ["main", "pytorch-2.8-python312"], "t", "t@example.com")
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(work))
    ctx = Context(Settings())
    assert set(ctx.catalog.branches) == {"main", "pytorch-2.8-python312"}
    assert ctx.catalog.source == f"repository {work}"
    # the embedded recommendation is not in this repository: the best-ranked branch stands in
    assert ctx.catalog.recommended == "pytorch-2.8-python312"
    assert_same(ctx.catalog.branches["main"], catalog.branches["main"])


def test_facts_come_from_the_recipes_when_no_readme_record_or_catalog_branch_helps(catalog, made, tmp_path):
    """The round trip above can lean on the README's torchbot record and the embedded catalog's
    branch of the same pin; without either, packages, CUDA sets, pins, GPU architectures and the
    PyTorch line still come out of the recipes (and the branch name)."""
    import re
    import shutil
    from dataclasses import replace

    from release.recipes.branchmodel import _META_RE

    _, work = made
    repo = tmp_path / "bare-facts"
    shutil.copytree(work, repo)
    for name in catalog.branches:
        readme = git(repo, "show", f"{name}:README.md")
        commit_changes(repo, name, {"README.md": _META_RE.sub("", readme)}, "strip the torchbot record",
                       "t", "t@example.com")
    assert not re.search("torchbot:branch", git(repo, "show", "main:README.md"))
    knows_nothing = replace(catalog, branches={})
    model = read_repository(repo, knows_nothing)
    assert model.all_problems == []
    for name, want in catalog.branches.items():
        got = model.branches[name].branch
        assert {v.package for v in got.variants} == {v.package for v in want.variants}, name
        assert {v.cuda for v in got.variants} == {v.cuda for v in want.variants}, name
        assert {v.gpu_arch for v in got.variants} == {v.gpu_arch for v in want.variants}, name
        assert set(model.branches[name].pins) == set(want.pins), name
        assert got.pytorch.split(".")[:2] == want.pytorch.split(".")[:2], name
