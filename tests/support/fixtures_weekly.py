"""The weekly loop's world: fresh clones of the real-shaped build-pytorch and build-torchvision
fixtures (only ``main`` local, every other branch as ``origin/*``), and a nixpkgs history in which
torch moves 2.8.0 -> 2.9.0 -> 2.9.1, with the channel head on 2.9.1 (as in issue 25).

History, oldest first (``FakeNixpkgs.history``; the torch file and the CUDA sets are inherited by
each commit from the last one that set them)::

    PIN_MAIN  torch 2.8.0, every CUDA set     main's pin (promises 2.8)
    K28       misc                            the newest commit keeping 2.8
    T29       torch 2.9.0                     "python3Packages.torch: 2.8.0 -> 2.9.0"
    PIN_12_X, PIN_13_0, PIN_13_1              the 2.9 and 2.10 branches' pins
    K29       misc
    T291      torch 2.9.1                     "python3Packages.torch: 2.9.0 -> 2.9.1"
    HEAD      misc                            nixos-unstable's head
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import git
from tests.support.fixtures_realshapes import (
    PIN_12_X,
    PIN_13_0,
    PIN_13_1,
    PIN_MAIN,
    RepoFixture,
    make_pytorch_repo,
    make_torchvision_repo,
)

K28 = "1128" * 10
T29 = "2290" * 10
K29 = "2299" * 10
T291 = "2291" * 10
HEAD = "feed0291" * 5
CUDA_SETS = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13", "cudaPackages_13_0", "cudaPackages_13_1"}


def nixpkgs_history(fake: FakeNixpkgs, channel: str = "nixos-unstable") -> None:
    fake.add_commit(PIN_MAIN, "python3Packages.torch: 2.7.1 -> 2.8.0", torch="2.8.0", cuda_sets=CUDA_SETS)
    fake.add_commit(K28, "hello: 2.12 -> 2.12.1")
    fake.add_commit(T29, "python3Packages.torch: 2.8.0 -> 2.9.0", torch="2.9.0")
    for pin in (PIN_12_X, PIN_13_0, PIN_13_1):
        fake.add_commit(pin, "cudaPackages: update")
    fake.add_commit(K29, "curl: 8.11 -> 8.12")
    fake.add_commit(T291, "python3Packages.torch: 2.9.0 -> 2.9.1", torch="2.9.1")
    fake.add_commit(HEAD, "firefox: 140 -> 141")
    fake.channels[channel] = HEAD


def fresh_clone(fixture: RepoFixture, where: Path) -> Path:
    """``git clone`` of the fixture's bare origin: ``main`` local, the other branches ``origin/*`` only."""
    git(where.parent, "clone", "-q", str(fixture.origin), str(where))
    return where


def fresh_clones(tmp_path: Path) -> tuple[Path, Path, RepoFixture, RepoFixture]:
    """(build-pytorch clone, build-torchvision clone, and their fixtures)."""
    pt = make_pytorch_repo(tmp_path / "made")
    tv = make_torchvision_repo(tmp_path / "made")
    (tmp_path / "clones").mkdir()
    return (fresh_clone(pt, tmp_path / "clones" / "build-pytorch"),
            fresh_clone(tv, tmp_path / "clones" / "build-torchvision"), pt, tv)


def local_branches(path: Path) -> set[str]:
    return set(git(path, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split())


def serve_env(monkeypatch, tmp_path, pt, tv, nix, **extra: str) -> None:
    """The settings a weekly-loop test runs torchbot with: both clones, the nixpkgs stand-in, a
    state DB in ``tmp_path``, no GitHub token (local delivery) unless ``extra`` gives one."""
    env = {
        "TORCHBOT_REPO_PATH": f"{pt},{tv}", "TORCHBOT_CHANNELS_URL": nix.channels_url,
        "TORCHBOT_GITHUB_API_URL": nix.api_url, "TORCHBOT_NIXPKGS_TARBALL_URL": nix.tarball_url,
        "TORCHBOT_HTTP_RETRIES": "1", "TORCHBOT_HTTP_TIMEOUT": "5", "TORCHBOT_STATE_DB": f"sqlite:///{tmp_path}/s.db",
        "TORCHBOT_GIT_AUTHOR_NAME": "torchbot", "TORCHBOT_GIT_AUTHOR_EMAIL": "bot@example.com", **extra,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    if "TORCHBOT_GITHUB_TOKEN" not in extra:
        monkeypatch.delenv("TORCHBOT_GITHUB_TOKEN", raising=False)
