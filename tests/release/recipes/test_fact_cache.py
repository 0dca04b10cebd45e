"""The recipe-facts cache gives back exactly the facts it was given: JSON turns tuples into lists,
and a fact read from the cache must equal the fact read from the recipe (a test that read the
cache after another test filled it saw ``listed_platforms`` as a list)."""

from __future__ import annotations

from config.catalog import TorchSource
from release.recipes.factcache import _from_json, _to_json
from release.recipes.facts import RecipeFacts


def test_every_field_survives_the_cache_with_its_type() -> None:
    fact = RecipeFacts(
        file=".flox/pkgs/pytorch-python313-cpu-avx2.nix", package="pytorch-python313-cpu-avx2", kind="pytorch",
        pins=("a" * 40,), gpu_targets=("9.0",), cpu_flags=("-mavx2", "-mfma"),
        platforms=("x86_64-linux",), listed_platforms=("x86_64-linux", "aarch64-linux"),
        patches=("magma",), notes=("a note",), torch_source=TorchSource("2.10.0", "sha256-x"),
    )
    back = _from_json(_to_json(fact))
    assert back == fact
    assert isinstance(back.listed_platforms, tuple)
