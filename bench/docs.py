"""Benchmark: `torchbot release docs --check` over every branch of a build-pytorch repository.

Defaults to a fresh clone of the real build-pytorch (read-only mirror at
/work/.mirror/barstoolbluz+build-pytorch/repo, local branches made for every origin/*), or
``--repo PATH``. Measures the check in-process (read every branch's recipes and README from
git objects, compute the facts, check every cross-branch table) and as one `torchbot` process,
median of ``--rounds``; prints the drift it found.

    .venv/bin/python bench/docs.py [--repo PATH] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIRROR = Path("/work/.mirror/barstoolbluz+build-pytorch/repo")


def clone_real(into: Path) -> Path:
    work = into / "build-pytorch"
    subprocess.run(["git", "clone", "-q", str(MIRROR), str(work)], check=True)
    out = subprocess.run(["git", "-C", str(work), "for-each-ref", "--format=%(refname:short)", "refs/remotes/origin/"],
                         capture_output=True, text=True, check=True).stdout.split()
    for ref in out:
        name = ref.split("/", 1)[1]
        if name != "HEAD":
            subprocess.run(["git", "-C", str(work), "branch", "-q", "-f", name, ref], capture_output=True)
    return work


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", help="a build-pytorch repository (default: a clone of the real one)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(args.repo) if args.repo else clone_real(Path(tmp))
        from config.settings import Settings
        from release.context import Context
        from release.docs.commands import docs_check

        ctx = Context(Settings(repo_path=repo, _env_file=None), use_repo=False)
        times, result = [], None
        for _ in range(args.rounds):
            t = time.perf_counter()
            result = docs_check(ctx, repo)
            times.append(time.perf_counter() - t)
        procs = []
        env = {**os.environ, "TORCHBOT_REPO_PATH": str(repo)}
        for _ in range(args.rounds):
            t = time.perf_counter()
            subprocess.run([str(ROOT / ".venv/bin/torchbot"), "release", "docs", "--check"], env=env,
                           capture_output=True)
            procs.append(time.perf_counter() - t)
        readers = len(result.checked)
        print(f"repository: {repo} ({readers} READMEs checked)")
        print(f"drift: {len(result.stale)} stale rows in "
              f"{len({s.readme for s in result.stale})} READMEs")
        print(f"docs --check in-process: median {statistics.median(times):.3f} s (min {min(times):.3f})")
        print(f"docs --check process:    median {statistics.median(procs):.3f} s (min {min(procs):.3f})  goal < 2 s")


if __name__ == "__main__":
    main()
