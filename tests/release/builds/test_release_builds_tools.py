"""Builds run where they can: `flox build` when flox is on PATH, else `nix-build` of the same
recipe expression (real nix-build of the fixture recipes), else one line saying neither is
there. The PATH each case sees is made in a temporary directory from the real tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from release.adapters.flox import NIX_BUILD
from release.builds import run as builds
from tests.support import fixtures_builds as fx

ROOT = Path(__file__).resolve().parents[3]


def tools_dir(tmp_path: Path, *names: str) -> Path:
    """A directory holding links to the named real tools (and nothing else)."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    for name in names:
        found = shutil.which(name)
        assert found, f"{name} is needed for this test"
        (d / name).symlink_to(found)
    return d


FAKE_FLOX = """#!/bin/sh
# a stand-in for flox: records how it was called, builds the recipe with nix-build as flox does
echo "$@" >> "{calls}"
[ "$1" = build ] || exit 2
exec nix-build --option substituters '' ".flox/pkgs/$2.nix" -o "result-$2"
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return fx.make_repo(tmp_path)


def test_without_flox_the_recipe_is_built_with_nix_build(tmp_path: Path, repo: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tools_dir(tmp_path, "git", "nix-build", "nix-store", "nix-instantiate")))
    monkeypatch.setenv("NIX_CONFIG", "substituters =")  # offline: nothing to substitute
    ctx = fx.context(tmp_path, build_command=None)
    plan = builds.prepare(ctx, fx.BRANCH, [fx.OK[0], fx.FAILING], repo=repo)
    assert plan.tool.startswith("local builds use nix-build (") and plan.tool.endswith("flox is not on PATH")
    assert "Local builds use nix-build" in plan.text()
    rows = {r["package"]: r for r in builds.run_local(ctx, plan)}
    assert rows[fx.OK[0]]["state"] == "succeeded" and rows[fx.FAILING]["state"] == "failed"
    log = Path(rows[fx.OK[0]]["log"]).read_text()
    assert log.startswith("$ nix-build -E ") and f"--arg recipe ./.flox/pkgs/{fx.OK[0]}.nix" in log
    assert "torchbot: ok /nix/store/" in log


def test_the_nix_build_expression_calls_callpackage_recipes_with_nixpkgs(tmp_path: Path) -> None:
    """A recipe in callPackage form (`{ python3Packages, lib }:`) gets <nixpkgs>, as flox gives
    it its packages; one with defaults (`{ pkgs ? … }:`) is called with them."""
    nixpkgs = tmp_path / "nixpkgs"
    nixpkgs.mkdir()
    (nixpkgs / "default.nix").write_text(
        "{ ... }: rec { marker = \"from-nixpkgs\"; callPackage = f: extra: f { inherit marker; } // extra; }\n")
    pkgs = tmp_path / ".flox" / "pkgs"
    pkgs.mkdir(parents=True)
    (pkgs / "needs.nix").write_text("{ marker }: derivation { name = marker; system = builtins.currentSystem;"
                                    " builder = \"/bin/sh\"; args = [ \"-c\" \"echo > $out\" ]; }\n")
    (pkgs / "defaults.nix").write_text("{ marker ? \"own-default\" }: derivation { name = marker;"
                                       " system = builtins.currentSystem; builder = \"/bin/sh\";"
                                       " args = [ \"-c\" \"echo > $out\" ]; }\n")
    for package, name in (("needs", "from-nixpkgs"), ("defaults", "own-default")):
        cmd = NIX_BUILD.format(package=package).replace("nix-build ", "nix-instantiate ", 1).replace(
            f" -o result-{package}", "")
        r = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True, check=False,
                           env={**os.environ, "NIX_PATH": f"nixpkgs={nixpkgs}"})
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().endswith(f"-{name}.drv")


def test_flox_is_used_when_it_is_on_path(tmp_path: Path, repo: Path, monkeypatch) -> None:
    bin_dir = tools_dir(tmp_path, "git", "nix-build", "nix-store", "nix-instantiate")
    calls = tmp_path / "flox-calls"
    flox = bin_dir / "flox"
    flox.write_text(FAKE_FLOX.format(calls=calls))
    flox.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    ctx = fx.context(tmp_path, build_command=None)
    plan = builds.prepare(ctx, fx.BRANCH, [fx.OK[0]], repo=repo)
    assert plan.tool == f"local builds use flox build ({flox})"
    assert [r["state"] for r in builds.run_local(ctx, plan)] == ["succeeded"]
    assert calls.read_text() == f"build {fx.OK[0]}\n"


def test_neither_flox_nor_nix_build_is_one_line_naming_both(tmp_path: Path, repo: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(PATH=str(tools_dir(tmp_path, "git")), PYTHONPATH=str(ROOT),
               TORCHBOT_STATE_DB=f"sqlite:///{tmp_path / 'state.sqlite'}", TORCHBOT_LOG_DIR=str(tmp_path / "logs"))
    r = subprocess.run([sys.executable, "-m", "bot", "release", "build", "--repo", str(repo), "--branch",
                        fx.BRANCH], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "torchbot: local builds: neither flox nor nix-build is on PATH (install one, set TORCHBOT_BUILD_COMMAND, "
        "or build on GitHub with --backend github)."]
    # a GitHub build needs neither
    r = subprocess.run([sys.executable, "-m", "bot", "release", "build", "--repo", str(repo), "--branch",
                        fx.BRANCH, "--backend", "github", "--dry-run"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.startswith("Build 4 variant(s)"), r.stderr
