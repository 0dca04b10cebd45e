"""release.pins (pure) and release.nixpkgs (HTTP adapter against a real local server)."""

from __future__ import annotations

import re
import time

import pytest

from config.catalog_data import load_catalog
from config.errors import ExternalError, RefusedError, ValidationError
from config.settings import Settings
from release.adapters.nixpkgs import NixpkgsClient
from release.pins import rules as pins
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import NEW, PIN_A, PIN_B, PIN_C, multi_pin, readme_text, recipe_text


@pytest.fixture(scope="module")
def branch():
    return multi_pin(load_catalog())


@pytest.fixture(scope="module")
def recipes(branch):
    return {f".flox/pkgs/{v.package}.nix": recipe_text(branch, v) for v in branch.variants}


def test_groups_of_a_three_pin_branch(recipes):
    groups = pins.find_groups(recipes)
    by_pin = {g.pin: g for g in groups}
    assert set(by_pin) == {PIN_A, PIN_B, PIN_C}
    assert by_pin[PIN_A].cuda_attrs == ("cudaPackages_12_8",)
    assert by_pin[PIN_C].labels == ("CUDA 13.1",)
    assert "CPU" in by_pin[PIN_B].labels and "darwin" in by_pin[PIN_B].labels
    assert sum(len(g.recipes) for g in groups) == len(recipes)


def test_select_group(recipes):
    groups = pins.find_groups(recipes)
    with pytest.raises(RefusedError) as info:
        pins.select_group("b", groups)
    for pin in (PIN_A, PIN_B, PIN_C):
        assert pin[:7] in info.value.message
    assert pins.select_group("b", groups, cuda="13.1").pin == PIN_C
    assert pins.select_group("b", groups, from_pin=PIN_A[:7]).pin == PIN_A
    assert pins.select_group("b", groups, cuda="13.0").pin == PIN_B
    with pytest.raises(RefusedError, match=re.escape("no recipes for CUDA 11.8")):
        pins.select_group("b", groups, cuda="11.8")
    with pytest.raises(RefusedError, match="no pin starting with"):
        pins.select_group("b", groups, from_pin="abcdef0")
    with pytest.raises(ValidationError):
        pins.select_group("b", groups, from_pin="xyz")


def test_rewrite_recipe_only_touches_that_pin(recipes):
    text = next(t for t in recipes.values() if PIN_C in t)
    out = pins.rewrite_recipe(text, PIN_C, NEW)
    assert NEW in out and PIN_C not in out
    assert out.replace(NEW, PIN_C) == text
    assert pins.rewrite_recipe(text, PIN_A, NEW) == text


def test_major_only_cuda_attr():
    text = 'overlays = [ (final: prev: { cudaPackages = final.cudaPackages_13; }) ];'
    assert pins.cuda_attrs(text) == {"cudaPackages_13"}
    assert pins.attr_version("cudaPackages_13") == "13"
    assert pins.cuda_attrs("final.cudaPackages_12_9") == {"cudaPackages_12_9"}


def test_readme_rows(branch):
    readme = readme_text([branch], branch.name)
    out = pins.rewrite_readme(readme, branch.name, PIN_C, NEW)
    changed = [(a, b) for a, b in zip(readme.splitlines(), out.splitlines(), strict=True) if a != b]
    assert len(changed) == 1
    _old_row, new_row = changed[0]
    assert "13.1" in new_row and f"[`{NEW[:7]}`](https://github.com/NixOS/nixpkgs/tree/{NEW})" in new_row
    assert pins.rewrite_readme(readme, "other-branch", PIN_C, NEW) == readme


def test_commit_message():
    assert (
        pins.commit_message(PIN_A, NEW, "2.9.1", ("cudaPackages_12_9",))
        == "nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.9.1, cudaPackages_12_9)"
    )
    assert pins.commit_message(PIN_A, NEW, "2.9.1", ()) == "nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.9.1)"


def test_plan_edit_up_to_date(recipes):
    group = pins.find_groups(recipes)[0]
    edit = pins.plan_edit("b", group, group.pin, recipes, None)
    assert edit.up_to_date and not edit.changes
    edit = pins.plan_edit("b", group, NEW, recipes, None)
    assert set(edit.changes) == set(group.recipes) and edit.lines_changed == len(group.recipes)


def test_validate_rev():
    assert pins.validate_rev(NEW.upper()) == NEW
    for bad in ("", "0123abc", NEW + "0", "g" * 40):
        with pytest.raises(ValidationError):
            pins.validate_rev(bad)


def test_two_pins_in_one_recipe_is_refused():
    text = f'url = "https://github.com/NixOS/nixpkgs/archive/{PIN_A}.tar.gz"; url2 = "https://github.com/NixOS/nixpkgs/archive/{PIN_B}.tar.gz";'
    with pytest.raises(ValidationError, match="several nixpkgs pins"):
        pins.find_groups({".flox/pkgs/x.nix": text})


# -- the HTTP adapter -------------------------------------------------------------------


@pytest.fixture
def server():
    with FakeNixpkgs() as f:
        f.add_rev(NEW, "2.9.1", {"cudaPackages_12_9", "cudaPackages_13"})
        f.channels["nixos-unstable"] = NEW + "\n"
        yield f


def client(server, retries=3) -> NixpkgsClient:
    s = Settings(channels_url=server.channels_url, github_api_url=server.api_url, http_retries=retries, http_timeout=2,
                 http_backoff_seconds=0.05)
    return NixpkgsClient(s)


def test_adapter_facts(server):
    with client(server) as c:
        assert c.channel_head("nixos-unstable") == NEW
        assert c.resolve(NEW) == NEW
        assert c.torch_version(NEW) == "2.9.1"
        assert c.has_cuda_set(NEW, "cudaPackages_12_9")
        assert c.has_cuda_set(NEW, "cudaPackages_13")
        assert not c.has_cuda_set(NEW, "cudaPackages_12_8")
        with pytest.raises(RefusedError, match="no commit"):
            c.resolve("f" * 40)
        with pytest.raises(ExternalError, match="does not exist"):
            c.channel_head("nixos-99.99")
    # a name the channel endpoint does not know falls back to the GitHub commits API
    server.branches["nixpkgs-staging"] = NEW
    with client(server) as c:
        assert c.channel_head("nixpkgs-staging") == NEW


def test_adapter_retries_with_backoff_then_fails(server):
    server.mode = "down"
    with client(server, retries=3) as c:
        t0 = time.monotonic()
        with pytest.raises(ExternalError, match="after 3 attempts"):
            c.channel_head("nixos-unstable")
        assert time.monotonic() - t0 >= 0.05 + 0.1
    assert len([r for r in server.requests if "git-revision" in r]) == 3


def test_adapter_garbage(server):
    server.mode = "garbage"
    with client(server) as c:
        with pytest.raises(ExternalError, match="not a commit id"):
            c.channel_head("nixos-unstable")
        with pytest.raises(ExternalError, match="garbage"):
            c.resolve(NEW)


def test_adapter_connection_refused():
    s = Settings(
        channels_url="http://127.0.0.1:9/",
        github_api_url="http://127.0.0.1:9/",
        http_retries=2,
        http_timeout=1,
        http_backoff_seconds=0.01,
    )
    c = NixpkgsClient(s)
    with pytest.raises(ExternalError, match="after 2 attempts"):
        c.channel_head("nixos-unstable")


def test_readme_rows_without_branch_cell_and_metadata():
    text = (
        f'<!-- torchbot:branch {{"name": "b", "pin": "{PIN_A}"}} -->\n'
        "| PyTorch | Python | CUDA | Nixpkgs |\n|---|---|---|---|\n"
        f"| 2.9.1 | 3.13 | 12.9 | [`{PIN_A[:7]}`](https://github.com/NixOS/nixpkgs/tree/{PIN_A}) |\n"
        f"| `other` | 2.9.1 | 12.9 | [`{PIN_A[:7]}`](https://github.com/NixOS/nixpkgs/tree/{PIN_A}) |\n"
        f"Prose mentioning {PIN_A} moves.\n"
    )
    out = pins.rewrite_readme(text, "b", PIN_A, NEW, branches={"b", "other"}).splitlines()
    assert NEW in out[0] and PIN_A not in out[0]
    assert f"[`{NEW[:7]}`](https://github.com/NixOS/nixpkgs/tree/{NEW})" in out[3]
    assert PIN_A in out[4]  # another branch's row keeps its pin
    assert NEW in out[5]  # prose of b's own README about its pin follows the bump
