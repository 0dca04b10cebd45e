"""A world for the dashboard tests: the build-pytorch and build-torchvision fixture repositories
(fixtures_realshapes: several branches, a three-pin branch, a companion repository, stale
READMEs, a companion pin that differs), a nixpkgs stand-in with dated pins and a channel head
ahead of them, a GitHub stand-in with an open bump pull request, and a state DB holding builds
in every state at the branch heads, publishes and the schedule's bump outcomes (held with its
reason, bumped, current).

    with dashboard_world(tmp_path) as w:
        w.ctx, w.pt, w.tv, w.nix, w.gh, w.now
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_realshapes import PIN_12_X, PIN_13_0, PIN_13_1, PIN_MAIN, RepoFixture, make_repos

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HEAD = "ff66ff66ff66ff66ff66ff66ff66ff66ff66ff66"  # the channel's head
DATES = {PIN_MAIN: "2025-08-01T00:00:00Z", PIN_12_X: "2025-11-01T00:00:00Z", PIN_13_0: "2026-01-10T00:00:00Z",
         PIN_13_1: "2026-02-01T00:00:00Z", HEAD: "2026-03-01T00:00:00Z"}
HELD = ("Refusing to bump 'main': it promises PyTorch 2.8.0 but nixpkgs ff66ff6 has torch 2.9.1; "
        "pass --pytorch 2.9.1 to move it deliberately")
MULTI = "pytorch-2.10-python313"  # three pins
PR_BRANCH = "pytorch-2.9-python311"
PR_HEAD = f"bump/{PR_BRANCH}-{HEAD[:12]}"


@dataclass
class World:
    ctx: object
    pt: RepoFixture
    tv: RepoFixture
    nix: FakeNixpkgs
    gh: FakeGitHub
    now: datetime
    failed: list[str]  # main's failed packages
    tmp: Path


def settings(tmp: Path, pt: RepoFixture, tv: RepoFixture, nix: FakeNixpkgs, gh: FakeGitHub, **over):
    from config.settings import Settings

    base = dict(repo_path=pt.path, repo_paths=[pt.path, tv.path], state_db=f"sqlite:///{tmp / 'state.sqlite'}",
                cache_dir=str(tmp / "cache"), audit_log=tmp / "audit.log", log_dir=tmp / "logs",
                channels_url=nix.channels_url, github_api_url=gh.url, github_token="ghp-test",
                github_repo="acme/build-pytorch", default_channel="nixos-unstable", http_retries=1,
                flox_org="acme", _env_file=None)
    base.update(over)
    return Settings(**base)


def _nixpkgs(nix: FakeNixpkgs) -> None:
    for sha in (PIN_MAIN, "1" * 40, PIN_12_X, "2" * 40, PIN_13_0, PIN_13_1, "3" * 40, HEAD):
        nix.add_commit(sha)
    nix.dates.update(DATES)
    nix.channels["nixos-unstable"] = HEAD


def _state(ctx, pt: RepoFixture, gh=None) -> list[str]:
    """Builds in every state at the heads, a publish, and the bump outcomes. Returns main's failed."""
    from sqlalchemy import select

    from release.state import Build, Publish, state_for

    st = state_for(ctx)
    main = pt.branches["main"].packages
    multi = pt.branches[MULTI].packages
    rows = []
    states = ["succeeded", "succeeded", "failed", "running", "queued", "interrupted"]
    for pkg, state in zip(main, states, strict=False):
        rows.append(Build(package=pkg, branch="main", state=state, commit=pt.tip("main"), pin=PIN_MAIN))
    for pkg in multi[:3]:  # built, but at an older commit: not built at the head
        rows.append(Build(package=pkg, branch=MULTI, state="succeeded", commit="e" * 40, pin=PIN_13_0))
    for pkg in multi[3:5]:
        rows.append(Build(package=pkg, branch=MULTI, state="succeeded", commit=pt.tip(MULTI), pin=PIN_13_0))
    for pkg, state in zip(pt.branches[PR_BRANCH].packages[:3], ["succeeded", "succeeded", "failed"], strict=False):
        rows.append(Build(package=pkg, branch=PR_HEAD, state=state, commit="9" * 40, pin=HEAD))
    with st.session() as s:
        s.add_all(rows)
        s.flush()
        s.add(Publish(package=main[0], branch="main", pin=PIN_MAIN, build_id=rows[0].id))
    from config.outcomes import BumpKind, ReasonKind
    from release.state.record import GroupOutcome, write_bump

    pr = pr_sha = None
    if gh is not None:
        (pr,) = [x for x in gh.pulls.prs.values() if x["head"]["ref"] == PR_HEAD]
        pr_sha = pr["head"]["sha"]
        with st.session() as s:  # the PR's builds ran at its head
            for b in s.scalars(select(Build).where(Build.branch == PR_HEAD)):
                b.commit, b.branch = pr_sha, PR_BRANCH
    write_bump(st, [
        GroupOutcome(str(pt.path), "build-pytorch", "main", "CUDA 12.8, CPU, darwin", BumpKind.HELD,
                     ReasonKind.BREAKS_PROMISE, HELD, PIN_MAIN, HEAD, "2.8.0", "2.9.1", "nixos-unstable"),
        *[GroupOutcome(str(pt.path), "build-pytorch", MULTI, g, BumpKind.CURRENT, old_pin=p, target=p,
                       tracks="nixos-unstable") for g, p in (("CUDA 13.0", PIN_13_0), ("CUDA 13.1", PIN_13_1),
                                                             ("CUDA 12.9", PIN_12_X))],
        GroupOutcome(str(pt.path), "build-pytorch", PR_BRANCH, "", BumpKind.BUMPED, old_pin=PIN_12_X, target=HEAD,
                     tracks="nixos-unstable", delivery="pr" if pr else "", pr_number=pr and pr["number"],
                     pr_url=pr and pr["html_url"], head_ref=PR_HEAD if pr else None, head_sha=pr_sha),
    ], at=(NOW - timedelta(days=1, hours=6)).replace(tzinfo=None))  # the week's bump ran the day before NOW
    return [p for p, st_ in zip(main, states, strict=False) if st_ in ("failed", "interrupted")]


def companion_drift(tv: RepoFixture, branch: str = "pytorch-2.9") -> None:
    """Move the torchvision branch's pin off its build-pytorch pair's (a commit there)."""
    from tests.support.fixtures_pins import git

    git(tv.path, "checkout", "-q", branch)
    for f in sorted((tv.path / ".flox" / "pkgs").glob("*.nix")):
        f.write_text(f.read_text().replace(PIN_12_X, PIN_13_0))
    git(tv.path, "commit", "-qam", "pin off the pair")
    git(tv.path, "push", "-q", "origin", branch)  # the remote has it (the dashboard reads the remote)
    git(tv.path, "checkout", "-q", "main")


@contextlib.contextmanager
def dashboard_world(tmp_path: Path, **over):
    from release.context import Context
    from tests.support.fixtures_pins import git

    pt, tv = make_repos(tmp_path, stale_readme=True)
    named = tmp_path / "github.com" / "acme" / "build-torchvision.git"  # its remote names its GitHub repository
    named.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(tv.origin), str(named))
    git(tv.path, "remote", "set-url", "origin", str(named))
    git(tv.path, "fetch", "-q", "origin")
    companion_drift(tv)
    with FakeNixpkgs() as nix, FakeGitHub(repo="acme/build-pytorch", upstream=nix.api_url) as gh:
        _nixpkgs(nix)
        gh.add_pull(PR_HEAD, PR_BRANCH)
        ctx = Context(settings(tmp_path, pt, tv, nix, gh, **over))
        failed = _state(ctx, pt, gh)
        yield World(ctx, pt, tv, nix, gh, NOW, failed, tmp_path)


def many_branches(n: int) -> dict:
    """Facts of ``n`` branches, each with a held bump, failed builds, an open PR and drift."""
    rev = "ab" * 20
    branches = []
    for i in range(n):
        name = f"pytorch-2.{i}-python313-a-rather-long-branch-name"
        variants = [{"package": f"pytorch-python313-cuda12_8-sm{80 + j}-avx512-{i}", "platform": "x86_64-linux",
                     "gpu_arch": f"sm{80 + j}", "build": "failed" if j < 3 else "succeeded", "at_head": True}
                    for j in range(8)]
        branches.append({
            "name": name, "head": f"{i:040x}", "pytorch": "2.9.1", "python": "3.13", "cuda": ["12.8"],
            "pins": [{"rev": rev, "labels": ["CUDA 12.8"], "packages": 8, "date": "2025-01-01T00:00:00Z",
                      "channel": "nixos-unstable", "channel_head": "cd" * 20, "behind": 1234}],
            "bumps": [{"group": "", "state": "held", "reason": f"Refusing to bump '{name}': it promises PyTorch "
                       "2.9.1 but nixpkgs cdcdcdc has torch 2.10.0", "when": "2026-03-01T06:00:00Z"}],
            "pr": {"number": 1000 + i, "url": f"https://github.com/acme/build-pytorch/pull/{1000 + i}",
                   "head": f"bump/{name}-cdcdcdcdcdcd", "builds": {"built": 5, "failed": 1}},
            "readme_drift": [f"{name}:README.md:11 [Branches] x: says a; true: b"] * 3,
            "companion_drift": [], "variants": variants, "jobs": [],
        })
    return {"generated": "2026-03-02T12:00:00+00:00",
            "repositories": [{"name": "build-pytorch", "path": "/r", "kind": "build-pytorch",
                              "github": "acme/build-pytorch", "branches": branches}]}


GPU_COLUMNS = ("sm61", "sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121")
REAL_BRANCHES = ("main", "main-staging", "pytorch-2.10-python313", "pytorch-2.8-python311", "pytorch-2.8-python312",
                 "pytorch-2.9-python311", "pytorch-2.9-python313", "pytorch-2.9-vllm-0.14.0", "pytorch-2.9-vllm-0.15.1")


def real_width_facts() -> dict:
    """Facts as wide as the real build-pytorch: its branch names, eleven GPU architectures (three ISAs
    each) plus cpu and darwin, builds in every state, a two-pin branch and a bump PR with a long summary."""
    branches = []
    states = ("succeeded", "failed", "running", None)
    for i, name in enumerate(REAL_BRANCHES):
        variants = [{"package": f"pytorch-python313-cuda12_8-{col}-{isa}", "platform": "x86_64-linux", "gpu_arch": col,
                     "build": states[(i + j) % 4], "at_head": True, "published": j % 2 == 0}
                    for j, col in enumerate(GPU_COLUMNS) for isa in ("avx2", "avx512", "armv9")]
        variants += [{"package": f"pytorch-python313-cpu-{isa}", "platform": "x86_64-linux", "gpu_arch": None,
                      "build": "succeeded", "at_head": True} for isa in ("avx2", "avx512")]
        variants.append({"package": "pytorch-python313-darwin-m1", "platform": "aarch64-darwin", "gpu_arch": None,
                         "build": "succeeded", "at_head": True})
        pin = {"rev": "fe5e41d" + "0" * 33, "labels": ["CUDA 12.8"], "packages": 35, "date": "2026-10-01T00:00:00Z",
               "channel": "nixos-unstable", "channel_head": "ab" * 20, "behind": 1234,
               "channel_date": "2026-11-20T00:00:00Z"}
        pins = [pin, {**pin, "rev": "cc33" + "0" * 36, "labels": ["CUDA 13.0"]}] if i == 2 else [pin]
        branches.append({
            "name": name, "head": f"{i:040x}", "pytorch": "2.9.1", "python": "3.13", "cuda": ["12.8"], "pins": pins,
            "bumps": [{"group": "", "state": ("held", "current", "bumped")[i % 3], "when": "2026-11-23T06:00:00Z",
                       "reason": "" if i % 3 else "it promises PyTorch 2.9.1 but nixpkgs abababa has torch 2.10.0"}],
            "pr": ({"number": 1234, "url": "https://github.com/acme/build-pytorch/pull/1234",
                    "head": f"bump/{name}-abababababab", "builds": {"built": 50, "failed": 12}} if i == 5 else None),
            "readme_drift": ["README.md:11 stale"] * (i % 2), "companion_drift": [], "variants": variants,
            "jobs": [{"id": "bump", "description": "weekly bump", "next_run": "2026-11-30T06:00:00+00:00"}],
        })
    return {"generated": "2026-11-28T09:00:00+00:00",
            "repositories": [{"name": "build-pytorch", "path": "/srv/build-pytorch", "kind": "build-pytorch",
                              "github": "acme/build-pytorch", "branches": branches}]}
