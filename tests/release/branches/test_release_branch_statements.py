"""A derived branch says only true things: every statement its source's recipes, README and
manifest make about the source (pins, Python, vLLM and PyTorch versions) says the new branch's
facts, statements about build-vllm follow the new branch's pairing and never give a build-vllm
branch a pin it does not have; an unpinned branch is said plainly. On the repository of
tests/support/fixtures_pairing.py, with nixpkgs facts from a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re

import pytest

from bot.frontends.cli.main import main as cli
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pairing import CUDA_SETS, PIN_V13, PIN_V14, PIN_V15, TORCH, make_pairing_repo
from tests.support.fixtures_pins import git, served, tree_files

SRC = "pytorch-2.9-vllm-0.15.1"
OTHERS = ("main", SRC, "pytorch-2.9-vllm-0.13.0", "cuda-12_9", "pytorch-2.8-python313")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    r = make_pairing_repo(tmp_path)
    with FakeNixpkgs() as fake:
        for pin, torch in TORCH.items():
            fake.add_rev(pin, torch, CUDA_SETS)
        with served(monkeypatch, r.path, fake, TORCHBOT_LOCAL_BRANCHES=str(tmp_path / "branches.toml")):
            yield r


def create(capsys, *args) -> dict:
    rc = cli(["release", "branch", "create", *args, "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def about_this_branch(readme: str, name: str) -> list[str]:
    """The README lines that speak about the branch itself: not rows or lines naming another branch."""
    others = [o for o in OTHERS if o != name]
    return [line for line in readme.splitlines()
            if not any(re.search(rf"(?<![\w.-]){re.escape(o)}(?![\w-])", line) for o in others)]


def says_any(text: str, *facts: str) -> list[str]:
    return [f for f in facts if re.search(rf"(?<![\w.]){re.escape(f)}(?![\w])", text)]


def test_a_derived_vllm_branch_states_its_own_facts_and_pairs_with_vllm_of_its_version(repo, capsys):
    new = "pytorch-2.9-vllm-0.14.0"
    data = create(capsys, new, "--from", SRC, "--pytorch", "2.9", "--python", "3.12", "--pin", PIN_V14)
    assert any("build-vllm/main -> build-vllm/vllm-0.14.0" in n for n in data["notes"])
    recipes = tree_files(repo.path, new)
    assert len(recipes) == 3
    for path, text in recipes.items():
        # nothing about the source is left: its pin (full or short), Python, vLLM version, build-vllm branch
        assert says_any(text, PIN_V15, PIN_V15[:7], "3.13", "python313", "0.15.1", "build-vllm/main") == [], path
        assert "- Python: 3.12" in text and "python312Packages" in text and PIN_V14 in text
        assert f"nixpkgs {PIN_V14[:7]}" in text and "build-vllm/vllm-0.14.0" in text
        if "cuda" in path:
            assert "(vLLM 0.14.0," in text
    readme = repo.show(new, "README.md")
    mine = [line for line in about_this_branch(readme, new) if "To add Python" not in line]  # other Pythons
    assert says_any("\n".join(mine), PIN_V15[:7], "3.13", "python313", "0.15.1", "build-vllm/main") == []
    # the table headed by refs: the other repository's column follows the pairing, at the new branch's pin
    assert f"| Property | `build-vllm/vllm-0.14.0` | `{new}` |" in readme
    assert f"| Nixpkgs pin | `{PIN_V14[:7]}` | `{PIN_V14[:7]}` |" in readme
    assert "| Python | 3.12 | 3.12 |" in readme
    assert "[`build-vllm/vllm-0.14.0`]" in readme and "point the vLLM 0.14.0 build at it" in readme
    assert "Current variants use Python 3.12. To add Python 3.13 or 3.11 variants" in readme
    assert f"**You are on the `{new}` branch** — PyTorch 2.9.1 + CUDA 12.9 (3 variants, vLLM 0.14.0 pairing)" in readme
    # the source keeps its own rows, as another branch
    assert f"| `{SRC}` | 2.9.1 | 12.9 | 3 | vLLM 0.15.1 pairing (nixpkgs `{PIN_V15[:7]}`) |" in readme
    manifest = repo.show(new, ".flox/env/manifest.toml")
    assert "python312Full" in manifest and "Python Version: 3.12" in manifest and "313" not in manifest


def test_a_pairing_another_readme_places_on_another_pin_is_not_claimed(repo, capsys):
    """build-vllm/vllm-0.13.0 is on PIN_V13 (the 0.13.0 branch's README): a 0.13.0 branch on PIN_V14
    says nothing about it rather than give it a pin it does not have."""
    new = "pytorch-2.9-vllm-0.13.0-python311"
    data = create(capsys, new, "--from", SRC, "--pytorch", "2.9", "--python", "3.11", "--pin", PIN_V14)
    assert any(f"build-vllm/vllm-0.13.0 is on nixpkgs {PIN_V13[:7]}" in n and "left out" in n for n in data["notes"])
    texts = [*tree_files(repo.path, new).values(), repo.show(new, "README.md")]
    for text in texts:
        assert "build-vllm/" not in text and "0.15.1" not in "\n".join(about_this_branch(text, new))
    readme = repo.show(new, "README.md")
    assert "## Pairing with vLLM" not in readme and "### What the two builds share" not in readme
    assert "## Python" in readme and "## Version Matrix" in readme


def test_a_derived_python_branch_keeps_no_vllm_pairing(repo, capsys):
    new = "pytorch-2.9-python312"
    data = create(capsys, new, "--from", SRC, "--pytorch", "2.9", "--python", "3.12", "--pin", PIN_V14)
    assert any("certifies no vLLM version" in n for n in data["notes"])
    for path, text in tree_files(repo.path, new).items():
        assert says_any(text, PIN_V15[:7], "3.13", "0.15.1", "build-vllm/main", "vLLM") == [], path
        assert "        - Python: 3.12\n      '';\n" in text  # the paragraph about the pairing went, and only it
    readme = repo.show(new, "README.md")
    mine = [line for line in about_this_branch(readme, new) if "To add Python" not in line]
    assert says_any("\n".join(mine), PIN_V15[:7], "3.13", "0.15.1", "build-vllm") == []
    assert "## Pairing with vLLM" not in readme
    assert f"**You are on the `{new}` branch** — PyTorch 2.9.1 + CUDA 12.9 (3 variants, Python 3.12)" in readme
    own = next(line for line in readme.splitlines() if line.startswith(f"| **`{new}`**") and "Key" not in line)
    assert "vLLM" not in own and "Python 3.12" in own


def test_unpinned_branches_are_said_plainly_by_branch_create_and_docs_write(repo, capsys):
    new = "pytorch-2.9-python312"
    create(capsys, new, "--from", SRC, "--pytorch", "2.9", "--python", "3.12", "--pin", PIN_V14)
    readme = repo.show(new, "README.md")
    row = next(line for line in readme.splitlines() if line.startswith("| `main` | 2.8.0 | - | 3.13"))
    assert row.endswith("| unpinned (nixpkgs from `flox build`) |") and "tree/none" not in row
    assert cli(["release", "docs", "--write"]) == 0
    capsys.readouterr()
    for branch in git(repo.path, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split():
        readme = repo.show(branch, "README.md")
        assert "tree/none" not in readme, branch
        assert "| `main` | 2.8.0 | - | 3.13 | unpinned (nixpkgs from `flox build`) |" in readme or \
            "| **`main`** ⬅️ | **2.8.0** | **-** | **3.13** | unpinned (nixpkgs from `flox build`) |" in readme, branch
    # and a README that says so plainly is not drift
    assert cli(["release", "docs", "--check"]) == 0


def test_an_unpinned_source_has_no_pin_to_move(repo, capsys):
    rc = cli(["release", "branch", "create", "pytorch-2.8-python312", "--from", "main", "--pytorch", "2.8",
              "--python", "3.12", "--pin", PIN_V14])
    err = capsys.readouterr().err
    assert rc == 1 and "'main' is unpinned" in err and "Nothing was created" in err
