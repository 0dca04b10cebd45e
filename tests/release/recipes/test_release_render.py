"""The recipe generator: every recipe of every catalog branch parses with the real
`nix-instantiate`, and evaluates offline against the stub nixpkgs in tests/nixstub
(assertions on evaluated values, not on text)."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from config.catalog_data import load_catalog
from config.errors import CatalogError
from release.recipes.render import MANIFEST, README, recipe_path, render_all, render_branch, render_recipe

STUB = Path(__file__).resolve().parents[2] / "support" / "nixstub"

# Fields pulled out of an evaluated recipe (functions like override cannot go to JSON).
PROBE = """
{ files, stub }:
map (file:
  let r = import file { nixpkgsSrc = stub; }; in {
    inherit (r) pname version passthru ninjaFlags requiredSystemFeatures postInstall preConfigure;
    cudaSupport = r.cudaSupport or null;
    gpuTargets = r.gpuTargets or null;
    cuda = if r ? cudaPackages then r.cudaPackages.cudaVersion else null;
    cmakeFlags = r.cmakeFlags or [];
    platforms = r.meta.platforms;
    description = r.meta.description;
    src = r.src or null;
    inputs = map (p: p.pname) (r.buildInputs or []);
    torch = if r ? torch then { inherit (r.torch) pname gpuTargets cudaSupport; platforms = r.torch.meta.platforms; } else null;
  }) files
"""  # noqa: E501  (verbatim text)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def written(catalog, tmp_path_factory):
    """All branches rendered into one directory per branch."""
    root = tmp_path_factory.mktemp("recipes")
    out = {}
    for name, files in render_all(catalog).items():
        d = root / name
        for path, text in files.items():
            f = d / path
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
        out[name] = d
    return out


def evaluate(files: list[Path]) -> list[dict]:
    probe = files[0].parent / "probe.nix"
    probe.write_text(PROBE)
    nix_list = "[ " + " ".join(str(f) for f in files) + " ]"
    r = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", str(probe),
         "--arg", "files", nix_list, "--arg", "stub", str(STUB)],
        check=False, capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_every_recipe_of_every_branch_parses(catalog, written):
    assert set(written) == set(catalog.branches) and len(written) == 8
    total = 0
    for name, d in written.items():
        recipes = sorted((d / ".flox/pkgs").glob("*.nix"))
        assert {p.stem for p in recipes} == {v.package for v in catalog.branches[name].variants}
        r = subprocess.run(
            ["nix-instantiate", "--parse", *map(str, recipes)], check=False, capture_output=True, text=True
        )
        assert r.returncode == 0, f"{name}: {r.stderr}"
        total += len(recipes)
    assert total == sum(len(b.variants) for b in catalog.branches.values())
    assert len(catalog.branches["main"].variants) == 62


def test_every_main_recipe_evaluates_to_its_variant(catalog, written):
    """Evaluate all 62 recipes of main in one nix call; each matches its catalog variant."""
    branch = catalog.branches["main"]
    files = [written["main"] / recipe_path(v.package) for v in branch.variants]
    results = evaluate(files)
    for v, got in zip(branch.variants, results, strict=True):
        assert got["pname"] == v.package
        assert got["platforms"] == [v.platform]
        assert got["requiredSystemFeatures"] == ["big-parallel"]
        assert got["postInstall"].strip() == "echo 1 > $out/.metadata-rev"
        assert got["ninjaFlags"] == ["-j32"]
        if v.cpu_isa:
            flags = " ".join(catalog.isas[v.cpu_isa].flags)
            assert f'CXXFLAGS="{flags} $CXXFLAGS"' in got["preConfigure"]
            assert got["passthru"]["cpuISA"] == v.cpu_isa
        if v.gpu_arch and v.kind == "pytorch":
            cc = catalog.gpu_archs[v.gpu_arch].cc
            assert got["gpuTargets"] == [cc] and got["cudaSupport"] is True
            assert got["cuda"] == v.cuda
            assert got["passthru"] == {"gpuArch": cc, "blasProvider": "cublas", "cpuISA": v.cpu_isa}


def _one(catalog, written, branch: str, package: str) -> dict:
    assert package in catalog.branches[branch].by_package
    return evaluate([written[branch] / recipe_path(package)])[0]


def test_gpu_x86(catalog, written):
    got = _one(catalog, written, "pytorch-2.9-python313", "pytorch-python313-cuda12_9-sm90-avx512")
    assert got["pname"] == "pytorch-python313-cuda12_9-sm90-avx512"
    assert got["gpuTargets"] == ["9.0"] and got["cudaSupport"] is True and got["cuda"] == "12.9"
    assert "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma" in got["preConfigure"]
    assert "USE_CUDNN=0" not in got["preConfigure"] and "USE_FBGEMM" not in got["preConfigure"]
    assert got["platforms"] == ["x86_64-linux"]
    assert got["cmakeFlags"] == []


def test_gpu_arm(catalog, written):
    got = _one(catalog, written, "main", "pytorch-python313-cuda12_8-sm90-armv9")
    assert got["gpuTargets"] == ["9.0"] and got["platforms"] == ["aarch64-linux"]
    assert 'CFLAGS="-march=armv9-a+sve+sve2 $CFLAGS"' in got["preConfigure"]
    assert got["passthru"]["cpuISA"] == "armv9"


def test_avx_and_sm61(catalog, written):
    sm61 = _one(catalog, written, "pytorch-2.9-python313", "pytorch-python313-cuda12_9-sm61-avx")
    assert sm61["gpuTargets"] == ["6.1"]
    env = dict(re.findall(r"export (\w+)=(\S+)", sm61["preConfigure"]))
    assert env["USE_CUDNN"] == "0"  # SM61: cuDNN off
    assert env["USE_FBGEMM"] == env["USE_MKLDNN"] == env["USE_NNPACK"] == "0"  # AVX: off
    assert "-mavx -mno-fma -mno-bmi -mno-bmi2 -mno-avx2" in sm61["preConfigure"]
    assert "-DUSE_NNPACK=OFF" in sm61["cmakeFlags"] and "-DCXX_AVX2_FOUND=FALSE" in sm61["cmakeFlags"]
    # AVX with a cuDNN-capable arch keeps cuDNN; SM61 with AVX2 keeps FBGEMM
    sm75 = _one(catalog, written, "pytorch-2.9-python313", "pytorch-python313-cuda12_9-sm75-avx")
    assert "USE_CUDNN" not in sm75["preConfigure"] and "USE_FBGEMM=0" in sm75["preConfigure"]
    sm61_avx2 = _one(catalog, written, "pytorch-2.9-python313", "pytorch-python313-cuda12_9-sm61-avx2")
    assert "USE_CUDNN=0" in sm61_avx2["preConfigure"] and "USE_FBGEMM" not in sm61_avx2["preConfigure"]


def test_cpu_only(catalog, written):
    got = _one(catalog, written, "main", "pytorch-python313-cpu-avx2")
    assert got["cudaSupport"] is False and got["gpuTargets"] == []
    assert got["passthru"] == {"gpuArch": None, "blasProvider": "openblas", "cpuISA": "avx2"}
    assert "cuda_nvcc" not in got["inputs"] and "openblas" in got["inputs"]
    assert got["platforms"] == ["x86_64-linux"]
    arm = _one(catalog, written, "main", "pytorch-python313-cpu-armv8_2")
    assert arm["platforms"] == ["aarch64-linux"] and "-march=armv8.2-a+fp16+dotprod" in arm["preConfigure"]


def test_darwin(catalog, written):
    got = _one(catalog, written, "main", "pytorch-python313-darwin-mps")
    assert got["platforms"] == ["aarch64-darwin"]
    assert got["passthru"] == {"gpuArch": "mps", "blasProvider": "veclib", "cpuISA": None}
    assert "USE_MPS=1" in got["preConfigure"] and "BLAS=vecLib" in got["preConfigure"]
    assert got["cudaSupport"] is False and "cuda_nvcc" not in got["inputs"]


def test_companions_link_their_pytorch(catalog, written):
    for kind in ("torchvision", "torchaudio"):
        got = _one(catalog, written, "main", f"{kind}-python313-cuda12_8-sm61-avx")
        assert got["pname"] == f"{kind}-python313-cuda12_8-sm61-avx"
        assert got["torch"]["pname"] == "pytorch-python313-cuda12_8-sm61-avx"
        assert got["torch"]["gpuTargets"] == ["6.1"] and got["torch"]["cudaSupport"] is True
        assert got["passthru"] == {"gpuArch": "6.1", "cpuISA": "avx"}
        assert 'TORCH_CUDA_ARCH_LIST="6.1"' in got["preConfigure"]
        assert got["platforms"] == ["x86_64-linux"]


def test_pytorch_2_10_built_from_source(catalog, written):
    branch = catalog.branches["pytorch-2.10-python313"]
    got = _one(catalog, written, branch.name, "pytorch-python313-cuda13_0-sm121-armv9")
    assert got["version"] == branch.torch_source.version == "2.10.0"
    assert got["src"]["hash"] == branch.torch_source.hash and got["src"]["rev"] == "v2.10.0"
    assert got["cuda"] == "13.0" and got["gpuTargets"] == ["12.1"] and got["platforms"] == ["aarch64-linux"]
    # branches without a torch source keep nixpkgs' torch
    assert _one(catalog, written, "main", "pytorch-python313-cpu-avx2")["version"] == "2.8.0"


def test_pin_only_in_the_fetch_url(catalog):
    for name, files in render_all(catalog).items():
        branch = catalog.branches[name]
        for path, text in files.items():
            for pin in branch.pins:
                for line in text.splitlines():
                    if pin in line:
                        assert line.strip() == f'url = "https://github.com/NixOS/nixpkgs/archive/{pin}.tar.gz";', path
            if path.endswith(".nix"):
                assert text.count("nixpkgs/archive/") == 1
        assert MANIFEST in files and README in files
        assert "version = 1" in files[MANIFEST]


def test_vllm_branch_uses_each_group_toolkit(catalog):
    branch = catalog.branches["pytorch-2.9-vllm-0.15.1"]
    files = render_branch(catalog, branch)
    assert "final.cudaPackages_12_9;" in files[recipe_path("pytorch-python313-cuda12_9-sm103-avx512")]
    assert "final.cudaPackages_12_8;" in files[recipe_path("pytorch-python313-cuda12_8-sm90-avx512")]


def test_bad_catalog_values_are_refused(catalog):
    branch = catalog.branches["main"]
    bad_arch = replace(catalog.gpu_archs["sm90"], desc='H100"; rm -rf / ;"')
    bad = replace(catalog, gpu_archs={**catalog.gpu_archs, "sm90": bad_arch})
    with pytest.raises(CatalogError, match="cannot be written into a recipe"):
        render_recipe(bad, branch, "pytorch-python313-cuda12_8-sm90-avx512")
    with pytest.raises(CatalogError, match="cannot be written"):
        render_branch(catalog, replace(branch, pin="not-a-pin${x}", variants=()))
    with pytest.raises(CatalogError, match="has no package"):
        render_recipe(catalog, branch, "pytorch-python399-cpu-avx2")
    with pytest.raises(CatalogError, match="Unknown branch"):
        render_branch(catalog, "nope")
    impossible = replace(branch, cpu_isas=("sse9",), variants=())
    with pytest.raises(CatalogError, match="unknown CPU ISA 'sse9'"):
        render_branch(catalog, impossible)
