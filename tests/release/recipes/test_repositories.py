"""Two repositories at once, as the team runs torchbot: a build-pytorch and a build-torchvision
repository (fixtures in the real shapes), configured through TORCHBOT_REPO_PATH or repeated
`catalog --repo`. Kinds are detected, torchvision branches pair with their PyTorch branch, and
`ask` names only packages that exist as recipe files on the branch and repository it names."""

from __future__ import annotations

import json
import os

import pytest

from bot.frontends.cli.main import main
from bot.frontends.commands import ask
from config.catalog_data import load_catalog
from config.settings import Settings
from release.context import Context
from release.recipes import reader
from release.recipes.repos import read_repositories
from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, RECIPES, make_repos


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    return make_repos(tmp_path_factory.mktemp("two"))


@pytest.fixture
def ctx(repos, monkeypatch):
    pt, tv = repos
    monkeypatch.setenv("TORCHBOT_REPO_PATH", f"{pt.path},{tv.path}")
    return Context(Settings(flox_org="acme"))


def on_branch(repo, branch: str, package: str) -> bool:
    """Plain git: the recipe file exists on that branch."""
    return bool(git(repo, "ls-tree", "--name-only", branch, f"{RECIPES}/{package}.nix").strip())


def test_kinds_are_detected_and_every_branch_of_both_is_read(repos):
    pt, tv = repos
    rs = read_repositories([pt.path, tv.path], load_catalog())
    assert [m.kind for m in rs.models] == ["build-pytorch", "build-torchvision"]
    assert set(rs.catalog.branches) == set(pt.branches)
    assert set(rs.catalog.vision) == set(tv.branches)
    assert rs.problems == []
    assert rs.catalog.source == f"repositories {pt.path}, {tv.path}"


def test_torchvision_branches_pair_with_their_pytorch_branch(repos):
    pt, tv = repos
    cat = read_repositories([pt.path, tv.path], load_catalog()).catalog
    v210 = cat.vision["pytorch-2.10"]
    assert v210.pytorch == "2.10.0" and v210.pairs_with == "pytorch-2.10-python313"
    assert set(v210.cuda_versions) == {"13.1", "13.0"} and set(v210.pins) == {PIN_13_0, PIN_13_1}
    assert "CUDA 13.1 / 13.0" in v210.pairing and PIN_13_0[:7] in v210.pairing
    assert cat.vision["main"].pairs_with == "main" and cat.vision["main"].pytorch == "2.8"
    v29 = cat.vision["pytorch-2.9"]
    # both 2.9 branches share its pin; neither builds Python 3.13, and the pairing says so
    assert v29.pairs_with in {"pytorch-2.9-python311", "pytorch-2.9-vllm-0.14.0"} and PIN_12_X[:7] in v29.pairing
    assert "Python 3.13 here" in v29.pairing


def test_catalog_json_lists_every_branch_of_both_repositories(repos, capsys, monkeypatch):
    pt, tv = repos
    monkeypatch.delenv("TORCHBOT_REPO_PATH", raising=False)
    assert main(["catalog", "--json", "--repo", str(pt.path), "--repo", str(tv.path)]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {(b["repository"], b["branch"]): b for b in d["branches"]}
    assert len(rows) == len(pt.branches) + len(tv.branches)
    for fx in repos:
        for name, want in fx.branches.items():
            b = rows[(str(fx.path), name)]
            assert {"branch", "kind", "pytorch", "python", "cuda", "pins", "variants", "gpu_archs", "packages"} <= set(
                b
            )
            assert b["kind"] == fx.kind and sorted(b["packages"]) == want.packages
            assert b["variants"] == len(want.recipes) and set(b["pins"]) == set(want.pins)
            assert b["cuda"] == want.cuda and b["gpu_archs"] == want.gpu_archs
    assert rows[(str(pt.path), "pytorch-2.10-python313")]["pytorch"] == "2.10.0"
    assert rows[(str(tv.path), "pytorch-2.10")]["pairs_with"] == "pytorch-2.10-python313"
    assert d["problems"] == [] and [r["kind"] for r in d["repositories"]] == ["build-pytorch", "build-torchvision"]


def test_a_broken_recipe_is_a_problem_with_its_file_and_the_branch_is_still_read(repos, tmp_path, capsys, monkeypatch):
    pt, _ = repos
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(pt.origin), str(clone))
    git(clone, "checkout", "-q", "pytorch-2.10-python313")
    (clone / RECIPES / "pytorch-python313-cuda13_1-sm90-broken.nix").write_text("{ pkgs }: (pkgs.torch.override {")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "a broken recipe")
    monkeypatch.delenv("TORCHBOT_REPO_PATH", raising=False)
    assert main(["catalog", "--json", "--repo", str(clone)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["problems"]) == 1
    assert d["problems"][0].startswith(
        f"pytorch-2.10-python313: {RECIPES}/pytorch-python313-cuda13_1-sm90-broken.nix: unparsable"
    )
    assert d["problem_details"][0]["file"] == f"{RECIPES}/pytorch-python313-cuda13_1-sm90-broken.nix"
    b = next(x for x in d["branches"] if x["branch"] == "pytorch-2.10-python313")
    assert b["variants"] == len(pt.branches["pytorch-2.10-python313"].recipes)


def test_a_cuda_13_1_question_gets_a_package_on_the_branch_and_repository_it_names(repos, ctx):
    pt, _ = repos
    for q, package in (
        ("H100 with Sapphire Rapids, CUDA 13.1", "pytorch-python313-cuda13_1-sm90-avx512"),
        ("GB200 pytorch 2.10 cuda 13.1", "pytorch-python313-cuda13_1-sm100-armv9"),
        ("DGX Spark pytorch 2.10", "pytorch-python313-cuda13_1-sm121-armv9"),
    ):
        r = ask(ctx, q).to_dict()["recommendation"]
        assert r["package"] == package and r["branch"] == "pytorch-2.10-python313" and r["cuda"] in ("13.1",), q
        assert r["repository"] == str(pt.path) and r["pytorch"] == "2.10.0"
        assert on_branch(pt.path, r["branch"], r["package"])


def test_a_torchvision_question_gets_the_torchvision_package_and_the_pytorch_it_pairs_with(repos, ctx):
    pt, tv = repos
    d = ask(ctx, "which torchvision for an H100 with Sapphire Rapids, CUDA 13.1").to_dict()
    r = d["recommendation"]
    assert r["kind"] == "torchvision" and r["package"] == "torchvision-python313-cuda13_1-sm90-avx512"
    assert r["branch"] == "pytorch-2.10" and r["repository"] == str(tv.path)
    assert r["build_command"] == "git checkout pytorch-2.10 && flox build torchvision-python313-cuda13_1-sm90-avx512"
    assert on_branch(tv.path, r["branch"], r["package"])
    pw = r["pairs_with"]
    assert (pw["package"], pw["branch"], pw["pytorch"], pw["repository"]) == (
        "pytorch-python313-cuda13_1-sm90-avx512", "pytorch-2.10-python313", "2.10.0", str(pt.path))
    assert on_branch(pt.path, pw["branch"], pw["package"])
    assert any("inline" in x for x in d["reasons"])
    assert d["alternatives"][0]["package"] == pw["package"]  # the PyTorch it pairs with comes first


def test_a_torchvision_for_other_hardware_still_names_an_existing_package_and_says_when_pytorch_differs(repos, ctx):
    _pt, tv = repos
    d = ask(ctx, "which torchvision for an RTX 4090 and i9-13900K").to_dict()
    r = d["recommendation"]
    assert r["kind"] == "torchvision" and r["gpu_arch"] == "sm89" and r["cpu_isa"] == "avx2"
    assert on_branch(tv.path, r["branch"], r["package"])
    assert r["pairs_with"]["pytorch"] == r["pytorch"]


def test_torchaudio_comes_from_the_build_pytorch_companion_that_imports_its_pytorch(repos, ctx):
    pt, _ = repos
    d = ask(ctx, "torchaudio for a T4").to_dict()
    r = d["recommendation"]
    assert (r["kind"], r["package"], r["branch"]) == ("torchaudio", "torchaudio-python313-cuda12_8-sm75-avx", "main")
    assert r["pairs_with"]["package"] == "pytorch-python313-cuda12_8-sm75-avx"
    assert on_branch(pt.path, "main", r["package"]) and on_branch(pt.path, "main", r["pairs_with"]["package"])



def test_a_companion_answer_explains_its_own_branch_cuda_and_driver_not_the_pytorch_picks(repos, ctx):
    """The PyTorch answer for this hardware is on another branch with another CUDA; the torchvision
    answer keeps the hardware reasons and gives the driver for the CUDA its own package is built with."""
    d = ask(ctx, "which torchvision for an RTX 4090 and i9-13900K").to_dict()
    pytorch = ask(ctx, "RTX 4090 and i9-13900K").to_dict()["recommendation"]
    r = d["recommendation"]
    assert (r["kind"], r["cuda"]) == ("torchvision", "13.1") and pytorch["cuda"] == "12.8"
    assert any(x.startswith("RTX 4090: Ada Lovelace") for x in d["reasons"])
    assert any(x.startswith("Needs NVIDIA driver") and x.endswith("(CUDA 13.1).") for x in d["reasons"])
    said = d["reasons"] + d["warnings"]
    assert not any("(CUDA 12.8)." in x or "CUDA 12.8 needs" in x for x in said)
    assert not any(x.startswith(f"Branch {pytorch['branch']} ") for x in d["reasons"])


QUESTIONS = [
    "H100", "p5.48xlarge", "A100 with EPYC 7R13", "RTX 3090 i9-12900K", "L40S", "T4", "GB200", "DGX Spark",
    "Jetson AGX Thor", "RTX 5090 with zen 4", "H100 cuda 12.9", "H100 cuda 13.0", "no GPU, Graviton3",
    "no GPU, i7-2600K", "MacBook Pro M3", "GTX 1080 Ti", "V100 python 3.11", "H100 python 3.12 vllm 0.14",
    "torchvision for an A100", "torchvision for a MacBook M2", "torchvision cpu only Xeon Platinum 8480+",
    "torchaudio for a GTX 1080", "Tesla K80", "hello",
]


@pytest.mark.parametrize("q", QUESTIONS)
def test_every_named_package_exists_on_the_named_branch_of_the_named_repository(repos, ctx, q):
    d = ask(ctx, q).to_dict()
    picks = ([d["recommendation"]] if d["recommendation"] else []) + d["alternatives"]
    for p in picks:
        assert p["repository"] in {str(fx.path) for fx in repos}, p
        assert on_branch(p["repository"], p["branch"], p["package"]), p
        if p.get("pairs_with") and p["pairs_with"].get("package"):
            pw = p["pairs_with"]
            assert on_branch(pw["repository"], pw["branch"], pw["package"]), pw
    assert d["recommendation"] or d["warnings"] or d["missing"]


def test_the_model_is_cached_by_commit_and_reread_when_a_branch_moves(repos, tmp_path):
    pt, tv = repos
    clone = tmp_path / "moving"
    git(tmp_path, "clone", "-q", str(pt.origin), str(clone))
    cat = load_catalog()
    first = read_repositories([clone, tv.path], cat)
    assert read_repositories([clone, tv.path], cat) is first  # nothing moved: the same object
    before = dict(first.models[0].branches.items())
    git(clone, "checkout", "-q", "main")
    text = (clone / RECIPES / "pytorch-python313-cuda12_8-sm90-avx512.nix").read_text()
    (clone / RECIPES / "pytorch-python313-cuda12_8-sm80-avx512.nix").write_text(
        text.replace('"9.0"', '"8.0"').replace("sm90", "sm80").replace('"90"', '"80"'))
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "add sm80")
    second = read_repositories([clone, tv.path], cat)
    assert second is not first
    assert "pytorch-python313-cuda12_8-sm80-avx512" in second.catalog.branches["main"].by_package
    assert second.catalog.branches["main"].by_package["pytorch-python313-cuda12_8-sm80-avx512"].gpu_arch == "sm80"
    for name, bm in second.models[0].branches.items():
        if name != "main":
            assert bm is before[name]  # branches that did not move are not read again
    assert reader._FACTS  # recipe facts are kept by blob


def test_a_moved_branch_of_companions_only_does_not_change_the_repositorys_kind(repos, tmp_path):
    """The kind is decided over every branch, not only the ones that moved since the last read."""
    pt, tv = repos
    clone = tmp_path / "companions"
    git(tmp_path, "clone", "-q", str(pt.origin), str(clone))
    cat = load_catalog()
    first = read_repositories([clone, tv.path], cat)
    main_count = len(first.models[0].branches["main"].recipes)
    git(clone, "checkout", "-q", "-b", "audio-only", "main")
    for f in (clone / RECIPES).glob("*.nix"):
        if not f.name.startswith(("torchaudio", "torchvision")):
            f.unlink()
    assert list((clone / RECIPES).glob("*.nix"))  # the fixture's main has companions
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "companions only")
    second = read_repositories([clone, tv.path], cat)
    assert second.models[0].kind == "build-pytorch"
    assert len(second.models[0].branches["main"].recipes) == main_count > 0


def test_a_missing_repository_in_the_list_is_one_clear_sentence(repos, tmp_path):
    import subprocess
    import sys

    pt, _ = repos
    env = {"TORCHBOT_REPO_PATH": f"{pt.path},{tmp_path / 'nope'}", "PATH": "/usr/bin:/bin", "TORCHBOT_CACHE_DIR": "off",
           **{k: v for k, v in os.environ.items() if k.startswith("XDG_")}}
    r = subprocess.run(
        [sys.executable, "-m", "bot", "ask", "H100"], check=False, capture_output=True, text=True, env=env
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"torchbot: TORCHBOT_REPO_PATH: {tmp_path / 'nope'} does not exist"


def test_torchbot_repo_path_takes_comma_separated_repositories_the_first_one_for_release_commands(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("TORCHBOT_REPO_PATH", f"{tmp_path / 'bp'}, {tmp_path / 'tv'}")
    s = Settings()
    assert s.repo_path == tmp_path / "bp" and s.repositories() == [tmp_path / "bp", tmp_path / "tv"]
    s.repo_path = tmp_path / "other"  # e.g. --repo on a release command: that one only
    assert s.repositories() == [tmp_path / "other"]
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(tmp_path / "one"))
    assert Settings().repositories() == [tmp_path / "one"]
