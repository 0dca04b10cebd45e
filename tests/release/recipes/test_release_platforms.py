"""Where a variant builds: its recipe's meta.platforms and requiredSystemFeatures, the
hardware's word on ISA code, and the runner labels each platform maps to."""

from __future__ import annotations

from config.catalog_data import load_catalog
from config.setting_values import DEFAULT_RUNNERS
from config.settings import Settings
from release.builds.plan import BuildItem, place_github, place_local, runner_labels
from release.recipes.platforms import recipe_target

CAT = load_catalog()


def recipe(platforms: str | None, features: str = "", flags: str = '"-mavx2" "-mfma" "-mf16c"') -> str:
    """A pinned recipe in the real recipes' layout: cpuFlags, overrideAttrs with
    requiredSystemFeatures and a meta block (a commented-out list that must not count)."""
    feats = f"    requiredSystemFeatures = [ {features} ];\n" if features else ""
    meta = (f"    meta = oldAttrs.meta // {{\n      # platforms = [ \"riscv64-linux\" ];\n"
            f"      platforms = [ {platforms} ];\n    }};\n") if platforms is not None else ""
    return (
        "{ pkgs ? import <nixpkgs> {} }:\nlet\n  nixpkgs_pinned = import (builtins.fetchTarball {\n"
        '    url = "https://github.com/NixOS/nixpkgs/archive/fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3.tar.gz";\n'
        f"  }}) {{ config.allowUnfree = true; }};\n  cpuFlags = [ {flags} ];\nin\n"
        "(nixpkgs_pinned.python3Packages.torch.override { cudaSupport = false; }).overrideAttrs (oldAttrs: {\n"
        f"{feats}{meta}}})\n"
    )


def test_the_recipe_says_where_it_builds():
    arm = recipe('"aarch64-linux"', '"big-parallel"', flags='"-march=armv9-a+sve+sve2"')
    t = recipe_target("pytorch-python313-cpu-armv9", arm, CAT)
    assert t.platforms == ("aarch64-linux",) and t.features == ("big-parallel",) and t.note is None
    t = recipe_target("pytorch-python313-cpu-avx2", recipe('"x86_64-linux"'), CAT)
    assert t.platform == "x86_64-linux" and t.features == ()


def test_hardware_wins_over_an_x86_recipe_listing_arm():
    t = recipe_target("pytorch-python313-cpu-avx2", recipe('"x86_64-linux" "aarch64-linux"'), CAT)
    assert t.platforms == ("x86_64-linux",)
    assert "aarch64-linux" in t.note and "x86_64-linux only" in t.note


def test_a_recipe_without_meta_platforms_builds_where_its_isa_runs():
    assert recipe_target("pytorch-python313-cpu-armv9", recipe(None, flags='"-march=armv9-a+sve+sve2"'),
                         CAT).platforms == ("aarch64-linux",)
    assert recipe_target("pytorch-python313-cpu-avx2", recipe(None), CAT).platforms == ("x86_64-linux",)


def test_default_runners_are_githubs_hosted_ones_and_big_parallel_may_go_elsewhere():
    s = Settings(_env_file=None, github_big_parallel_runners="x86_64-linux=self-hosted+gpu-builder")
    assert s.github_runners == DEFAULT_RUNNERS
    def labels(p, f=()):
        return runner_labels(p, f, s.github_runners, s.github_big_parallel_runners)
    assert labels("x86_64-linux") == ("ubuntu-latest",)
    assert labels("aarch64-linux", ("big-parallel",)) == ("ubuntu-24.04-arm",)  # no ARM pool set
    assert labels("aarch64-darwin") == ("macos-14",)
    assert labels("x86_64-linux", ("big-parallel",)) == ("self-hosted", "gpu-builder")


def test_runner_settings_override_per_platform_and_bad_values_name_the_setting(monkeypatch):
    monkeypatch.setenv("TORCHBOT_GITHUB_RUNNERS", '{"aarch64-linux": ["self-hosted", "ARM64"]}')
    s = Settings(_env_file=None)
    assert s.github_runners["aarch64-linux"] == ["self-hosted", "ARM64"]
    assert s.github_runners["x86_64-linux"] == ["ubuntu-latest"]
    from bot.frontends.cli.main import main

    monkeypatch.setenv("TORCHBOT_GITHUB_RUNNERS", "aarch64-linux")
    assert main(["release", "status"]) == 2


def test_placing_items_skips_what_cannot_build_there_with_the_reason():
    items = [
        BuildItem("pytorch-python313-cpu-avx2", "b1", platform="x86_64-linux"),
        BuildItem("pytorch-python313-cuda12_8-sm90-armv9", "b2", platform="aarch64-linux",
                  features=("big-parallel",)),
        # a companion the host could build, waiting for a pytorch variant it cannot
        BuildItem("torchvision-python313-cuda12_8-sm90-armv9", "b3", after="pytorch-python313-cuda12_8-sm90-armv9",
                  platform="x86_64-linux"),
        BuildItem("pytorch-python313-cpu-x86_64-darwin-test", "b4", platform="x86_64-darwin"),
    ]
    kept, skipped = place_local(items, ["x86_64-linux"])
    assert [i.package for i in kept] == ["pytorch-python313-cpu-avx2"]
    why = {s.package: s.reason for s in skipped}
    assert why["pytorch-python313-cuda12_8-sm90-armv9"] == "aarch64-linux recipe; this host builds x86_64-linux"
    assert why["torchvision-python313-cuda12_8-sm90-armv9"] == (
        "its pytorch variant pytorch-python313-cuda12_8-sm90-armv9 is skipped")
    kept, skipped = place_github(items, DEFAULT_RUNNERS, {})
    assert {i.package: i.runs_on for i in kept} == {
        "pytorch-python313-cpu-avx2": ("ubuntu-latest",),
        "pytorch-python313-cuda12_8-sm90-armv9": ("ubuntu-24.04-arm",),
        "torchvision-python313-cuda12_8-sm90-armv9": ("ubuntu-latest",),
    }
    assert [(s.package, s.platform) for s in skipped] == [("pytorch-python313-cpu-x86_64-darwin-test", "x86_64-darwin")]
    assert "TORCHBOT_GITHUB_RUNNERS" in skipped[0].reason


def test_every_real_shape_recipe_gets_the_platforms_it_runs_on(tmp_path):
    """On repositories in every real recipe shape (literal lists, inherited lists, callPackage
    recipes, the x86 CPU recipe that also lists aarch64-linux, companions, darwin)."""
    from tests.support.fixtures_realshapes import make_pytorch_repo, make_torchvision_repo

    seen = set()
    for fixture in (make_pytorch_repo(tmp_path / "pt", with_origin=False),
                    make_torchvision_repo(tmp_path / "tv", with_origin=False)):
        for b in fixture.branches.values():
            for package, facts in b.recipes.items():
                t = recipe_target(package, b.texts[package], CAT)
                assert t.platforms == facts.platforms, (b.name, package, t)
                assert ("big-parallel" in t.features) == facts.big_parallel, (b.name, package)
                seen |= facts.shapes
    assert {"platforms", "platforms-inherited", "big-parallel", "darwin", "no-pin"} <= seen
