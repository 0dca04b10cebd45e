"""Benchmark: `torchbot release docs --check` over every branch of a build-pytorch repository.

Defaults to a fresh clone of the real build-pytorch (read-only mirror at
/work/.mirror/barstoolbluz+build-pytorch/repo, local branches made for every origin/*), or
``--repo PATH``. Measures the check (read every branch's recipes and README from
git objects, compute the facts, check every cross-branch table) as one `torchbot` process, with
and without the reader's recipe-fact cache, median of ``--rounds``; prints the drift it found.

    .venv/bin/python bench/docs.py [--repo PATH] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

MIRROR = Path("/work/.mirror/barstoolbluz+build-pytorch/repo")


def clone_real(into: Path) -> Path:
    work = into / "build-pytorch"
    subprocess.run(["git", "clone", "-q", str(MIRROR), str(work)], check=True)
    out = subprocess.run(["git", "-C", str(work), "for-each-ref", "--format=%(refname:short)", "refs/remotes/origin/"],
                         capture_output=True, text=True, check=True).stdout.split()
    for ref in out:
        name = ref.split("/", 1)[1]
        if name != "HEAD":
            subprocess.run(["git", "-C", str(work), "branch", "-q", "-f", name, ref], check=False, capture_output=True)
    return work


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", help="a build-pytorch repository (default: a clone of the real one)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(args.repo) if args.repo else clone_real(Path(tmp))
        env = {**os.environ, "TORCHBOT_REPO_PATH": str(repo)}
        cmd = [str(ROOT / ".venv/bin/torchbot"), "release", "docs", "--check", "--json"]

        def run(extra_env) -> tuple[float, dict]:
            t = time.perf_counter()
            out = subprocess.run(cmd, check=False, env={**env, **extra_env}, capture_output=True, text=True)
            return time.perf_counter() - t, json.loads(out.stdout)

        # cold: no recipe-fact cache (every recipe of every branch parsed); warm: the cache filled
        cold = [run({"TORCHBOT_CACHE_DIR": "off"})[0] for _ in range(args.rounds)]
        cache = Path(tmp) / "cache"
        run({"TORCHBOT_CACHE_DIR": str(cache)})
        warm, result = [], None
        for _ in range(args.rounds):
            t, result = run({"TORCHBOT_CACHE_DIR": str(cache)})
            warm.append(t)
        stale = result["stale"]
        print(f"repository: {repo} ({len(result['checked'])} READMEs checked)")
        print(f"drift: {len(stale)} stale rows in {len({s['readme'] for s in stale})} READMEs")
        print(f"docs --check, one process, no fact cache: median {statistics.median(cold):.3f} s (min {min(cold):.3f})")
        print(f"docs --check, one process, fact cache:    median {statistics.median(warm):.3f} s (min {min(warm):.3f})"
              "  goal < 2 s")


if __name__ == "__main__":
    main()
