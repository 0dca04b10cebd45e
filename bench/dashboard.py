"""Benchmark: `torchbot dashboard` on fresh clones of the real build-pytorch and build-torchvision
(read-only mirrors under /work/.mirror, cloned into a temporary directory; or --pytorch/--vision).

Runs the `torchbot dashboard` process (plain text: stdout is a pipe) once cold (torchbot's caches
empty: the reader's recipe facts, the drift, the nixpkgs facts) and ``--rounds`` times warm, and
prints the wall and CPU time of each, the median, how many branches it showed, and its output.

nixpkgs: by default a loopback stand-in (tests/support/fakes_nixpkgs) that knows every pin the
clones use, with made-up commit dates and a channel head ahead of them, so the pin-age and
"behind" columns are exercised; ``--offline`` points torchbot at a closed port instead (ages
unknown, said in a note), the way a host without network sees it. No GitHub token: open bump
pull requests are not looked up.

    .venv/bin/python bench/dashboard.py [--rounds 5] [--offline]
"""

from __future__ import annotations

import argparse
import os
import resource
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

MIRRORS = {"pytorch": Path("/work/.mirror/barstoolbluz+build-pytorch/repo"),
           "vision": Path("/work/.mirror/barstoolbluz+build-torchvision/repo")}
HEAD = "0123abcd0123abcd0123abcd0123abcd0123abcd"


def clone(src: Path, into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(src), str(into)], check=True)
    return into


def pins_of(paths: list[Path]) -> set[str]:
    from config.catalog_data import load_catalog
    from release.recipes.repos import read_repositories

    rs = read_repositories(paths, load_catalog())
    return {v.pin for m in rs.models for b in m.branches.values() for v in b.variants if v.pin and v.pin != "none"}


def stand_in(pins: set[str]):
    from tests.support.fakes_nixpkgs import FakeNixpkgs

    nix = FakeNixpkgs().__enter__()
    for i, pin in enumerate(sorted(pins)):
        nix.add_commit(pin)
        nix.dates[pin] = f"2025-{1 + i % 12:02d}-15T00:00:00Z"
        for j in range(40):  # commits between the pins, so "behind" has something to count
            nix.add_commit(f"{i:02x}{j:02x}" + "e" * 36)
    nix.add_commit(HEAD)
    nix.dates[HEAD] = "2026-11-20T00:00:00Z"
    nix.channels["nixos-unstable"] = HEAD
    return nix


def run(cmd: list[str], env: dict) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"torchbot dashboard failed ({out.returncode}): {out.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out.stdout


def in_process(env: dict, rounds: int) -> list[float]:
    """``dashboard(ctx)`` called again and again in this process, as `serve` does per request."""
    os.environ.update(env)
    from config.settings import load_settings
    from release.context import Context
    from release.dashboard.commands import dashboard

    ctx = Context(load_settings())
    out = []
    for _ in range(rounds + 1):
        t = time.perf_counter()
        dashboard(ctx).text()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pytorch", help="a build-pytorch repository (default: a clone of the real one)")
    ap.add_argument("--vision", help="a build-torchvision repository (default: a clone of the real one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--offline", action="store_true", help="no nixpkgs at all (a closed port)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pt = Path(args.pytorch) if args.pytorch else clone(MIRRORS["pytorch"], Path(tmp) / "build-pytorch")
        tv = Path(args.vision) if args.vision else clone(MIRRORS["vision"], Path(tmp) / "build-torchvision")
        nix = None if args.offline else stand_in(pins_of([pt, tv]))
        url = "http://127.0.0.1:9/" if nix is None else None
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
        env.update(TORCHBOT_REPO_PATH=f"{pt},{tv}", TORCHBOT_CHANNELS_URL=url or nix.channels_url,
                   TORCHBOT_GITHUB_API_URL=url or nix.api_url, TORCHBOT_HTTP_RETRIES="1")
        cmd = [str(ROOT / ".venv/bin/torchbot"), "dashboard"]
        cold = run(cmd, env)
        warm = [run(cmd, env) for _ in range(args.rounds)]
        inproc = in_process(env, args.rounds)
        out = warm[-1][2]
        rows = [line for line in out.splitlines() if line.startswith("  ") and not line.startswith("  branch ")
                and not line.startswith("  - ")]
        print(f"torchbot dashboard on {pt.name} + {tv.name}: {len(rows)} branches shown "
              f"({'nixpkgs offline' if nix is None else 'nixpkgs: loopback stand-in, made-up dates'})")
        print(f"  cold: {cold[0]:.2f} s wall, {cold[1]:.2f} s CPU")
        print(f"  warm: median {statistics.median(w[0] for w in warm):.2f} s wall "
              f"({', '.join(f'{w[0]:.2f}' for w in warm)}), median {statistics.median(w[1] for w in warm):.2f} s CPU")
        print(f"  in a running torchbot (serve: the page, Slack, App Home): first {inproc[0]:.2f} s, then median "
              f"{statistics.median(inproc[1:]):.3f} s")
        print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print()
        print(out)
        if nix is not None:
            nix.__exit__(None, None, None)


if __name__ == "__main__":
    main()
