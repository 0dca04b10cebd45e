"""The real-shape fixture repositories are what they claim: every recipe is valid Nix, every
shape the issue lists appears, and git holds exactly the recipes the facts describe."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import RECIPES, make_repos

SHAPES = {
    "pin-tarball", "pin-sha256", "no-pin", "pname-differs", "torch-source", "patch-overlay", "cuda-attr",
    "cuda-alias-major", "cuda-name-only", "cuda-cmake", "gpu-targets-literal", "gpu-arch-sm",
    "torch-cuda-arch-list", "passthru-gpuarch", "cpu-flags", "passthru-cpuisa", "platforms",
    "platforms-inherited", "big-parallel", "inline-torch", "import-sibling", "import-remote", "cpu-only", "darwin",
}


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    return make_repos(tmp_path_factory.mktemp("realshapes"))


def test_every_fixture_recipe_is_valid_nix(repos):
    for fx in repos:
        for b in fx.branches.values():
            for pkg, text in b.texts.items():
                r = subprocess.run(
                    ["nix-instantiate", "--parse", "-E", text], check=False, capture_output=True, text=True
                )
                assert r.returncode == 0, f"{fx.kind} {b.name} {pkg}: {r.stderr}"


def test_every_real_shape_is_represented(repos):
    seen = {s for fx in repos for b in fx.branches.values() for r in b.recipes.values() for s in r.shapes}
    assert seen >= SHAPES, SHAPES - seen


def test_git_holds_exactly_the_described_recipes_on_every_branch_and_origin(repos):
    for fx in repos:
        for name, b in fx.branches.items():
            for where in (fx.path, fx.origin):
                files = git(where, "ls-tree", "-r", "--name-only", name, RECIPES + "/").split()
                assert sorted(f[len(RECIPES) + 1 : -4] for f in files) == b.packages
                assert "README.md" in git(where, "ls-tree", "--name-only", name)


def test_the_multi_pin_branch_has_three_pins_and_four_cuda_groups_per_kind(repos):
    pt, tv = repos
    b = pt.branches["pytorch-2.10-python313"]
    assert len(b.pins) == 3 and b.cuda == ["13.1", "13.0", "12.9"]
    assert b.pin_of_cuda("13.0") == b.pin_of_cuda(None) != b.pin_of_cuda("13.1")
    assert tv.branches["pytorch-2.10"].cuda == ["13.1", "13.0"]
    assert pt.branches["main-staging"].pins[0] == "none"
