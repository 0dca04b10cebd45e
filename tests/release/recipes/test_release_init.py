"""`torchbot release init` and commit_changes on real git repositories."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest

from bot.frontends.cli.main import main as cli
from config.catalog_data import load_catalog
from config.errors import RefusedError, ValidationError
from release.adapters.git import commit_changes
from release.recipes.init import init_repository
from release.recipes.render import MANIFEST, README, recipe_path, render_branch
from tests.support.fixtures_repo import git, refs, with_origin


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture
def author(monkeypatch):
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_NAME", "torchbot")
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_EMAIL", "bot@example.com")
    monkeypatch.delenv("TORCHBOT_REPO_PATH", raising=False)


def tree(repo, rev) -> set[str]:
    return set(git(repo, "ls-tree", "-r", "--name-only", rev).splitlines())


def test_init_all_branches_cli(catalog, tmp_path, author, capsys):
    work = tmp_path / "repo"
    rc = cli(["release", "init", str(work), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["ok"] and data["created_repository"]
    assert next(b["branch"] for b in data["branches"]) == "main"
    assert {b["branch"] for b in data["branches"]} == set(catalog.branches)
    heads = {k[len("refs/heads/"):]: v for k, v in refs(work).items() if k.startswith("refs/heads/")}
    assert set(heads) == set(catalog.branches)
    main = heads["main"]
    for name, b in catalog.branches.items():
        files = tree(work, name)
        assert files == {recipe_path(v.package) for v in b.variants} | {README, MANIFEST}, name
        log = git(work, "log", "--format=%H %an <%ae>", name).splitlines()
        if name == "main":
            assert len(log) == 1
        else:  # one commit on top of main
            assert len(log) == 2 and log[1].split()[0] == main
        assert log[0].endswith("torchbot <bot@example.com>")
    # the new repository has main checked out and a clean tree
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(work, "status", "--porcelain") == ""
    assert (work / ".flox/pkgs/pytorch-python313-darwin-mps.nix").is_file()
    # generated recipes parse
    r = subprocess.run(["nix-instantiate", "--parse", *map(str, (work / ".flox/pkgs").glob("*.nix"))],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    # re-run: up to date, nothing moves
    before = refs(work)
    rc = cli(["release", "init", str(work)])
    out = capsys.readouterr().out
    assert rc == 0 and "is up to date (8 branches)" in out
    assert refs(work) == before


def test_rerun_commits_only_changes(catalog, tmp_path):
    work = tmp_path / "repo"
    init_repository(work, catalog, ["main", "pytorch-2.9-python313"], "torchbot", "bot@example.com")
    with_origin(work, tmp_path / "origin.git")
    (work / "scratch.txt").write_text("mine\n")
    status = git(work, "status", "--porcelain")
    before = refs(work)

    # the catalog changes one branch: a new summary and one ISA fewer
    b = catalog.branches["pytorch-2.9-python313"]
    b2 = replace(b, summary="Changed summary", cpu_isas=tuple(i for i in b.cpu_isas if i != "avx512bf16"), variants=())
    b2 = replace(b2, variants=catalog.expand(b2))
    changed = catalog.with_branches([b2 if n == b.name else x for n, x in catalog.branches.items()], "test")
    result = init_repository(work, changed, ["main", b.name], "torchbot", "bot@example.com")
    status_by = {o.name: o.status for o in result.branches}
    assert status_by == {"main": "up to date", "pytorch-2.9-python313": "updated"}
    new = git(work, "rev-parse", "pytorch-2.9-python313").strip()
    diff = git(work, "diff-tree", "--name-status", "-r", before["refs/heads/pytorch-2.9-python313"], new).splitlines()
    assert sorted(diff) == sorted(
        [f"D\t{recipe_path('pytorch-python313-cpu-avx512bf16')}", f"M\t{README}", f"M\t{MANIFEST}"])
    assert git(work, "rev-parse", f"{new}~1").strip() == before["refs/heads/pytorch-2.9-python313"]
    assert refs(work)["refs/heads/main"] == before["refs/heads/main"]
    assert git(work, "status", "--porcelain") == status  # checkout untouched
    assert "pytorch-2.9-python313: updated" in result.text() and result.to_dict()["up_to_date"] is False
    # origin was not touched by init
    assert (
        refs(tmp_path / "origin.git")["refs/heads/pytorch-2.9-python313"] == before["refs/heads/pytorch-2.9-python313"]
    )


def test_refusals_leave_things_as_they_were(catalog, tmp_path, author, capsys):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me\n")
    rc = cli(["release", "init", str(foreign)])
    err = capsys.readouterr().err
    assert rc == 1 and "not empty and is not a git repository" in err and "Traceback" not in err
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]

    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "a.txt").write_text("x\n")
    git(other, "add", "a.txt")
    git(other, "commit", "-q", "-m", "x")
    before = refs(other)
    with pytest.raises(RefusedError, match="without build-pytorch recipes"):
        init_repository(other, catalog, None, "t", "t@example.com")
    assert refs(other) == before

    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(RefusedError, match="is a file"):
        init_repository(afile, catalog, None, "t", "t@example.com")

    fresh = tmp_path / "fresh"
    rc = cli(["release", "init", str(fresh), "--branch", "main", "--branch", "nope"])
    err = capsys.readouterr().err
    assert rc == 2 or rc == 1
    assert "Unknown branch 'nope'" in err and not fresh.exists()

    bad = catalog.with_branches([replace(catalog.branches["main"], pin="zz", variants=())], "test")
    with pytest.raises(Exception, match="cannot be written into a recipe"):
        init_repository(tmp_path / "bad", bad, None, "t", "t@example.com")
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValidationError):
        init_repository(tmp_path / "x", catalog, ["nope"], "t", "t@example.com")


def test_commit_changes_contract(catalog, tmp_path):
    work = tmp_path / "repo"
    init_repository(work, catalog, ["main"], "torchbot", "bot@example.com")
    (work / "README.md").write_text("local edit\n")  # a dirty checkout
    git(work, "add", "README.md")
    index_before = git(work, "diff", "--cached", "--name-only")
    main = git(work, "rev-parse", "main").strip()
    files = render_branch(catalog, "main")
    # nothing changed -> None, no ref moves
    assert commit_changes(work, "main", dict(files), "noop", "t", "t@example.com") is None
    assert git(work, "rev-parse", "main").strip() == main
    # a change on a new branch from main: one commit, parent main, author as given
    sha = commit_changes(
        work, "feature", {"extra.txt": b"bytes\n", recipe_path("pytorch-python313-cpu-avx2"): None},
        "feature", "Someone", "someone@example.com", parent_branch="main",
    )
    assert git(work, "rev-parse", "feature").strip() == sha
    assert git(work, "rev-parse", f"{sha}~1").strip() == main
    assert git(work, "log", "-1", "--format=%an <%ae>", sha).strip() == "Someone <someone@example.com>"
    assert git(work, "diff-tree", "--name-status", "-r", main, sha).splitlines() == [
        f"D\t{recipe_path('pytorch-python313-cpu-avx2')}", "A\textra.txt"]
    # the user's index, working tree and HEAD are as they were
    assert git(work, "diff", "--cached", "--name-only") == index_before
    assert (work / "README.md").read_text() == "local edit\n"
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    with pytest.raises(RefusedError, match="No branch 'nope'"):
        commit_changes(work, "x", {"a": "b"}, "m", "t", "t@example.com", parent_branch="nope")


def test_rerun_keeps_the_pins_of_a_bump(catalog, tmp_path):
    """Pins belong to the pin bumps: after a bump, init is still up to date and does not
    move the branch back to the catalog's pin."""
    work = tmp_path / "repo"
    init_repository(work, catalog, ["main"], "torchbot", "bot@example.com")
    old = catalog.branches["main"].pin
    new = "0123abcd0123abcd0123abcd0123abcd0123abcd"
    files = render_branch(catalog, "main")
    bumped = {p: t.replace(old, new) for p, t in files.items() if old in t}
    assert len(bumped) == 62
    sha = commit_changes(work, "main", bumped, "bump", "torchbot", "bot@example.com")  # torchbot's own bump
    result = init_repository(work, catalog, ["main"], "torchbot", "bot@example.com")
    assert result.up_to_date and git(work, "rev-parse", "main").strip() == sha


def test_init_refuses_a_repository_it_did_not_make_unless_forced(catalog, tmp_path, author, capsys):
    """Issue 25, point 5: on a clone of the real-shaped repository init says what it would replace
    and writes nothing; --force writes."""
    from tests.support.fixtures_realshapes import make_pytorch_repo

    made = make_pytorch_repo(tmp_path / "made")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(made.origin), str(clone))
    before = refs(clone)
    rc = cli(["release", "init", str(clone)])
    err = capsys.readouterr().err
    assert rc == 1 and "already has recipes and history torchbot did not make" in err, err
    assert "would replace: main: " in err and "README.md" in err and "--force" in err
    assert "as a new local branch unrelated to origin/" in err  # a fresh clone's other branches
    assert refs(clone) == before
    rc = cli(["release", "init", str(clone), "--branch", "main", "--force"])
    assert rc == 0, capsys.readouterr().err
    assert refs(clone)["refs/heads/main"] != before["refs/heads/main"]


def test_render_cli(tmp_path, author, capsys):
    assert cli(["release", "render", "main", "pytorch-python313-darwin-mps"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# PyTorch 2.8.0 with MPS") and 'pname = "pytorch-python313-darwin-mps";' in out
    assert cli(["release", "render", "main", "--out", str(tmp_path / "out")]) == 0
    assert "Wrote 64 files of main" in capsys.readouterr().out
    assert len(list((tmp_path / "out/.flox/pkgs").glob("*.nix"))) == 62
    assert cli(["release", "render", "main", "pytorch-python399-cpu-avx2"]) == 1
    assert "has no package 'pytorch-python399-cpu-avx2'" in capsys.readouterr().err


def test_failed_init_moves_no_branch(catalog, tmp_path):
    """All refs move in one transaction: a branch git cannot update (a stale lock) means no
    branch moves."""
    work = tmp_path / "repo"
    init_repository(work, catalog, ["main"], "torchbot", "bot@example.com")
    before = refs(work)
    lock = work / ".git/refs/heads/pytorch-2.9-python313.lock"
    lock.write_text("")
    with pytest.raises(Exception, match="nothing was changed"):
        init_repository(work, catalog, None, "torchbot", "bot@example.com")
    assert refs(work) == before
    lock.unlink()
    assert len(init_repository(work, catalog, None, "torchbot", "bot@example.com").branches) == 8

