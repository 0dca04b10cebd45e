"""A tiny build-pytorch-shaped repository for build/publish tests: a real git repo with a
local bare ``origin``, one branch whose ``.flox/pkgs/*.nix`` recipes are trivial
derivations (no nixpkgs needed), one of which fails and one companion importing its
pytorch recipe. The recipes have the real recipes' shape where the repository reader looks
(``(<pkgs>.python3Packages.torch.override {...}).overrideAttrs (old: {...})`` with
``cpuFlags``, ``gpuTargets``, ``requiredSystemFeatures = [ "big-parallel" ]`` on GPU recipes
and ``meta.platforms``), over a small stand-in for nixpkgs whose ``overrideAttrs`` makes a
plain ``derivation``. ``ARM`` and ``DARWIN`` are the aarch64-linux and aarch64-darwin variants
tests add with ``packages=``."""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

from tests.support.fixtures_realshapes import CPU_FLAGS  # the catalog's compiler flags per ISA, as fixture data

BRANCH = "pytorch-2.8-python313"
PIN = "fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3"
NEW_PIN = "0123456789abcdef0123456789abcdef01234567"

OK = [
    "pytorch-python313-cpu-avx2",
    "pytorch-python313-cuda12_8-sm90-avx512",
]
FAILING = "pytorch-python313-cuda12_8-sm61-avx"
COMPANION = "torchvision-python313-cuda12_8-sm90-avx512"
ALL = sorted([*OK, FAILING, COMPANION])
ARM = "pytorch-python313-cuda12_8-sm90-armv9"
DARWIN = "pytorch-python313-darwin-mps"


def platforms_of(name: str) -> list[str]:
    """The meta.platforms the fixture writes: the real recipes' per-ISA platform."""
    if "darwin" in name:
        return ["aarch64-darwin"]
    if "-armv" in name:
        return ["aarch64-linux"]
    return ["x86_64-linux"]


NIX_BUILD = "nix-build --option substituters '' .flox/pkgs/{package}.nix -o result-{package}"


def _recipe(name: str, nonce: str, pin: str, *, fail: bool = False, imports: str | None = None,
            platforms: list[str] | None = None) -> str:
    script = "exit 1" if fail else ("echo ${torch} > $out" if imports else "echo ok > $out")
    kind = "torchvision" if name.startswith("torchvision-") else "torch"
    let = f"  torch = import ./{imports}.nix {{}};\n" if imports else ""
    sm = re.search(r"-sm(\d+)-", name)
    isa = name.rsplit("-", 1)[1]
    if sm:
        let += f'  gpuArchSM = "{int(sm.group(1)) // 10}.{int(sm.group(1)) % 10}";\n'
    if isa in CPU_FLAGS:
        flags = " ".join(f'"{f}"' for f in CPU_FLAGS[isa])
        let += f"  cpuFlags = [ {flags} ];\n"
    plats = " ".join(f'"{p}"' for p in (platforms or platforms_of(name)))
    features = '    requiredSystemFeatures = [ "big-parallel" ];\n' if "cuda" in name else ""
    override = f"    cudaSupport = {'true' if sm else 'false'};\n" + ("    gpuTargets = [ gpuArchSM ];\n" if sm else "")
    return (
        f"# Package name: {name}\n"
        f"# nixpkgs: https://github.com/NixOS/nixpkgs/archive/{pin}.tar.gz\n"
        "{ ... }:\nlet\n" + let + f'  nonce = "{nonce}";\n'
        "  # stand-in for nixpkgs: python3Packages.{torch,torchvision} with override / overrideAttrs\n"
        "  pkg = {\n    override = args: {\n      overrideAttrs = f:\n"
        "        let attrs = f { meta = { }; passthru = { }; };\n"
        "        in derivation {\n"
        "          name = attrs.pname; system = builtins.currentSystem; builder = \"/bin/sh\";\n"
        f'          inherit nonce; args = [ "-c" "{script}" ];\n'
        "          requiredSystemFeatures = attrs.requiredSystemFeatures or [ ];\n"
        "        };\n    };\n  };\n"
        "  stub = { python3Packages = { torch = pkg; torchvision = pkg; }; };\n"
        "in\n"
        f"  (stub.python3Packages.{kind}.override {{\n{override}  }}).overrideAttrs (oldAttrs: {{\n"
        f'    pname = "{name}";\n{features}'
        f"    meta = oldAttrs.meta // {{\n      platforms = [ {plats} ];\n    }};\n  }})\n"
    )


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def write_recipes(work: Path, pin: str, nonce: str, packages: list[str] | None = None, *, alone: bool = False) -> None:
    """The recipes of ``packages`` (default ALL); COMPANION imports its pytorch recipe, unless
    ``alone`` (a build-torchvision branch of torchvision recipes only)."""
    pkgs = work / ".flox" / "pkgs"
    pkgs.mkdir(parents=True, exist_ok=True)
    for name in packages or ALL:
        if name == COMPANION and not alone:
            text = _recipe(name, nonce, pin, imports="pytorch-python313-cuda12_8-sm90-avx512")
        else:
            text = _recipe(name, nonce, pin, fail=(name == FAILING))
        (pkgs / f"{name}.nix").write_text(text)


def make_repo(tmp: Path, packages: list[str] | None = None, branch: str = BRANCH) -> Path:
    """A clone at tmp/work with origin at tmp/origin.git, ``branch`` pushed."""
    origin = tmp / "origin.git"
    work = tmp / "work"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "init", "--quiet", "-b", "main", str(work)], check=True)
    sh(work, "git", "config", "user.email", "t@example.com")
    sh(work, "git", "config", "user.name", "t")
    (work / "README.md").write_text("fixture\n")
    sh(work, "git", "add", "README.md")
    sh(work, "git", "commit", "--quiet", "-m", "init")
    sh(work, "git", "remote", "add", "origin", str(origin))
    sh(work, "git", "checkout", "--quiet", "-b", branch)
    write_recipes(work, PIN, uuid.uuid4().hex, packages)
    sh(work, "git", "add", ".flox")
    sh(work, "git", "commit", "--quiet", "-m", "recipes")
    sh(work, "git", "push", "--quiet", "origin", "main", branch)
    sh(work, "git", "checkout", "--quiet", "main")
    return work


def noop_bump(work: Path, branch: str = BRANCH) -> None:
    """A commit on the branch that changes no recipe (what a no-op pin bump leaves)."""
    sh(work, "git", "checkout", "--quiet", branch)
    (work / "BUMPED").write_text("no recipe changed\n")
    sh(work, "git", "add", "BUMPED")
    sh(work, "git", "commit", "--quiet", "-m", "bump: nothing changed")
    sh(work, "git", "push", "--quiet", "origin", branch)
    sh(work, "git", "checkout", "--quiet", "main")


def settings(tmp: Path, **over):
    from config.settings import Settings

    base = dict(
        state_db=f"sqlite:///{tmp / 'state.sqlite'}",
        log_dir=tmp / "logs",
        build_command=NIX_BUILD,
        publish_command="true",
        repo_path=None,
        flox_org="acme",
        announce_channel="C0ANNOUNCE",
        build_kill_grace=0.5,  # a build that ignores SIGTERM is killed soon: tests do not wait out 5 s
        _env_file=None,
    )
    base.update(over)
    return Settings(**base)


def context(tmp: Path, **over):
    from release.context import Context

    return Context(settings(tmp, **over), use_repo=False)
