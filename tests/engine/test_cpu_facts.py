"""CPU facts: torchbot's microarchitecture flags come from archspec where archspec knows the
microarchitecture, and agree with it where torchbot keeps its own."""

import pytest
from archspec.cpu import TARGETS


def archspec_flags(cat, name):
    return frozenset(TARGETS[name].features) & cat.relevant_flags


def test_every_archspec_reference_resolves_and_its_flags_are_archspecs(cat):
    backed = [u for u in cat.uarchs.values() if u.archspec]
    assert len(backed) >= 25
    for u in backed:
        assert u.archspec in TARGETS, u.key
        assert u.flags == archspec_flags(cat, u.archspec), u.key
        assert u.arch == TARGETS[u.archspec].family.name


def test_own_flags_only_where_archspec_lacks_the_microarchitecture(cat):
    own = [u for u in cat.uarchs.values() if not u.archspec]
    assert {u.key for u in own} >= {"graniterapids", "sierraforest", "emeraldrapids", "cooperlake", "tigerlake"}
    for u in own:
        if u.key in TARGETS:  # archspec learned it since: the two must agree
            assert u.flags == archspec_flags(cat, u.key), u.key
        # what torchbot adds extends a microarchitecture archspec knows, never contradicts it
        assert u.nearest in TARGETS, f"{u.key} needs `nearest`: the archspec microarchitecture it extends"
        assert archspec_flags(cat, u.nearest) <= u.flags, (u.key, archspec_flags(cat, u.nearest) - u.flags)
        assert u.arch == TARGETS[u.nearest].family.name


def test_flag_names_are_the_ones_archspec_and_cpuinfo_use(cat):
    known = set().union(*(t.features for t in TARGETS.values()))
    assert cat.relevant_flags <= known, cat.relevant_flags - known
    for isa in cat.isas.values():
        assert isa.requires <= known, isa.key


@pytest.mark.parametrize("uarch,has,lacks", [
    ("neoverse_v1", {"sve", "asimddp"}, {"sve2"}),  # Graviton3: SVE but not SVE2
    ("neoverse_v2", {"sve", "sve2"}, set()),  # Grace, Graviton4
    ("neoverse_n1", {"asimddp", "fphp"}, {"sve"}),  # Graviton2, Altra
    ("zen4", {"avx512f", "avx512_vnni", "avx512_bf16"}, set()),
    ("zen3", {"avx2"}, {"avx512f"}),
    ("sapphirerapids", {"avx512_bf16", "amx_bf16", "amx_int8"}, set()),
    ("icelake", {"avx512_vnni"}, {"avx512_bf16"}),
    ("cascadelake", {"avx512_vnni"}, {"avx512_bf16"}),
    ("skylake_sp", {"avx512f", "avx512bw"}, {"avx512_vnni"}),
    ("alderlake", {"avx2", "avx_vnni"}, {"avx512f", "avx512_vnni"}),
    ("knightslanding", {"avx512f"}, {"avx512dq", "avx512vl", "avx512bw"}),
    ("ampereone", {"asimddp", "bf16"}, {"sve"}),
    ("cortex_a72", {"asimd"}, {"asimddp", "fphp"}),
])
def test_the_facts_selection_depends_on(cat, uarch, has, lacks):
    flags = cat.uarchs[uarch].flags
    assert has <= flags and not (lacks & flags)
