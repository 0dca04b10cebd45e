"""Try issue 12 on a clone of the real build-pytorch: the GitHub dry run's runners per
platform, the workflow's schema and zizmor checks, and pin bumps whose nixpkgs facts and
tarball come from a loopback fake (the recipes keep their GitHub URL). Not part of the tests;
it writes only into the given clone (commits on its local branches, a scratch bare remote for
the PR), never into the repository it was cloned from.

    git clone -q /work/.mirror/barstoolbluz+build-pytorch/repo /tmp/bp
    (cd /tmp/bp && for b in $(git branch -r | grep -v HEAD); do git branch -q "${b#origin/}" "$b" 2>/dev/null; done)
    .venv/bin/python bench/real_repo.py /tmp/bp [--branch pytorch-2.10-python313]
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from tests.support.fakes_nixpkgs import FakeNixpkgs  # noqa: E402

NEW = "0123abcd0123abcd0123abcd0123abcd0123abcd"
NEW_28 = "2828abcd2828abcd2828abcd2828abcd2828abcd"  # main promises PyTorch 2.8: a pin with torch 2.8.x
CUDA_SETS = {"cudaPackages_12_6", "cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0",
             "cudaPackages_13_1"}
BIN = Path(sys.executable).parent
TOOLS = BIN.parent / "tools" / "bin"  # check-jsonschema's own venv, inside the project's (Makefile)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def pins_of(repo: Path, branch: str) -> collections.Counter:
    out = git(repo, "grep", "-ho", r"nixpkgs/archive/[0-9a-f]\{40\}", branch, "--", ".flox/pkgs")
    return collections.Counter(line.rsplit("/", 1)[1] for line in out.split())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clone", type=Path)
    ap.add_argument("--branch", default="pytorch-2.10-python313")
    args = ap.parse_args()
    repo, branch = args.clone.resolve(), args.branch
    tmp = Path(tempfile.mkdtemp(prefix="torchbot-real-"))

    from config.settings import Settings
    from release.builds.commands import plan_build
    from release.builds.workflow import render_workflow
    from release.context import Context
    from release.pins.commands import plan_bump

    base = dict(_env_file=None, repo_path=repo, state_db=f"sqlite:///{tmp / 'state.sqlite'}", log_dir=tmp / "logs")

    # 1. the GitHub dry run: platform and runner of every variant
    t0 = time.perf_counter()
    plan = plan_build(Context(Settings(**base), use_repo=False), branch, backend="github").to_dict()
    counts = collections.Counter((b["platform"], " ".join(b["runs_on"])) for b in plan["build"])
    print(f"1. release build --backend github --dry-run of {branch} ({time.perf_counter() - t0:.2f} s): "
          f"ref {plan['ref']}, {len(plan['build'])} variants, {len(plan['skipped'])} skipped")
    for (platform, runs_on), n in counts.most_common():
        print(f"   {n:4} {platform:15} runs-on {runs_on}")
    for b in plan["build"]:
        if b.get("note"):
            print(f"   note {b['package']}: {b['note']}")

    # 2. the workflow: GitHub's schema and zizmor
    wf = tmp / "torchbot-build.yml"
    wf.write_text(render_workflow(Settings(**base)))
    schema = subprocess.run([str(TOOLS / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(wf)],
                            check=False, capture_output=True, text=True)
    lint = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--no-progress", str(wf)], check=False, capture_output=True, text=True
    )
    said = next((line.strip() for line in (lint.stdout + lint.stderr).splitlines() if "findings" in line.lower()), "")
    print(f"2. workflow: check-jsonschema rc={schema.returncode} ({schema.stdout.strip()}); zizmor --offline "
          f"rc={lint.returncode} ({said})")

    # 3. bumps: every pin group of the branch moves to NEW; the tarball comes from the fake
    pins = pins_of(repo, branch)
    with FakeNixpkgs() as fake:
        for pin in pins:
            fake.add_rev(pin, "2.9.1", CUDA_SETS)
        fake.add_rev(NEW, "2.9.1", CUDA_SETS)
        s = Settings(**base, channels_url=fake.channels_url, github_api_url=fake.api_url,
                     nixpkgs_tarball_url=fake.tarball_url, http_retries=1)
        ctx = Context(s, use_repo=False)
        moved = 0
        for pin, n in pins.most_common():
            t0 = time.perf_counter()
            plan = plan_bump(ctx, branch, NEW, from_pin=pin[:7], force=True)
            d = plan.apply().to_dict()
            b = d["branches"][0]
            moved += n
            print(f"3. bump {branch} --from-pin {pin[:7]} --rev {NEW[:7]}: {n} recipes, "
                  f"sha256 {b['sha256']}, {time.perf_counter() - t0:.2f} s")
        own = subprocess.run(["nix-prefetch-url", "--unpack", f"{fake.tarball_url}{NEW}.tar.gz"],
                             check=False, capture_output=True, text=True).stdout.strip()
        # 4. a bump PR of main (pushed to a scratch bare remote; the PR goes to the fake)
        main_pin = next(iter(pins_of(repo, "main")))
        fake.add_rev(main_pin, "2.8.0", CUDA_SETS)
        fake.add_rev(NEW_28, "2.8.4", CUDA_SETS)
        fake.history = []
        fake.add_commit(main_pin, "base")
        fake.add_commit("1" * 40, "python3Packages.torch: 2.8.0 -> 2.8.4",
                        ["pkgs/development/python-modules/torch/source/default.nix"])
        fake.add_commit(
            "2" * 40, "cudaPackages.cudnn: 9.8 -> 9.10", ["pkgs/development/cuda-modules/cudnn/default.nix"]
        )
        fake.add_commit(NEW_28, "hello: 1 -> 2", ["pkgs/by-name/he/hello/package.nix"])
        scratch = tmp / "scratch.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(scratch)], check=True)
        subprocess.run(["git", "-C", str(repo), "remote", "add", "torchbot-scratch", str(scratch)], check=True)
        pr_ctx = Context(Settings(**{**base, "repo_remote": "torchbot-scratch"}, channels_url=fake.channels_url,
                                  github_api_url=fake.api_url, nixpkgs_tarball_url=fake.tarball_url,
                                  http_retries=1), use_repo=False)
        plan_bump(pr_ctx, "main", NEW_28, open_pr=True).apply()
        body = fake.pulls[-1]["body"]
        print("4. the bump PR of main (body lines with facts):")
        for line in body.splitlines():
            if line.startswith(("| torch", "**Compare**", "- **", "**", "- ✅ Tarball")):
                print("   " + line[:160])
    files = git(repo, "ls-tree", "--name-only", branch, ".flox/pkgs/").split()
    hashed = 0
    texts = []
    for f in files:
        text = git(repo, "show", f"{branch}:{f}")
        texts.append(text)
        if re.search(rf'url = "https://github\.com/NixOS/nixpkgs/archive/{NEW}\.tar\.gz";\s*sha256 = "{own}";', text):
            hashed += 1
    parse_dir = tmp / "parse"
    parse_dir.mkdir()
    for i, t in enumerate(texts):
        (parse_dir / f"{i}.nix").write_text(t)
    parsed = subprocess.run(
        ["nix-instantiate", "--parse", *map(str, parse_dir.glob("*.nix"))], check=False, capture_output=True
    )
    print(f"   nix-prefetch-url --unpack of the served tarball: {own}")
    print(f"   {hashed} of {len(files)} recipes of {branch} carry the GitHub URL of {NEW[:7]} with that sha256 "
          f"({moved} moved); nix-instantiate --parse of all: rc={parsed.returncode}")
    return 0 if hashed == moved == len(files) and schema.returncode == 0 and lint.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
