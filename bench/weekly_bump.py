"""Issue 25 on clones of the real repositories: the weekly bump of every branch and pin group
(`release bump-pins --all --dry-run`) on fresh clones (every branch but main only as origin/*),
against a nixpkgs stand-in whose channel head carries torch 2.9.1.

    .venv/bin/python bench/weekly_bump.py [--pytorch /work/.mirror/barstoolbluz+build-pytorch/repo]
                                          [--torchvision /work/.mirror/barstoolbluz+build-torchvision/repo]

The stand-in's history (oldest first) holds the real pins where their torch puts them: the 2.8-era
pin fe5e41d (torch 2.8.0), then a commit that still has 2.8.0 (the newest one keeping 2.8), the
torch 2.9.0 update, 46336d4, the torch 2.9.1 update, the other real pins, and the head. Prints
each branch's outcomes, the exit status and the time the run took.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fakes_nixpkgs import FakeNixpkgs  # noqa: E402

MIRRORS = Path("/work/.mirror")
K28 = "1128" * 10
T29 = "2290" * 10
T291 = "2291" * 10
HEAD = "feed0291" * 5
# torch in nixpkgs at the real pins (by prefix), as their branches' READMEs say
TORCH_AT = {"fe5e41d": "2.8.0", "46336d4": "2.9.0"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def real_pins_and_cuda(repos: list[Path]) -> tuple[list[str], set[str]]:
    pins: set[str] = set()
    cuda: set[str] = set()
    for repo in repos:
        for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/remotes/origin").split():
            if ref.endswith("/HEAD"):
                continue
            text = git(repo, "grep", "-h", "-e", "nixpkgs/archive/", "-e", "cudaPackages_", ref, "--", ".flox/pkgs")
            pins.update(re.findall(r"nixpkgs/archive/([0-9a-f]{40})", text))
            cuda.update(re.findall(r"\b(cudaPackages_\d+(?:_\d+)?)\b", text))
    return sorted(pins), cuda


def stand_in(fake: FakeNixpkgs, pins: list[str], cuda: set[str]) -> None:
    early = [p for p in pins if TORCH_AT.get(p[:7]) == "2.8.0"]
    mid = [p for p in pins if TORCH_AT.get(p[:7]) == "2.9.0"]
    late = [p for p in pins if p not in early and p not in mid]
    first = True
    for p in early:
        fake.add_commit(p, "python3Packages.torch: 2.7.1 -> 2.8.0", torch="2.8.0" if first else None,
                        cuda_sets=cuda if first else None)
        first = False
    fake.add_commit(K28, "hello: 2.12 -> 2.12.1")
    fake.add_commit(T29, "python3Packages.torch: 2.8.0 -> 2.9.0", torch="2.9.0")
    for p in mid:
        fake.add_commit(p, "cudaPackages: update")
    fake.add_commit(T291, "python3Packages.torch: 2.9.0 -> 2.9.1", torch="2.9.1")
    for p in late:
        fake.add_commit(p, "cudaPackages: update")
    fake.add_commit(HEAD, "firefox: 140 -> 141")
    fake.channels["nixos-unstable"] = HEAD


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--pytorch", default=str(MIRRORS / "barstoolbluz+build-pytorch/repo"))
    ap.add_argument("--torchvision", default=str(MIRRORS / "barstoolbluz+build-torchvision/repo"))
    ap.add_argument("--apply", action="store_true",
                    help="also run it for real twice (local delivery): the second run shows what is held")
    ap.add_argument("--concurrent", action="store_true",
                    help="then two torchbot processes run `bump-pins --all` at once on the same clones: each "
                         "branch must move at most once")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="weekly-bump-"))
    clones = []
    for name, src in (("build-pytorch", args.pytorch), ("build-torchvision", args.torchvision)):
        dest = tmp / name
        subprocess.run(["git", "clone", "-q", src, str(dest)], check=True)
        clones.append(dest)
    local = {c.name: git(c, "for-each-ref", "--format=%(refname:short)", "refs/heads").split() for c in clones}
    print(f"fresh clones in {tmp}; local branches: {local}")
    pins, cuda = real_pins_and_cuda(clones)
    with FakeNixpkgs() as fake:
        stand_in(fake, pins, cuda)
        os.environ.update({
            "TORCHBOT_REPO_PATH": ",".join(map(str, clones)), "TORCHBOT_CHANNELS_URL": fake.channels_url,
            "TORCHBOT_GITHUB_API_URL": fake.api_url, "TORCHBOT_NIXPKGS_TARBALL_URL": fake.tarball_url,
            "TORCHBOT_HTTP_RETRIES": "1", "TORCHBOT_STATE_DB": f"sqlite:///{tmp}/state.sqlite",
        })
        os.environ.pop("TORCHBOT_GITHUB_TOKEN", None)
        from bot.frontends.cli.main import main as cli

        start = time.perf_counter()
        rc = cli(["release", "bump-pins", "--all", "--dry-run"])
        took = time.perf_counter() - start
        print(f"exit status {rc}; {took:.1f} s; {len(fake.requests)} requests to the nixpkgs stand-in")
        # the deliberate move that ended in KeyError on a fresh clone (issue 25)
        rc = cli(["release", "bump-pins", "--branch", "main", "--pytorch", "2.9.1", "--rev", HEAD, "--dry-run"])
        print(f"bump-pins --branch main --pytorch 2.9.1 --rev {HEAD[:7]} --dry-run: exit status {rc}")
        for run in (1, 2) if args.apply else ():
            start = time.perf_counter()
            rc = cli(["release", "bump-pins", "--all"])
            print(f"run {run} (local delivery): exit status {rc}; {time.perf_counter() - start:.1f} s")
        if args.concurrent:
            concurrent(clones, tmp)
    return 0


def concurrent(clones: list[Path], tmp: Path) -> None:
    """Two `torchbot release bump-pins --all` processes at the same moment (local delivery, one
    state DB); afterwards no branch may hold two bump commits on top of what it had."""
    before = {c: dict(line.split() for line in git(c, "for-each-ref", "--format=%(refname:short) %(objectname)",
                                                    "refs/heads").splitlines()) for c in clones}
    cmd = [sys.executable, "-m", "bot", "release", "bump-pins", "--all"]
    start = time.perf_counter()
    procs = [subprocess.Popen(cmd, cwd=tmp, env=os.environ.copy(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate() for p in procs]
    took = time.perf_counter() - start
    for i, (p, (out, _)) in enumerate(zip(procs, outs, strict=True), 1):
        last = [x for x in out.splitlines() if x.strip()][-1:] or ["(no output)"]
        print(f"process {i}: exit status {p.returncode}; first line: {out.splitlines()[0] if out else ''}; "
              f"last: {last[0][:160]}")
        for line in [x for x in out.splitlines() if ": held" in x and "promises" not in x][:2]:
            print(f"    {line.strip()[:220]}")
    twice = []
    for c in clones:
        for ref, old in before[c].items():
            new = git(c, "rev-parse", ref).strip()
            bumps = int(git(c, "rev-list", "--count", f"{old}..{new}").strip() or 0) if new != old else 0
            if bumps > 2:  # one bump commit per pin group moved, plus at most the README's; never a second run's
                twice.append(f"{c.name} {ref}: {bumps} commits")
    print(f"two processes at once: {took:.1f} s; " + (f"moved more than once: {twice}" if twice else
                                                        "no branch moved twice"))


if __name__ == "__main__":
    raise SystemExit(main())
