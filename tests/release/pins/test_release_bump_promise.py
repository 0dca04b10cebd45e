"""Pin bumps on repositories in the real shapes (tests/support/fixtures_realshapes.py): the guards check
the branch's promise (not the old pin's torch), every CUDA set incl. the cudaPackages_13 alias,
and the README edit stays on the bumped branch's rows even where branches share a pin."""

from __future__ import annotations

import re

import pytest

from config.errors import RefusedError
from config.settings import Settings
from release.context import Context
from release.pins.commands import plan_bump
from release.pins.readme import scoped_readme_edit
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git, refs
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, make_pytorch_repo

TORCH_28 = "1111000011110000111100001111000011110000"  # torch 2.8.1, every CUDA set
TORCH_292 = "2222000022220000222200002222000022220000"  # torch 2.9.2, CUDA 12.x and 13.x
NO_ALIAS = "3333000033330000333300003333000033330000"  # torch 2.9.1, cudaPackages_13_0 but no cudaPackages_13
ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}


@pytest.fixture
def fake():
    with FakeNixpkgs() as f:
        f.add_rev(PIN_MAIN, "2.8.0", ALL)
        for pin in (PIN_12_X, PIN_13_0, PIN_13_1):
            f.add_rev(pin, "2.9.1", ALL)
        f.add_rev(TORCH_28, "2.8.1", ALL)
        f.add_rev(TORCH_292, "2.9.2", ALL)
        f.add_rev(NO_ALIAS, "2.9.1", ALL - {"cudaPackages_13"})
        yield f


@pytest.fixture
def pt(tmp_path, fake, monkeypatch):
    repo = make_pytorch_repo(tmp_path)
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(repo.path))
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", fake.channels_url)
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("TORCHBOT_NIXPKGS_TARBALL_URL", fake.tarball_url)
    monkeypatch.setenv("TORCHBOT_HTTP_RETRIES", "1")
    return repo


def ctx() -> Context:
    return Context(Settings(), use_repo=False)


def test_a_declared_291_branch_is_not_bumped_to_torch_28(pt):
    before = refs(pt.path)
    with pytest.raises(RefusedError) as info:
        plan_bump(ctx(), "pytorch-2.9-python311", TORCH_28)
    msg = info.value.message
    # the promise (and where it is declared) and what the new pin has
    assert "promises PyTorch 2.9.1" in msg and "branch name" in msg and "torch 2.8.1" in msg
    assert refs(pt.path) == before


def test_old_and_new_pin_agreeing_is_not_enough(pt, fake):
    """The old guard compared the old pin's torch with the new one's: with both at 2.8.1 it let a
    2.9 branch through. The promise is what counts."""
    fake.torch[PIN_12_X] = "2.8.1"
    with pytest.raises(RefusedError, match=re.escape("promises PyTorch 2.9.1")):
        plan_bump(ctx(), "pytorch-2.9-python311", TORCH_28)


def test_source_override_keeps_the_promise_whatever_nixpkgs_has(pt):
    plan = plan_bump(ctx(), "pytorch-2.10-python313", TORCH_28, cuda="13.1")
    bp = plan.data.branches[0]
    assert bp.edit.changes and bp.torch_new == "2.8.1"
    assert any("source override" in n for n in bp.notes)


def test_major_alias_cuda_set_must_exist(pt):
    before = refs(pt.path)
    with pytest.raises(RefusedError) as info:
        plan_bump(ctx(), "pytorch-2.10-python313", NO_ALIAS, cuda="13.0")
    msg = info.value.message
    assert "cudaPackages_13 (" in msg and "it has cudaPackages_13_1" in msg
    assert refs(pt.path) == before


def test_two_branches_sharing_a_pin_keep_each_others_rows(pt):
    shared = PIN_12_X[:7]
    others = {b: git(pt.path, "show", f"{b}:README.md") for b in ("pytorch-2.9-vllm-0.14.0", "pytorch-2.10-python313")}
    readme = git(pt.path, "show", "pytorch-2.9-python311:README.md")
    plan_bump(ctx(), "pytorch-2.9-python311", TORCH_292).apply()
    after = git(pt.path, "show", "pytorch-2.9-python311:README.md")
    changed = [(a, b) for a, b in zip(readme.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed and all("pytorch-2.9-python311" in a for a, _ in changed)
    for line in after.splitlines():
        if line.startswith(("| `pytorch-2.9-vllm-0.14.0`", "| `pytorch-2.10-python313`")):
            assert TORCH_292[:7] not in line
    assert sum(shared in line for line in after.splitlines()) == sum(
        shared in line for line in readme.splitlines() if "pytorch-2.9-python311" not in line)
    # the other branches were not touched at all
    for b, text in others.items():
        assert git(pt.path, "show", f"{b}:README.md") == text
    # and the vLLM branch bumped with --force leaves python311's rows in its README alone
    readme = git(pt.path, "show", "pytorch-2.9-vllm-0.14.0:README.md")
    plan_bump(ctx(), "pytorch-2.9-vllm-0.14.0", TORCH_292, force=True).apply()
    after = git(pt.path, "show", "pytorch-2.9-vllm-0.14.0:README.md")
    for a, b in zip(readme.splitlines(), after.splitlines(), strict=True):
        if "pytorch-2.9-vllm-0.14.0" not in a:
            assert a == b


# A README in the real READMEs' shapes (own text): continuation rows, a table whose columns are
# headed by refs of two repositories, prose naming another repository.
PIN_OLD = "4633000046330000463300004633000046330000"
PIN_NEW = "9999000099990000999900009999000099990000"
SHAPES = f"""# Builds

| Branch | PyTorch | CUDA | Python | Nixpkgs Pin |
|--------|---------|------|--------|-------------|
| **`b-vllm`** ⬅️ | **2.9.1** | **12.9** | **3.12** | [**`{PIN_OLD[:7]}`**](https://github.com/NixOS/nixpkgs/tree/{PIN_OLD}) |
| | | **12.8** | **3.12** | [**`{PIN_OLD[:7]}`**](https://github.com/NixOS/nixpkgs/tree/{PIN_OLD}) |
| `b-py311` | 2.9.1 | 12.9 | 3.11 | [`{PIN_OLD[:7]}`](https://github.com/NixOS/nixpkgs/tree/{PIN_OLD}) |
| | | 12.8 | 3.11 | [`{PIN_OLD[:7]}`](https://github.com/NixOS/nixpkgs/tree/{PIN_OLD}) |

This branch is pin-aligned with [`other-repo/main`](https://example.invalid) at `{PIN_OLD[:7]}`.

| Property | `other-repo/main` | `b-vllm` |
|----------|-------------------|----------|
| Nixpkgs pin | `{PIN_OLD[:7]}` | `{PIN_OLD[:7]}` |

| Group | Note |
|-------|------|
| **CUDA 12.8 variants** | **Same pin `{PIN_OLD[:7]}`, driver 550+** |

CUDA 12.8 recipes use nixpkgs [`{PIN_OLD[:7]}`](https://github.com/NixOS/nixpkgs/tree/{PIN_OLD}).
"""  # noqa: E501  (verbatim text)


def test_scoped_edit_in_the_real_table_shapes():
    edit = scoped_readme_edit(SHAPES, "b-vllm", PIN_OLD, PIN_NEW, branches={"b-vllm", "b-py311"})
    old, new = SHAPES.splitlines(), edit.text.splitlines()
    changed = {i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b}
    by_text = dict(enumerate(old))
    # b-vllm's row and its continuation row, its column, its own group note and prose
    assert {by_text[i][:12] for i in changed} == {
        "| **`b-vllm`", "| | | **12.8", "| Nixpkgs pi", "| **CUDA 12.", "CUDA 12.8 re"}
    row = next(line for line in new if line.startswith("| Nixpkgs pin"))
    assert row == f"| Nixpkgs pin | `{PIN_OLD[:7]}` | `{PIN_NEW[:7]}` |"  # other-repo/main's column kept
    # b-py311's rows (continuation included) and the line about the other repository are kept
    assert all(PIN_OLD in line for line in new if line.startswith("| `b-py311`"))
    assert old[7].startswith("| | | 12.8 | 3.11") and new[7] == old[7]
    assert "pin-aligned" in new[9] and PIN_OLD[:7] in new[9]
    assert any("other-repo/main" in n for n in edit.left_as_written)
    assert edit.text.replace(PIN_NEW, PIN_OLD).replace(PIN_NEW[:7], PIN_OLD[:7]) == SHAPES


PASSAGES = f"""# Builds

```bash
# nixpkgs `{PIN_OLD[:7]}`, this branch
flox build pytorch-python312-cuda12_9-sm90-avx512

# nixpkgs `{PIN_OLD[:7]}` too, for Python 3.11
git checkout b-py311 && flox build pytorch-python311-cuda12_9-sm90-avx512
```

The Python 3.11 builds are on nixpkgs `{PIN_OLD[:7]}`,
which `b-py311` keeps until its own bump.
"""


def test_a_passage_about_another_branch_keeps_its_pin_even_on_lines_that_name_none():
    # a comment above `git checkout b-py311`, or a paragraph naming only b-py311, is about b-py311
    edit = scoped_readme_edit(PASSAGES, "b-vllm", PIN_OLD, PIN_NEW, branches={"b-vllm", "b-py311"})
    new = edit.text.splitlines()
    assert new[3] == f"# nixpkgs `{PIN_NEW[:7]}`, this branch"  # the branch's own command
    assert new[6] == f"# nixpkgs `{PIN_OLD[:7]}` too, for Python 3.11"
    assert new[10] == f"The Python 3.11 builds are on nixpkgs `{PIN_OLD[:7]}`,"
    assert sorted(edit.left_as_written) == [f"line 11: mentions {PIN_OLD[:7]} in a passage about b-py311",
                                            f"line 7: mentions {PIN_OLD[:7]} in a passage about b-py311"]
