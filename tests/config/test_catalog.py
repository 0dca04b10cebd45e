"""The catalog data: the branch matrices of seed 003 and hardware facts."""

import re

import pytest

from config.catalog import vtuple
from config.catalog_data import build_catalog, load_catalog
from config.errors import CatalogError
from config.naming import package_name, parse_package_name
from tests.support.seed_main_packages import MAIN_62

SEED_COUNTS = {
    "main": 62,
    "pytorch-2.8-python312": 62,
    "pytorch-2.8-python311": 62,
    "pytorch-2.9-python313": 66,
    "pytorch-2.9-vllm-0.15.1": 117,
    "pytorch-2.9-vllm-0.14.0": 131,
    "pytorch-2.9-python311": 131,
    # the seeds' 68 (CUDA 13.0) plus the CUDA 13.1, 12.9 and 12.8 groups the real branch holds
    "pytorch-2.10-python313": 237,
}


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_eight_branches_with_the_seed_variant_counts(cat):
    assert {name: len(b.variants) for name, b in cat.branches.items()} == SEED_COUNTS


def test_main_lists_exactly_the_62_packages_of_seed_003(cat):
    assert sorted(v.package for v in cat.branch("main").variants) == sorted(MAIN_62)


def test_branch_facts_from_the_version_matrix(cat):
    main = cat.branch("main")
    assert (main.pytorch, main.python, main.cuda_versions, main.pin[:7]) == ("2.8.0", "3.13", ("12.8",), "fe5e41d")
    assert cat.branch("pytorch-2.9-vllm-0.14.0").cuda_versions == ("12.9", "12.8")
    assert cat.branch("pytorch-2.9-vllm-0.14.0").vllm == "0.14.0"
    assert cat.recommended == "pytorch-2.9-python313"
    assert cat.branch("pytorch-2.10-python313").purpose == "bleeding-edge"


def test_the_2_10_branch_has_the_real_branch_cuda_groups_and_three_pins(cat):
    b = cat.branch("pytorch-2.10-python313")
    assert b.cuda_versions == ("13.0", "13.1", "12.9", "12.8")
    assert [p[:7] for p in b.pins] == ["6a030d5", "2017d6d", "0182a36"]
    assert (
        b.pin_for("13.1")[:7] == "2017d6d" and b.pin_for("12.8")[:7] == "0182a36" and b.pin_for(None)[:7] == "6a030d5"
    )
    per_cuda = {c: sum(1 for v in b.variants if v.cuda == c) for c in b.cuda_versions}
    assert per_cuda == {"13.0": 60, "13.1": 60, "12.9": 58, "12.8": 51}


def test_sm70_only_on_the_python311_and_vllm_0_14_branches(cat):
    carriers = {b.name for b in cat.branches.values() if any(v.gpu_arch == "sm70" for v in b.variants)}
    assert carriers == {"pytorch-2.9-python311", "pytorch-2.9-vllm-0.14.0"}


def test_arm_only_architectures_have_only_arm_variants(cat):
    b = cat.branch("pytorch-2.10-python313")
    for arch in ("sm110", "sm121"):
        isas = {v.cpu_isa for v in b.variants if v.gpu_arch == arch}
        assert isas == {"armv8_2", "armv9"}
        assert all(v.platform == "aarch64-linux" for v in b.variants if v.gpu_arch == arch)


def test_sm61_pairs_only_with_avx_and_avx2_and_has_no_cudnn(cat):
    assert {v.cpu_isa for v in cat.branch("main").variants if v.gpu_arch == "sm61" and v.kind == "pytorch"} == {
        "avx",
        "avx2",
    }
    assert cat.arch("sm61").cudnn is False


def test_hardware_truths_in_the_data(cat):
    assert cat.gpu_models["L40S"] == "sm89"  # Ada, not Hopper
    assert cat.gpu_models["Jetson AGX Orin"] == "sm87" and not cat.arch("sm87").served
    assert "sve2" not in cat.uarchs["neoverse_v1"].flags  # Graviton3
    assert "sve2" in cat.uarchs["neoverse_v2"].flags  # Graviton4, Grace
    assert "avx512f" not in cat.uarchs["alderlake"].flags
    assert "avx512_vnni" not in cat.uarchs["skylake_sp"].flags
    assert "avx512_vnni" in cat.uarchs["cascadelake"].flags
    assert "avx512_bf16" not in cat.uarchs["icelake"].flags
    assert cat.isa("avx").disables == ("FBGEMM", "MKLDNN", "NNPACK")
    assert "sve2" in cat.isa("armv9").requires


def test_isa_requirements_follow_the_compile_flags(cat):
    # every -m<ext> flag of an x86 build is a /proc/cpuinfo flag the CPU must report
    spelled = {"-mavx512bf16": "avx512_bf16", "-mavx512vnni": "avx512_vnni"}
    for isa in cat.isas.values():
        for flag in isa.flags:
            if flag.startswith("-m") and not flag.startswith(("-mno-", "-march")):
                assert spelled.get(flag, flag[2:]) in isa.requires, (isa.key, flag)


def test_matrix_conflicts_name_the_problem(cat):
    from dataclasses import replace

    b = cat.branch("main")
    bad = replace(b, cuda_groups=(replace(b.cuda_groups[0], archs=("sm103", "sm121", "sm87")),))
    problems = " ".join(cat.matrix_conflicts(bad))
    assert "SM103 needs CUDA >= 12.9" in problems
    assert "SM121 needs CUDA >= 13.0" in problems
    assert "SM87 cannot be built" in problems
    late = replace(b, cuda_groups=(replace(b.cuda_groups[0], version="13.0", archs=("sm61",)),))
    assert "SM61 is not supported after CUDA 12.9" in " ".join(cat.matrix_conflicts(late))


def test_package_names_round_trip(cat):
    for b in cat.branches.values():
        for v in b.variants:
            p = parse_package_name(v.package)
            assert p is not None
            assert (p.kind, p.python, p.cuda, p.gpu_arch, p.cpu_isa, p.is_darwin) == (
                v.kind, v.python, v.cuda, v.gpu_arch, v.cpu_isa, v.darwin)
            assert package_name(p.kind, p.python, cuda=p.cuda, gpu_arch=p.gpu_arch, cpu_isa=p.cpu_isa,
                                darwin=p.is_darwin) == v.package
    assert parse_package_name("pytorch-py313-sm90-avx512") is None


def test_broken_data_is_a_clear_catalog_error(tmp_path):
    from config.catalog import DATA_DIR

    for f in DATA_DIR.glob("*.toml"):
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "branches.toml").write_text("[branch.x]\npytorch = 1\n[[branch.x.cuda]\n")
    with pytest.raises(CatalogError, match="not valid TOML"):
        build_catalog(tmp_path)
    (tmp_path / "branches.toml").write_text(
        '[defaults]\nrecommended = "x"\n[branch.x]\npytorch = "2.9"\npython = "3.13"\npin = "0"\n'
        '[[branch.x.cuda]]\nversion = "12.8"\narchs = ["sm121"]\n')
    with pytest.raises(CatalogError, match=re.escape("SM121 needs CUDA >= 13.0")):
        build_catalog(tmp_path)


def test_vtuple():
    assert vtuple("12.9.1") == (12, 9, 1) and vtuple("TBD") == () and vtuple("535.104.05") > vtuple("525.60.13")
