"""`release branch create` derives from its source branch, on repositories in the real shapes
(tests/support/fixtures_realshapes.py) with nixpkgs facts from a real HTTP server on 127.0.0.1: the new
recipes are the source's with names, Python, CUDA set and pin changed and every other line kept
(source override, magma patch overlay, build settings); --pytorch must be what they build."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from bot.frontends.cli.main import main as cli
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git, refs, served, tree_files
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, make_pytorch_repo

SRC = "pytorch-2.10-python313"
TORCH_211 = "e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1"  # a pin whose nixpkgs has torch 2.11.0
NO_13 = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"  # torch 2.9.1, no cudaPackages_13 alias
ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}
NEW_HASH = "sha256-" + "B" * 43 + "="


@pytest.fixture
def pt(tmp_path, monkeypatch):
    repo = make_pytorch_repo(tmp_path)
    with FakeNixpkgs() as fake:
        fake.add_rev(PIN_MAIN, "2.8.0", ALL)
        for pin in (PIN_12_X, PIN_13_0, PIN_13_1):
            fake.add_rev(pin, "2.9.1", ALL)
        fake.add_rev(TORCH_211, "2.11.0", ALL)
        fake.add_rev(NO_13, "2.9.1", ALL - {"cudaPackages_13"})
        with served(monkeypatch, repo.path, fake, TORCHBOT_LOCAL_BRANCHES=str(tmp_path / "branches.toml")):
            yield repo


def create(*args) -> list[str]:
    return ["release", "branch", "create", *args]


def block(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def test_python_variant_keeps_the_source_override_and_the_patch_overlay(pt, tmp_path, capsys):
    (pt.path / "scratch.txt").write_text("mine\n")
    status, before = git(pt.path, "status", "--porcelain"), refs(pt.path)
    rc = cli(create("pytorch-2.10-python312", "--from", SRC, "--pytorch", "2.10", "--python", "3.12",
                    "--pin", PIN_13_0, "--json"))
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(out)
    assert data["pytorch"] == {"version": "2.10.0", "how": f"source override 2.10.0 (kept from {SRC})",
                               "nixpkgs": "2.9.1"}
    src = tree_files(pt.path, SRC)
    new = tree_files(pt.path, "pytorch-2.10-python312")
    assert sorted(p.replace("python313", "python312") for p in src) == sorted(new)
    for path, text in src.items():
        derived = new[path.replace("python313", "python312")]
        # the source override (on python312Packages now, so it still applies) and the magma patch overlay
        if "magma" in text:
            assert block(derived, "# MAGMA", "# torch from source") == block(text, "# MAGMA", "# torch from source")
        override = block(text, "# torch from source", "\n    ];")
        assert block(derived, "# torch from source", "\n    ];") == override.replace(
            "python3Packages", "python312Packages"
        )
        assert (
            ('version = "2.10.0"' in derived and "-DTORCH_BUILD_VERSION=2.10.0" in derived)
            or "cpu" in path
            or "darwin" in path
        )
        # every other line kept; changed lines only carry the new names, Python and pin
        for a, b in zip(text.splitlines(), derived.splitlines(), strict=True):
            if a != b:
                assert b == a.replace("python3Packages", "python312Packages").replace("python313", "python312").replace(
                    PIN_13_1, PIN_13_0).replace(PIN_12_X, PIN_13_0), (a, b)
        assert len(text.splitlines()) == len(derived.splitlines())
        assert PIN_13_0 in derived and "python3Packages" not in derived
    d = tmp_path / "parse"
    d.mkdir()
    for path, text in new.items():
        (d / path.rsplit("/", 1)[1]).write_text(text)
    if shutil.which("nix-instantiate"):
        r = subprocess.run(
            ["nix-instantiate", "--parse", *map(str, d.iterdir())], check=False, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
    # the README is the source's with the new branch's facts; the source keeps a row of its own
    readme = git(pt.path, "show", "pytorch-2.10-python312:README.md")
    src_readme = git(pt.path, "show", f"{SRC}:README.md")
    assert "This README belongs to `pytorch-2.10-python312`." in readme
    own = [line for line in readme.splitlines() if line.startswith("| **`pytorch-2.10-python312`**")]
    assert own and all("**3.12**" in line and f"**{len(new)}**" in line for line in own)
    assert any(line.startswith(f"| `{SRC}` |") for line in readme.splitlines())
    assert len(readme.splitlines()) >= len(src_readme.splitlines())
    # only the new branch appeared; the user's checkout is as it was
    after = refs(pt.path)
    assert {k for k in after if after[k] != before.get(k)} == {"refs/heads/pytorch-2.10-python312"}
    assert git(pt.path, "status", "--porcelain") == status


def test_a_211_branch_on_a_pin_with_torch_29_is_refused(pt, capsys):
    before = refs(pt.path)
    rc = cli(create("pytorch-2.11-python313", "--from", SRC, "--pytorch", "2.11", "--pin", PIN_13_0))
    err = capsys.readouterr().err
    assert rc == 1
    assert "--pytorch 2.11" in err and "torch 2.9.1" in err and "override it to 2.10.0" in err and "--torch-src" in err
    assert refs(pt.path) == before and "Traceback" not in err


def test_a_pin_with_torch_211_natively_is_refused_while_the_source_overrides_it(pt, capsys):
    rc = cli(create("pytorch-2.11-python313", "--from", SRC, "--pytorch", "2.11", "--pin", TORCH_211))
    err = capsys.readouterr().err
    assert rc == 1 and "torch 2.11.0 natively" in err and "does not remove overlays" in err


def test_torch_src_gives_a_new_source_override(pt, capsys):
    rc = cli(create("pytorch-2.11-python313", "--from", SRC, "--pytorch", "2.11.0", "--pin", PIN_13_0,
                    "--torch-src", f"v2.11.0,{NEW_HASH}", "--summary", "PyTorch 2.11 preview", "--json"))
    out = capsys.readouterr().out
    assert rc == 0, out
    src = tree_files(pt.path, SRC)
    new = tree_files(pt.path, "pytorch-2.11-python313")
    assert set(new) == set(src)
    for path, text in new.items():
        assert 'version = "2.11.0"' in text and NEW_HASH in text and "2.10.0" not in text
        assert 'rev = "v${version}"' in text
        if "magma" in src[path]:
            assert block(text, "# MAGMA", "# torch from source") == block(src[path], "# MAGMA", "# torch from source")
    assert "pytorch211-python313-cuda13_0-sm90-avx512" in new[".flox/pkgs/pytorch-python313-cuda13_0-sm90-avx512.nix"]
    assert json.loads(out)["definition"]["summary"] == "PyTorch 2.11 preview"
    # a --torch-src that is not REV,HASH is refused before anything is asked
    rc = cli(create("pytorch-2.12-python313", "--from", SRC, "--pytorch", "2.12.0", "--pin", PIN_13_0,
                    "--torch-src", "v2.12.0"))
    assert rc == 1 and "REV,HASH" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["unknown-pin", "missing-cuda-set", "arch-not-built", "arch-too-new-for-cuda"])
def test_refusals_create_nothing(pt, case, capsys):
    before = refs(pt.path)
    args = ["pytorch-2.10-python312", "--from", SRC, "--pytorch", "2.10", "--python", "3.12", "--pin", PIN_13_0]
    if case == "unknown-pin":
        args[-1], expect = "9" * 40, "nixpkgs has no commit"
    elif case == "missing-cuda-set":
        args[-1], expect = NO_13, "cudaPackages_13 ("
    elif case == "arch-not-built":
        args += ["--gpu", "sm75"]
        expect = "sm75 is not built by 'pytorch-2.10-python313'"
    else:
        args += ["--cuda", "12.9", "--gpu", "sm121"]
        expect = "SM121 needs CUDA >= 13.0, not 12.9"
    rc = cli(create(*args))
    err = capsys.readouterr().err
    assert rc == 1 and expect in err, err
    assert refs(pt.path) == before


def test_only_the_gpu_architectures_the_source_builds_are_carried_over(pt, capsys):
    """From a 2.9 branch (sm70, sm86, sm90 on CUDA 12.9 / 12.8) to CUDA 13.0: the 13.0 recipes come
    from the 12.9 ones, sm70 (not built after CUDA 12.9) is left out, nothing is added."""
    rc = cli(create("pytorch-2.9-python312", "--from", "pytorch-2.9-python311", "--pytorch", "2.9",
                    "--python", "3.12", "--cuda", "13.0,12.8", "--pin", PIN_12_X, "--json"))
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(out)
    assert sorted(data["packages"]) == [
        "pytorch-python312-cpu-avx2",
        "pytorch-python312-cuda12_8-sm86-avx2",
        "pytorch-python312-cuda13_0-sm90-avx512",
    ]
    assert any("CUDA 13.0 cannot build sm70" in n for n in data["notes"])
    text = tree_files(pt.path, "pytorch-2.9-python312")[".flox/pkgs/pytorch-python312-cuda13_0-sm90-avx512.nix"]
    assert "cudaPackages_13_0" in text and "cudaPackages_12_9" not in text and "python312Packages" in text
