"""`torchbot release branch create`: validation against the catalog, a real git repo with a
bare origin, nixpkgs facts from a real HTTP server on 127.0.0.1, the local catalog file, and a
read-back. (Derivation from real recipe shapes: tests/release/branches/test_release_branch_derive.py.)"""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from bot.frontends.cli.main import main as cli
from config.catalog_data import branch_from_dict, load_catalog
from release.recipes.repos import catalog_from_repositories
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import NEW, PIN_A, build_repo, git, refs, small_catalog_branches, tree_files


@pytest.fixture
def env(tmp_path, monkeypatch):
    work, origin = build_repo(tmp_path / "repo", small_catalog_branches())
    local = tmp_path / "branches.toml"
    fake = FakeNixpkgs().__enter__()
    fake.add_rev(NEW, "2.9.1", {"cudaPackages_12_8", "cudaPackages_12_9"})
    fake.add_rev(PIN_A, "2.8.0", {"cudaPackages_12_8", "cudaPackages_12_9"})  # main's pin
    fake.add_rev(VLLM_PIN, "2.9.1", {"cudaPackages_12_8", "cudaPackages_12_9"})
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", fake.channels_url)
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("TORCHBOT_HTTP_RETRIES", "1")
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(work))
    monkeypatch.setenv("TORCHBOT_LOCAL_BRANCHES", str(local))
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_NAME", "torchbot")
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_EMAIL", "bot@example.com")
    load_catalog.cache_clear()
    yield work, origin, local
    load_catalog.cache_clear()
    fake.__exit__(None, None, None)


ARGS = ["release", "branch", "create"]
VLLM_PIN = "0182a361324364ae3f436a63005877674cf45efb"  # pytorch-2.9-vllm-0.15.1's pin


@pytest.mark.parametrize(
    "extra, expect",
    [
        (["--cuda", "12.8", "--gpu", "sm90,sm103"], "SM103 needs CUDA >= 12.9, not 12.8"),
        (["--cuda", "12.9", "--gpu", "sm121"], "SM121 needs CUDA >= 13.0, not 12.9"),
        (["--cuda", "13.0", "--gpu", "sm110", "--cpu", "avx2,avx512"], "SM110 builds only for aarch64-linux"),
        (["--cuda", "12.8", "--gpu", "sm99"], "unknown GPU architecture 'sm99'"),
        (["--cuda", "11.2"], "CUDA 11.2 is not a known toolkit"),
    ],
)
def test_impossible_matrix_is_refused(env, extra, expect, capsys):
    work, _origin, local = env
    before = refs(work)
    rc = cli([*ARGS, "pytorch-2.11-python313", "--pytorch", "2.11", "--python", "3.13", "--pin", NEW, *extra])
    err = capsys.readouterr().err
    assert rc == 1
    assert expect in err and "Traceback" not in err
    assert refs(work) == before and not local.exists()


def test_existing_name_and_bad_input_refused(env, capsys):
    work, _origin, local = env
    before = refs(work)
    for args, expect in [
        (["main", "--pytorch", "2.8", "--python", "3.13", "--cuda", "12.8", "--pin", NEW], "already exists"),
        (["x", "--pytorch", "2.8", "--python", "3.13", "--cuda", "12.8", "--pin", "abc"], "40-character"),
        (["x", "--pytorch", "two", "--python", "3.13", "--cuda", "12.8", "--pin", NEW], "not a PyTorch version"),
        (["x..y", "--pytorch", "2.8", "--python", "3.13", "--cuda", "12.8", "--pin", NEW], "not a valid branch name"),
        (
            ["pytorch-2.8-python311", "--pytorch", "2.8", "--python", "3.13", "--cuda", "12.8", "--pin", NEW,
             "--from", "nope"],
            "No branch 'nope'",
        ),
    ]:
        rc = cli(ARGS + args)
        err = capsys.readouterr().err
        assert rc == (2 if "nope" in args or "x..y" in args else 1), args  # unknown branch, bad name: bad input (2)
        assert expect in err, err
    assert refs(work) == before and not local.exists()


CREATE = ["pytorch-2.9-python312", "--pytorch", "2.9.1", "--python", "3.12", "--cuda", "12.9,12.8",
          "--gpu", "sm61,sm75", "--pin", NEW, "--from", "main"]


def test_create_branch(env, tmp_path, capsys):
    work, origin, local = env
    (work / "scratch.txt").write_text("mine\n")
    status = git(work, "status", "--porcelain")
    head = git(work, "symbolic-ref", "HEAD")
    before = refs(work)
    rc = cli(ARGS + CREATE + ["--push", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(out)
    sha = data["commit"]
    assert git(work, "rev-parse", "pytorch-2.9-python312").strip() == sha
    assert git(origin, "rev-parse", "pytorch-2.9-python312").strip() == sha
    assert git(work, "rev-parse", f"{sha}~1").strip() == before["refs/heads/main"]
    # only the new branch appeared; the user's checkout is as it was
    after = refs(work)
    assert {k for k in after if after[k] != before.get(k)} <= {
        "refs/heads/pytorch-2.9-python312", "refs/remotes/origin/pytorch-2.9-python312"}
    assert git(work, "status", "--porcelain") == status and git(work, "symbolic-ref", "HEAD") == head

    recipes = tree_files(work, "pytorch-2.9-python312")
    names = {p.rsplit("/", 1)[1][:-4] for p in recipes}
    assert names == set(data["packages"])
    # main's recipes under the new names: CUDA 12.9 derived from main's 12.8 recipes
    main_names = {p.rsplit("/", 1)[1][:-4] for p in tree_files(work, "main")}
    assert names == {n.replace("python313", "python312") for n in main_names} | {
        n.replace("python313", "python312").replace("cuda12_8", "cuda12_9") for n in main_names if "cuda12_8" in n}
    assert not any("python313" in n for n in names)
    assert all(NEW in text for text in recipes.values())
    d = tmp_path / "parse"
    d.mkdir()
    for path, text in recipes.items():
        (d / path.rsplit("/", 1)[1]).write_text(text)
    r = subprocess.run(
        ["nix-instantiate", "--parse", *map(str, d.iterdir())], check=False, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert git(work, "cat-file", "-t", "pytorch-2.9-python312:README.md").strip() == "blob"
    assert git(work, "cat-file", "-t", "pytorch-2.9-python312:.flox/env/manifest.toml").strip() == "blob"

    # recorded with its repository (its git directory): it joins the catalog where that repository is read
    records = tomllib.loads(local.read_text())["repository"]
    assert list(records) == [str((work / ".git").resolve())]
    recorded = records[str((work / ".git").resolve())]["branch"]["pytorch-2.9-python312"]
    b = branch_from_dict("pytorch-2.9-python312", recorded)
    assert b.pin == NEW and b.python == "3.12" and b.cuda_versions == ("12.9", "12.8")
    assert "pytorch-2.9-python312" not in load_catalog().branches  # not in the embedded catalog
    cat = catalog_from_repositories([work], load_catalog())
    assert {v.package for v in cat.branches["pytorch-2.9-python312"].variants} == names

    # a second create of the same name is refused, nothing changes
    before2 = refs(work)
    rc = cli(ARGS + CREATE)
    assert rc == 1 and "already exists" in capsys.readouterr().err
    assert refs(work) == before2


def test_reader_reads_created_branch_back(env, capsys):
    from release.recipes import reader

    work, _origin, _local = env
    assert cli(ARGS + CREATE) == 0
    capsys.readouterr()
    read = reader.read_repository(work, load_catalog())
    branches = read.branches if hasattr(read, "branches") else read
    got = branches["pytorch-2.9-python312"]
    want = catalog_from_repositories([work], load_catalog()).branches["pytorch-2.9-python312"]
    assert {v.package for v in got.variants} == {v.package for v in want.variants}
    assert set(got.pins) == {NEW}
    b = got.branch  # the catalog model the reader rebuilt from the branch
    assert b.python == "3.12" and b.pytorch == "2.9.1" and set(b.cuda_versions) == {"12.9", "12.8"}
    assert set(b.cpu_isas) == set(load_catalog().branches["main"].cpu_isas[:2]) and b.pin == NEW
    assert not got.problems


def _say_of(work, branch: str, edit) -> None:
    """Commit ``edit(README)`` on ``branch`` of the work repository (its checkout is ``main``)."""
    git(work, "checkout", "-q", branch)
    readme = work / "README.md"
    readme.write_text(edit(readme.read_text()))
    git(work, "commit", "-qam", f"{branch}: README")
    git(work, "checkout", "-q", "main")


def _own_rows(work, branch: str) -> list[list[str]]:
    """The Version Matrix rows of ``branch``'s README about itself, as cells (PyTorch … Pin)."""
    text = git(work, "show", f"{branch}:README.md")
    return [[c.strip().strip("*") for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith(f"| **`{branch}`**")]


def test_a_new_pin_never_inherits_the_cudnn_and_cuda_patch_versions_of_the_source_s_nixpkgs(env, capsys):
    """cuDNN and CUDA's patch version come with nixpkgs: a branch derived on another pin gets
    the cuDNN the repository states for that pin (a branch on exactly it, with those CUDA
    versions), else 'unknown', and CUDA as major.minor; on the source's own pin, the source's."""
    work, _origin, local = env
    # main says cuDNN 9.13.0 and CUDA 12.8.1, both true only of its nixpkgs (PIN_A)
    _say_of(work, "main", lambda t: t.replace("| 12.8 | 9.x | 3.13", "| 12.8.1 | 9.13.0 | 3.13"))
    assert any(r[2:4] == ["12.8.1", "9.13.0"] for r in _own_rows(work, "main"))

    def created(name: str, *args: str) -> tuple[list[list[str]], dict]:
        assert cli([*ARGS, name, "--python", "3.12", "--cuda", "12.8", "--gpu", "sm61,sm75", "--from", "main",
                    *args]) == 0, capsys.readouterr()
        capsys.readouterr()
        record = tomllib.loads(local.read_text())["repository"][str((work / ".git").resolve())]["branch"][name]
        return _own_rows(work, name), record

    # another nixpkgs, which no branch's README speaks for: unknown, and CUDA 12.8
    rows, record = created("pytorch-2.9-python312", "--pytorch", "2.9.1", "--pin", NEW)
    assert rows and all(r[2] == "12.8" and r[3] == "unknown" for r in rows), rows
    assert record["cudnn"] == "unknown"
    # the nixpkgs of pytorch-2.9-vllm-0.15.1, whose README says its cuDNN: that one
    _say_of(work, "pytorch-2.9-vllm-0.15.1", lambda t: t + '\n<!-- torchbot:branch {"cudnn": "9.10.2"} -->\n')
    rows, record = created("pytorch-2.9-cu128-python312", "--pytorch", "2.9.1", "--pin", VLLM_PIN)
    assert rows and all(r[2] == "12.8" and r[3] == "9.10.2" for r in rows), rows
    assert record["cudnn"] == "9.10.2"
    # main's own nixpkgs: main's statements hold
    rows, _record = created("pytorch-2.8-python312-cu128", "--pytorch", "2.8.0", "--pin", PIN_A)
    assert rows and all(r[2] == "12.8.1" and r[3] == "9.13.0" for r in rows), rows


def test_create_from_a_branch_that_a_fresh_clone_has_only_as_origin(env, tmp_path, monkeypatch, capsys):
    """Issue 25: release commands see origin/* as `catalog` does; the source is read from there."""
    _work, origin, _local = env
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(clone))
    assert "pytorch-2.8-python312" not in git(clone, "branch")
    rc = cli([*ARGS, "pytorch-2.8-python311", "--python", "3.11", "--cuda", "12.8", "--gpu", "sm61,sm75",
              "--from", "pytorch-2.8-python312", "--pytorch", "2.8.0", "--pin", PIN_A])
    assert rc == 0, capsys.readouterr().err
    source = git(clone, "rev-parse", "origin/pytorch-2.8-python312").strip()
    ancestor = subprocess.run(["git", "-C", str(clone), "merge-base", "--is-ancestor", source, "pytorch-2.8-python311"],
                              check=False)
    assert ancestor.returncode == 0  # derived from the remote-tracking branch, sharing its history
    assert any("pytorch-python311" in p for p in tree_files(clone, "pytorch-2.8-python311"))
