"""A real multi-branch build-pytorch-shaped git repository for the pin-bump tests and the
bench, built with plain git (independent of the code under test). Recipes are stub Nix
expressions in the real recipes' shape: the pin in a ``fetchTarball`` URL, the CUDA set in
an overlay; they parse with ``nix-instantiate --parse``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from config.catalog import Branch, Catalog, CudaGroup, Variant
from config.catalog_data import load_catalog
from config.naming import cuda_tag

PIN_A = "fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3"
PIN_B = "6a030d535719c5190187c4cec156f335e95e3211"
PIN_C = "2017d6d515f8a7b289fe06d3a880a7ec588c3900"
NEW = "0123abcd0123abcd0123abcd0123abcd0123abcd"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.com",
    "GIT_COMMITTER_NAME": "Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd, *args, check=True) -> str:
    env = {**os.environ, **GIT_ENV}
    r = subprocess.run(["git", *args], check=False, cwd=cwd, env=env, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr}")
    return r.stdout


def recipe_text(branch: Branch, v: Variant, pad: int = 0) -> str:
    """``pad`` appends that many comment lines (the bench uses it to match real recipe sizes)."""
    cuda = ""
    if v.cuda:
        cuda = f"      (final: prev: {{ cudaPackages = final.cudaPackages_{cuda_tag(v.cuda)}; }})\n"
    if branch.torch_source:  # the real 2.10 recipes build torch from source over nixpkgs' older torch
        src = branch.torch_source
        cuda += (
            "      (final: prev: { python3Packages = prev.python3Packages.override { overrides = pfinal: pprev: {\n"
            f'        torch = pprev.torch.overrideAttrs (old: rec {{ version = "{src.version}";\n'
            '          src = prev.fetchFromGitHub { owner = "pytorch"; repo = "pytorch"; rev = "v${version}";\n'
            f'            hash = "{src.hash}"; fetchSubmodules = true; }}; }});\n'
            "      }; }; })\n"
        )
    return f"""# PyTorch {branch.pytorch} ({v.package})
# Package name: {v.package}

{{ pkgs ? import <nixpkgs> {{}} }}:

let
  nixpkgs_pinned = import (builtins.fetchTarball {{
    url = "https://github.com/NixOS/nixpkgs/archive/{v.pin}.tar.gz";
  }}) {{
    config = {{ allowUnfree = true; cudaSupport = {"true" if v.cuda else "false"}; }};
    overlays = [
{cuda}    ];
  }};
in
  nixpkgs_pinned.python3Packages.torch.overrideAttrs (oldAttrs: {{
    pname = "{v.package}";
    passthru = oldAttrs.passthru // {{ cpuISA = "{v.cpu_isa or 'mps'}"; }};
    meta = oldAttrs.meta // {{ platforms = [ "{v.platform}" ]; }};
  }})
""" + "".join(f"# {v.package}: build notes line {i} .......................................\n" for i in range(pad))


def readme_text(branches: list[Branch], current: str) -> str:
    rows = []
    for b in branches:
        groups: dict[str, list[str]] = {}
        for v in b.variants:
            groups.setdefault(v.pin, [])
            if v.cuda and v.cuda not in groups[v.pin]:
                groups[v.pin].append(v.cuda)
        for pin, cudas in groups.items():
            name = f"**`{b.name}`** ⬅️" if b.name == current else f"`{b.name}`"
            rows.append(
                f"| {name} | {b.pytorch} | {' / '.join(cudas) or 'CPU'} | {b.cudnn} | {b.python} | {b.min_driver}+ "
                f"| [`{pin[:7]}`](https://github.com/NixOS/nixpkgs/tree/{pin}) |"
            )
    return (
        f"# build-pytorch ({current})\n\n## Version Matrix\n\n"
        "| Branch | PyTorch | CUDA | cuDNN | Python | Min Driver | Nixpkgs Pin |\n"
        "|--------|---------|------|-------|--------|------------|-------------|\n" + "\n".join(rows) + "\n"
    )


def multi_pin(cat: Catalog, name: str = "pytorch-2.10-python313") -> Branch:
    """A branch in the real 2.10 shape: three pins (CUDA 13.0 + CPU/darwin on PIN_B,
    CUDA 12.8 on PIN_A, CUDA 13.1 on PIN_C)."""
    b = cat.branches[name]
    groups = (
        *tuple(g for g in b.cuda_groups if g.version == "13.0"),
        CudaGroup("12.8", ("sm80", "sm90"), PIN_A),
        CudaGroup("13.1", ("sm90", "sm100"), PIN_C),
    )
    b = replace(b, cuda_groups=groups, pin=PIN_B)
    return replace(b, variants=cat.expand(b))


def small_catalog_branches(cat: Catalog | None = None) -> list[Branch]:
    """Four branches: two on PIN_A, one vLLM branch, one with three pins; CUDA groups cut
    down so tests stay fast."""
    cat = cat or load_catalog()
    out = []
    for name in ("main", "pytorch-2.8-python312", "pytorch-2.9-vllm-0.15.1"):
        b = cat.branches[name]
        b = replace(
            b,
            cpu_isas=b.cpu_isas[:2],
            companions=(),
            cuda_groups=tuple(replace(g, archs=g.archs[:2]) for g in b.cuda_groups),
        )
        out.append(replace(b, variants=cat.expand(b)))
    b = multi_pin(cat)
    b = replace(b, cpu_isas=b.cpu_isas[:2], cuda_groups=tuple(replace(g, archs=g.archs[:2]) for g in b.cuda_groups))
    out.append(replace(b, variants=cat.expand(b)))
    return out


def build_repo(root: Path, branches: list[Branch], *, checkout: str = "main", pad: int = 0) -> tuple[Path, Path]:
    """A work repo with one branch per definition and a bare ``origin`` holding them all."""
    work = root / "work"
    origin = root / "origin.git"
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", branches[0].name)
    git(work, "config", "user.name", "Fixture")
    git(work, "config", "user.email", "fixture@example.com")
    (work / ".flox" / "env").mkdir(parents=True)
    (work / ".flox" / "env" / "manifest.toml").write_text('version = 1\n[options]\nsystems = ["x86_64-linux"]\n')
    first = True
    for b in branches:
        if not first:
            git(work, "checkout", "-q", "-b", b.name, branches[0].name)
            git(work, "rm", "-rq", ".flox/pkgs")
        first = False
        pkgs = work / ".flox" / "pkgs"
        pkgs.mkdir(parents=True, exist_ok=True)
        for v in b.variants:
            (pkgs / f"{v.package}.nix").write_text(recipe_text(b, v, pad))
        (work / "README.md").write_text(readme_text(branches, b.name))
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"{b.name}: recipes")
    git(work, "checkout", "-q", checkout)
    git(root, "clone", "-q", "--bare", str(work), str(origin))
    git(work, "remote", "add", "origin", str(origin))
    git(work, "fetch", "-q", "origin")
    return work, origin


def refs(path: Path) -> dict[str, str]:
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines())


def tree_files(path: Path, branch: str, prefix: str = ".flox/pkgs") -> dict[str, str]:
    names = git(path, "ls-tree", "-r", "--name-only", branch, "--", prefix).split()
    return {n: git(path, "show", f"{branch}:{n}") for n in names}


def build_repo_from_files(root: Path, branches: dict[str, dict[str, str]]) -> tuple[Path, Path]:
    """Like :func:`build_repo`, from ready file contents per branch (e.g. rendered by
    release.render), committed with plain git."""
    work = root / "work"
    origin = root / "origin.git"
    work.mkdir(parents=True)
    names = list(branches)
    git(work, "init", "-q", "-b", names[0])
    for i, name in enumerate(names):
        if i:
            git(work, "checkout", "-q", "--orphan", name)
            git(work, "rm", "-rqf", ".")
        for path, text in branches[name].items():
            f = work / path
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"{name}: generated")
    git(work, "checkout", "-q", names[0])
    git(root, "clone", "-q", "--bare", str(work), str(origin))
    git(work, "remote", "add", "origin", str(origin))
    return work, origin


@contextmanager
def served(monkeypatch, repo_path: Path, fake, **settings: str) -> Iterator[None]:
    """torchbot's settings for a test repository answered by ``fake`` (a FakeNixpkgs): its
    channels, its GitHub API, one HTTP try; ``settings`` add or override TORCHBOT_* values. The
    catalog is read afresh inside and after."""
    env = {"TORCHBOT_REPO_PATH": str(repo_path), "TORCHBOT_CHANNELS_URL": fake.channels_url,
           "TORCHBOT_GITHUB_API_URL": fake.api_url, "TORCHBOT_HTTP_RETRIES": "1", **settings}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    load_catalog.cache_clear()
    try:
        yield
    finally:
        load_catalog.cache_clear()
