"""The reader takes every recipe seriously: on fixture repositories in each real shape
(tests/support/fixtures_realshapes.py), every .nix file of every branch becomes a variant named by its
file, with the facts the recipe states, and they agree with what Nix evaluates the recipe to
against a stand-in nixpkgs."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from config.catalog_data import load_catalog
from release.recipes.facts import read_recipe
from release.recipes.reader import read_repository
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, RECIPES, make_repos


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    return make_repos(tmp_path_factory.mktemp("facts"))


@pytest.fixture(scope="module")
def read(repos):
    cat = load_catalog()
    return tuple(read_repository(fx.path, cat) for fx in repos)


def test_every_recipe_of_every_branch_is_a_variant_named_by_its_file(repos, read):
    for fx, model in zip(repos, read, strict=True):
        assert set(model.branches) == set(fx.branches)
        for name, want in fx.branches.items():
            got = model.branches[name]
            assert got.packages and sorted(got.packages) == want.packages, name
            assert got.problems == [], (name, got.problems)


FIELDS = ("kind", "python", "pin", "cuda", "gpu_arch", "cpu_isa", "darwin", "pname", "pytorch", "big_parallel",
          "torch_from")


def test_the_facts_of_each_recipe_are_what_the_recipe_states(repos, read):
    checked = 0
    for fx, model in zip(repos, read, strict=True):
        for name, want_branch in fx.branches.items():
            got_branch = model.branches[name]
            for pkg, want in want_branch.recipes.items():
                got = got_branch.recipes[pkg]
                for f in FIELDS:
                    assert getattr(got, f) == getattr(want, f), (fx.kind, name, pkg, f, getattr(got, f))
                assert got.platforms == want.platforms
                assert got.platform == want.platforms[0]
                v = got_branch.branch.by_package[pkg]
                assert (v.pin, v.cuda, v.gpu_arch, v.cpu_isa, v.pname, v.pytorch) == (
                    want.pin, want.cuda, want.gpu_arch, want.cpu_isa, want.pname, want.pytorch)
                checked += 1
    assert checked == sum(len(b.recipes) for fx in repos for b in fx.branches.values())


@pytest.mark.parametrize("shape,check", [
    ("no-pin", lambda f: f.pin == "none"),
    ("pin-sha256", lambda f: len(f.pin) == 40),
    ("pname-differs", lambda f: f.pname != f.package and any("pname is" in n for n in f.notes)),
    ("torch-source", lambda f: f.pytorch == "2.10.0" and f.torch_source.hash.startswith("sha256-")),
    ("patch-overlay", lambda f: "magma" in f.patches),
    ("cuda-alias-major", lambda f: f.cuda == "13.0" and any("alias" in n for n in f.notes)),
    ("cuda-name-only", lambda f: f.cuda == "12.8"),
    ("gpu-targets-literal", lambda f: f.gpu_arch == "sm121" and f.gpu_targets == ("12.1",)),
    ("platforms-inherited", lambda f: f.platforms_inherited and f.platforms == (f.platform,)),
    ("inline-torch", lambda f: f.torch_from == "inline" and f.kind == "torchvision"),
    ("import-sibling", lambda f: f.torch_from.startswith("import:pytorch-python313-")),
    ("import-remote", lambda f: f.torch_from.startswith("remote:example-org/build-pytorch@")),
    ("darwin", lambda f: f.darwin and f.platform == "aarch64-darwin" and f.cpu_isa is None),
    ("big-parallel", lambda f: f.big_parallel),
])
def test_each_shape(repos, read, shape, check):
    seen = 0
    for fx, model in zip(repos, read, strict=True):
        for branch, want in fx.by_shape(shape):
            f = model.branches[branch].recipes[want.package]
            assert check(f), (shape, branch, want.package, f)
            seen += 1
    assert seen, shape


def test_the_multi_pin_branch_reads_as_one_cuda_group_per_pin(read):
    pt, _ = read
    b = pt.branches["pytorch-2.10-python313"]
    assert set(b.pins) == {PIN_13_0, PIN_13_1, PIN_12_X}
    assert b.branch.pytorch == "2.10.0" and b.pytorch_from.startswith("recipes")
    assert {(g.version, g.pin or b.branch.pin) for g in b.branch.cuda_groups} == {
        ("13.0", PIN_13_0), ("13.1", PIN_13_1), ("12.9", PIN_12_X)}
    assert b.branch.pin == PIN_13_0  # CPU-only and darwin recipes
    staging = pt.branches["main-staging"]
    assert staging.pins[0] == "none" and staging.branch.cuda_versions == ("12.8",)


def test_a_platform_list_wider_than_the_isa_is_noted_and_the_package_runs_where_the_isa_does(read):
    pt, _ = read
    f = pt.branches["main"].recipes["pytorch-python313-cpu-avx2"]
    assert f.listed_platforms == ("x86_64-linux", "aarch64-linux")
    assert f.platforms == ("x86_64-linux",) and f.platform == "x86_64-linux"
    assert any("aarch64-linux" in n and "x86_64-linux only" in n for n in f.notes)


def test_only_unusable_recipes_are_problems():
    cat = load_catalog()
    assert "unparsable" in read_recipe(cat, "pytorch-python313-cpu-avx2.nix", '{ x = "unterminated; }').problem
    assert "unparsable" in read_recipe(cat, "pytorch-python313-cpu-avx2.nix", "{ a = (1; }").problem
    no_target = read_recipe(
        cat, "my-torch.nix", '{ python3Packages }: python3Packages.torch.overrideAttrs (o: { pname = "x"; })'
    )
    assert no_target.kind == "pytorch" and "no GPU or CPU target" in no_target.problem
    other = read_recipe(cat, "hello.nix", "{ pkgs ? import <nixpkgs> {} }: pkgs.hello")
    assert "does not build PyTorch" in other.problem and "pkgs.hello" in other.problem
    # a name outside the convention is fine when the recipe says what it builds
    own = read_recipe(cat, "my-h100-build.nix", """{ python3Packages }:
      (python3Packages.torch.override { cudaSupport = true; gpuTargets = [ "9.0" ]; }).overrideAttrs (o: {
        pname = "my-h100-build"; preConfigure = ''export CXXFLAGS="-mavx2 -mfma -mf16c"''; })""")
    assert own.problem is None and (own.gpu_arch, own.cpu_isa, own.pin) == ("sm90", "avx2", "none")


# ---------------------------------------------------------------------------------------
# The oracle: evaluate each fixture recipe with nix-instantiate against a stand-in nixpkgs
# (fetchTarball replaced through scopedImport, so nothing is fetched) and compare.

STANDIN = r"""
{ files }:
let
  lib = {
    concatStringsSep = builtins.concatStringsSep; filter = builtins.filter;
    hasPrefix = p: s: builtins.substring 0 (builtins.stringLength p) s == p;
    fix = f: let x = f x; in x; foldl = builtins.foldl';
  };
  mkDrv = attrs: let self = attrs // {
      override = a: mkDrv (attrs // (if builtins.isFunction a then a attrs else a));
      overrideAttrs = f: mkDrv (attrs // (if builtins.isFunction f then f attrs else f));
      out = self; outPath = "/standin/" + (attrs.pname or "drv");
    }; in self;
  mkCuda = v: { cudaVersion = v; cuda_cccl = mkDrv { pname = "cuda_cccl"; }; };
  mkPy = final: ver: overrides: let
      base = self: {
        torch = mkDrv { pname = "torch"; version = "nixpkgs"; pin = final.pin; cudaPackages = final.cudaPackages;
          cudaSupport = false; gpuTargets = []; passthru = {}; preConfigure = ""; cmakeFlags = [];
          buildInputs = []; nativeBuildInputs = [];
          meta = { platforms = [ "x86_64-linux" "aarch64-linux" "aarch64-darwin" ]; }; };
        pytorch = self.torch;
        torchvision = mkDrv { pname = "torchvision"; torch = self.torch; pin = final.pin; passthru = {};
          preConfigure = ""; propagatedBuildInputs = []; meta = { platforms = [ "x86_64-linux" "aarch64-linux" ]; }; };
        torchaudio = mkDrv { pname = "torchaudio"; torch = self.torch; pin = final.pin; passthru = {};
          preConfigure = ""; meta = { platforms = [ "x86_64-linux" "aarch64-linux" ]; }; };
      };
      set = lib.fix (self: let b = base self; in b // overrides self b);
    in set // { override = a: mkPy final ver (a.overrides or (_: _: {})); };
  nixpkgs = pin: { config ? {}, overlays ? [] }:
    let
      base = final: {
        inherit lib config pin;
        fetchFromGitHub = a: a // { outPath = "/standin/src"; };
        fetchpatch = a: a // { outPath = "/standin/patch"; };
        magma = mkDrv { pname = "magma"; patches = []; };
        openblas = mkDrv { pname = "openblas"; }; mkl = mkDrv { pname = "mkl"; };
        addDriverRunpath = mkDrv { pname = "addDriverRunpath"; };
        cudaPackages_12_8 = mkCuda "12.8"; cudaPackages_12_9 = mkCuda "12.9";
        cudaPackages_13_0 = mkCuda "13.0"; cudaPackages_13_1 = mkCuda "13.1"; cudaPackages_13 = mkCuda "13";
        cudaPackages = mkCuda "default";
        python3Packages = mkPy final "3" (_: _: {});
        python311Packages = mkPy final "3.11" (_: _: {});
        python312Packages = mkPy final "3.12" (_: _: {});
        python313Packages = mkPy final "3.13" (_: _: {});
      };
      apply = f: ov: final: let prev = f final; in prev // ov final prev;
    in lib.fix (lib.foldl apply base overlays);
  fakeBuiltins = builtins // {
    fetchTarball = a: { __tarball = if builtins.isAttrs a then a.url else a; outPath = "/standin-tarball"; };
  };
  imp = p:
    if builtins.isAttrs p && p ? __tarball then nixpkgs p.__tarball
    else if builtins.isString p && lib.hasPrefix "/standin-tarball" p then (_: mkDrv { pname = "remote"; version = "remote"; pin = "remote"; })
    else scopedImport { builtins = fakeBuiltins; import = imp; } p;
  call = f: if builtins.isFunction f
    then f (builtins.intersectAttrs (builtins.functionArgs f) (nixpkgs "none" {}))
    else f;
  facts = file: let
      r = call (imp file);
      t = if r ? torch then r.torch else r;
    in {
      pname = r.pname;
      pin = r.pin;
      cuda = if t.cudaSupport or false then t.cudaPackages.cudaVersion else null;
      gpuTargets = t.gpuTargets or [];
      torchVersion = t.version or null;
      platforms = r.meta.platforms;
      script = (r.preConfigure or "") + (t.preConfigure or "");
      big = builtins.elem "big-parallel" (r.requiredSystemFeatures or []);
    };
in map facts files
"""  # noqa: E501  (verbatim text)


def test_facts_agree_with_what_nix_evaluates_each_recipe_to(repos, read, tmp_path):
    probe = tmp_path / "standin.nix"
    probe.write_text(STANDIN)
    compared = 0
    for fx, model in zip(repos, read, strict=True):
        for name, want_branch in fx.branches.items():
            d = tmp_path / fx.kind / name / RECIPES
            d.mkdir(parents=True)
            for pkg, text in want_branch.texts.items():
                (d / f"{pkg}.nix").write_text(text)
            pkgs = want_branch.packages
            files = "[ " + " ".join(str(d / f"{p}.nix") for p in pkgs) + " ]"
            r = subprocess.run(["nix-instantiate", "--eval", "--strict", "--json", str(probe), "--arg", "files", files],
                               check=False, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            for pkg, ev in zip(pkgs, json.loads(r.stdout), strict=True):
                got = model.branches[name].recipes[pkg]
                assert ev["pname"] == got.pname, pkg
                pin = re.search(r"archive/([0-9a-f]{40})", ev["pin"])
                assert (pin[1] if pin else "none") == got.pin or ev["pin"] == "remote", pkg
                if ev["cuda"] in (None,):
                    assert got.cuda is None or got.gpu_arch is not None, pkg
                elif ev["cuda"] == "default":
                    assert got.cuda and any("from the name" in n for n in got.notes), pkg  # nixpkgs' default set
                else:
                    assert got.cuda == ev["cuda"] or (ev["cuda"] == "13" and got.cuda.startswith("13.")), pkg
                if ev["gpuTargets"]:
                    assert got.gpu_arch == "sm" + ev["gpuTargets"][0].replace(".", ""), pkg
                assert (got.pytorch or "nixpkgs") == ev["torchVersion"] or ev["torchVersion"] == "remote", pkg
                if not got.platforms_inherited:
                    assert list(got.listed_platforms) == ev["platforms"], pkg
                for flag in got.cpu_flags:
                    assert flag in ev["script"], (pkg, flag)
                assert got.big_parallel == ev["big"], pkg
                compared += 1
    assert compared == sum(len(b.recipes) for fx in repos for b in fx.branches.values())
