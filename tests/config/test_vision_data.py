"""The embedded build-torchvision branches (config/data/torchvision.toml): what torchvision
answers come from without a repository, and never mixed with real branches."""

from bot.frontends.commands import ask
from config.settings import Settings
from release.context import Context
from tests.support.fixtures_realshapes import make_pytorch_repo


def test_each_embedded_torchvision_branch_pairs_with_the_pytorch_branch_of_its_version(cat):
    assert set(cat.vision) == {"main", "pytorch-2.9", "pytorch-2.10"}
    for b in cat.vision.values():
        partner = cat.branches[b.pairs_with]
        assert (b.kind, partner.pytorch[:3], partner.python) == ("build-torchvision", b.pytorch[:3], b.python)
        assert b.pairing.startswith(f"pairs with {partner.name}: PyTorch {b.pytorch}")


def test_embedded_torchvision_builds_are_ones_their_gpu_and_cpu_allow(cat):
    # the matrix sizes of the real branches when the data was written
    assert {k: len(b.variants) for k, b in cat.vision.items()} == {"main": 51, "pytorch-2.9": 58, "pytorch-2.10": 111}
    for b in cat.vision.values():
        assert len({v.package for v in b.variants}) == len(b.variants)
        for v in b.variants:
            assert v.kind == "torchvision" and v.torch_from == "inline"
            if v.gpu_arch:
                arch = cat.gpu_archs[v.gpu_arch]
                assert v.cpu_isa in (arch.isas or cat.all_isas) and cat.isas[v.cpu_isa].platform in arch.platforms
                assert v.cuda in b.cuda_versions and arch.cuda_ok(v.cuda), v.package


def test_a_torchvision_question_is_answered_from_the_embedded_branches(ctx):
    d = ask(ctx, "which torchvision for an A100 and EPYC 7763").to_dict()
    rec = d["recommendation"]
    assert (rec["package"], rec["branch"], rec["repository"]) == (
        "torchvision-python313-cuda12_9-sm80-avx2", "pytorch-2.9", None)
    assert rec["pairs_with"]["package"] == "pytorch-python313-cuda12_9-sm80-avx2"
    assert any("in build-torchvision" in r for r in d["reasons"])


def test_with_only_a_build_pytorch_repository_the_embedded_torchvision_branches_are_not_used(tmp_path):
    pt = make_pytorch_repo(tmp_path)
    cat = Context(Settings(repo_path=pt.path, repo_paths=[pt.path])).catalog
    assert cat.vision == {}
