"""Benchmark: bump the nixpkgs pin of every branch (each PyTorch line to a pin whose torch keeps its
promise) of a repository the size of the real build-pytorch (eight branches, ~970 recipes of ~4.5
KB) with torchbot, against a plain ``git worktree`` + ``sed`` + ``git commit`` script doing the same
edits, in one run.

torchbot's time includes everything a user waits for: resolving the revision and the
guards over HTTP (a local fake nixpkgs/GitHub server), hashing the new pin's tarball
(``nix-prefetch-url --unpack``, a small tarball from the fake), reading every branch, one
commit per branch, moving the refs. The plain script hashes the tarball too and writes the
same ``sha256`` lines with sed. Each side runs on its own fresh copy of the repository.

    .venv/bin/python bench/bump.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from config.catalog import CudaGroup  # noqa: E402
from config.catalog_data import load_catalog  # noqa: E402
from tests.support.fakes_nixpkgs import FakeNixpkgs  # noqa: E402
from tests.support.fixtures_pins import NEW, build_repo, build_repo_from_files, git  # noqa: E402

NEW_28 = "2828abcd2828abcd2828abcd2828abcd2828abcd"  # torch 2.8.4: the 2.8 branches' bump
CUDA_ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13_0", "cudaPackages_13_1"}
WIDE = ("sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121")


def real_sized_branches():
    """The catalog's eight branches, with the 2.9-python313 matrix widened to the real
    repository's CUDA groups (one pin per branch so `--all` needs no selector)."""
    cat = load_catalog()
    out = []
    for branch in cat.branches.values():
        b = branch
        if b.name == "pytorch-2.10-python313":  # the real four CUDA groups, on one pin here
            b = replace(b, cuda_groups=tuple(replace(g, pin=None) for g in b.cuda_groups))
        elif b.name == "pytorch-2.9-python313":
            b = replace(
                b,
                cuda_groups=(
                    *b.cuda_groups,
                    CudaGroup("12.8", tuple(a for a in WIDE if a not in ("sm103", "sm110", "sm121"))),
                    CudaGroup("13.0", WIDE),
                ),
            )
        out.append(replace(b, variants=cat.expand(b)))
    return out


PLAIN = r"""
set -e
cd "$1"; NEW="$2"; NS=$(echo "$NEW" | cut -c1-7); URL="$3"; shift 3
H=$(nix-prefetch-url --unpack --name source "$URL" 2>/dev/null)
for b in "$@"; do
  old=$(git show "$b:$(git ls-tree --name-only "$b" .flox/pkgs/ | head -1)" | grep -o 'nixpkgs/archive/[0-9a-f]\{40\}' | head -1 | cut -d/ -f3)
  os=$(echo "$old" | cut -c1-7)
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$b"
  sed -i "s/$old/$NEW/g" "$wt"/.flox/pkgs/*.nix
  sed -i "s|^\( *\)url = \"https://github.com/NixOS/nixpkgs/archive/$NEW.tar.gz\";|&\n\1sha256 = \"$H\";|" "$wt"/.flox/pkgs/*.nix
  sed -i "/^| \**\`$b\`/{s/$old/$NEW/g;s/\`$os\`/\`$NS\`/g}" "$wt/README.md"
  git -C "$wt" commit -q -am "nixpkgs: bump pin $os -> $NS"
  git update-ref "refs/heads/$b" "$(git -C "$wt" rev-parse HEAD)"
  git worktree remove --force "$wt"
done
"""  # noqa: E501  (verbatim text)


def run_torchbot(repo: Path, fake: FakeNixpkgs) -> float:
    from config.settings import Settings
    from release.context import Context
    from release.pins.commands import plan_bump

    settings = Settings(
        repo_path=repo,
        channels_url=fake.channels_url,
        github_api_url=fake.api_url,
        nixpkgs_tarball_url=fake.tarball_url,
        http_retries=2,
    )
    t0 = time.perf_counter()
    commits = {}
    for rev, names in lines_of(repo).items():  # the guards keep each branch on its PyTorch line
        result = plan_bump(Context(settings, use_repo=False), names, rev, force=True).apply()
        commits.update(result.to_dict()["commits"])
    elapsed = time.perf_counter() - t0
    assert len(commits) == 8, commits
    return elapsed


def lines_of(repo: Path) -> dict[str, list[str]]:
    """New nixpkgs revision -> the branches bumped to it: the 2.8 branches to NEW_28 (torch
    2.8.x there), the others to NEW (torch 2.9.x; the 2.10 branch keeps its source override)."""
    heads = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    cat = load_catalog()
    out: dict[str, list[str]] = {}
    for h in heads:
        rev = NEW_28 if cat.branches[h].pytorch.startswith("2.8") else NEW
        out.setdefault(rev, []).append(h)
    return out


def run_plain(repo: Path, fake: FakeNixpkgs) -> float:
    t0 = time.perf_counter()
    for rev, names in lines_of(repo).items():
        subprocess.run(["bash", "-c", PLAIN, "plain", str(repo), rev, f"{fake.tarball_url}{rev}.tar.gz", *names],
                       check=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x",
                            "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"})
    return time.perf_counter() - t0


def same_result(a: Path, b: Path) -> bool:
    """Both sides produced the same trees on every branch."""
    heads = git(a, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    return all(git(a, "rev-parse", f"{h}^{{tree}}") == git(b, "rev-parse", f"{h}^{{tree}}") for h in heads)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="torchbot-bench-bump-"))
    try:
        branches = real_sized_branches()
        t0 = time.perf_counter()
        try:  # the recipes torchbot renders (release.render), else stub recipes of the real size
            from release.recipes.render import render_branch

            cat = load_catalog().with_branches(branches, "bench")
            template, _ = build_repo_from_files(tmp / "template", {b.name: render_branch(cat, b) for b in branches})
            kind = "rendered by release.render"
        except ImportError:
            template, _ = build_repo(tmp / "template", branches, pad=35)
            kind = "stub recipes"
        recipes = sum(len(b.variants) for b in branches)
        size = sum(f.stat().st_size for f in (template / ".flox" / "pkgs").glob("*.nix")) / max(
            1, len(list((template / ".flox" / "pkgs").glob("*.nix")))
        )
        print(
            f"repository: {len(branches)} branches, {recipes} recipes {kind} (~{size / 1024:.1f} KB each), built in "
            f"{time.perf_counter() - t0:.1f}s"
        )
        tb, pl = [], []
        with FakeNixpkgs() as fake:
            for pin in {b.pin for b in branches}:
                fake.add_rev(pin, "2.9.1", CUDA_ALL)
            fake.add_rev(NEW, "2.9.4", CUDA_ALL)
            fake.add_rev(NEW_28, "2.8.4", CUDA_ALL)
            fake.torch.update({b.pin: b.pytorch for b in branches})
            fake.torch[NEW] = "2.9.4"
            for i in range(args.rounds):
                a, b = tmp / f"tb{i}", tmp / f"pl{i}"
                shutil.copytree(template, a, symlinks=True)
                shutil.copytree(template, b, symlinks=True)
                tb.append(run_torchbot(a, fake))
                pl.append(run_plain(b, fake))
                if i == 0:
                    print("same trees on every branch:", same_result(a, b))
                print(f"round {i+1}: torchbot {tb[-1]:.3f}s   plain worktree+sed+commit {pl[-1]:.3f}s")
        mt, mp = statistics.median(tb), statistics.median(pl)
        print(f"median: torchbot {mt:.3f}s, plain {mp:.3f}s, ratio {mt/mp:.2f}x (goal <= 1.5x)")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
