"""Benchmark: build scheduling overhead and --changed-only after a no-op bump.

Creates a throwaway git repository (with a local bare origin) whose branch has N recipes
(default 1,000: pytorch variants plus torchvision companions that import them), builds all
of them with a no-op build command (`true`) through the real local backend (worktree,
state DB, log files, companion ordering), and reports the wall time per variant. Then it
commits a no-op bump (no recipe changes) and counts what `--changed-only` would build.

    .venv/bin/python bench/builds.py [--variants 1000] [--jobs 1 4]
Goal: < 5 ms per variant; 0 builds after a no-op bump.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._home import isolate

isolate()  # torchbot's own files go to a temporary home, never the real one

from config.settings import Settings  # noqa: E402
from release.builds import run as builds  # noqa: E402
from release.context import Context  # noqa: E402

BRANCH = "pytorch-2.8-python313"
PIN = "fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3"


def sh(cwd: Path, *args: str) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def make_repo(tmp: Path, n: int) -> Path:
    origin, work = tmp / "origin.git", tmp / "work"
    sh(tmp, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    sh(tmp, "git", "init", "-q", "-b", BRANCH, str(work))
    sh(work, "git", "config", "user.email", "b@example.com")
    sh(work, "git", "config", "user.name", "bench")
    pkgs = work / ".flox" / "pkgs"
    pkgs.mkdir(parents=True)
    companions = n // 5
    for i in range(n - companions):
        (pkgs / f"pytorch-python313-cuda12_8-sm{i:04d}-avx2.nix").write_text(
            f"# nixpkgs/archive/{PIN}.tar.gz\n{{ ... }}: derivation {{ name = \"p{i}\"; }}\n")
    for i in range(companions):
        (pkgs / f"torchvision-python313-cuda12_8-sm{i:04d}-avx2.nix").write_text(
            f"# nixpkgs/archive/{PIN}.tar.gz\n{{ ... }}: let t = import "
            f"./pytorch-python313-cuda12_8-sm{i:04d}-avx2.nix {{}};"
            f" in t\n"
        )
    (work / "README.md").write_text("bench\n")
    sh(work, "git", "add", ".")
    sh(work, "git", "commit", "-q", "-m", "recipes")
    sh(work, "git", "remote", "add", "origin", str(origin))
    sh(work, "git", "push", "-q", "origin", BRANCH)
    return work


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=1000)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        repo = make_repo(tmp, args.variants)
        for jobs in args.jobs:
            settings = Settings(_env_file=None, state_db=f"sqlite:///{tmp}/state-{jobs}.sqlite", log_dir=tmp / "logs",
                                build_command="true", build_result_link="README.md")
            ctx = Context(settings, use_repo=False)
            t0 = time.perf_counter()
            plan = builds.prepare(ctx, BRANCH, repo=repo)
            t1 = time.perf_counter()
            rows = builds.run_local(ctx, plan, jobs=jobs)
            t2 = time.perf_counter()
            ok = sum(r["state"] == "succeeded" for r in rows)
            per = (t2 - t0) / len(rows) * 1000
            print(f"jobs={jobs}: {len(rows)} variants ({ok} succeeded), plan {(t1 - t0) * 1000:.0f} ms, "
                  f"build {(t2 - t1):.2f} s -> {per:.2f} ms per variant (goal < 5 ms)")
        sh(repo, "git", "commit", "-q", "--allow-empty", "-m", "bump: no recipe changed")
        sh(repo, "git", "push", "-q", "origin", BRANCH)
        t0 = time.perf_counter()
        plan = builds.prepare(ctx, BRANCH, repo=repo, changed_only=True)
        t1 = time.perf_counter()
        print(f"--changed-only after a no-op bump: {len(plan.items)} build(s) "
              f"({len(plan.unchanged)} unchanged; planned in {(t1 - t0) * 1000:.0f} ms) (must be 0)")
        return 0 if not plan.items else 1


if __name__ == "__main__":
    raise SystemExit(main())
