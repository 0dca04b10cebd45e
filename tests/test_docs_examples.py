"""Every torchbot command the docs/ pages show runs as written (issue 35), like the README's
(tests/test_readme_examples.py, which checks the `torchbot ask` ones and their answers).

Each command line of a ``sh``/``console``/plain code block of docs/*.md (``$ `` prompts and ``\\``
continuations read as a shell reads them) is run through the console script against fresh fixture
repositories in the real shapes (``./build-pytorch``, ``./build-torchvision``, each with a bare
origin), the nixpkgs stand-in and a GitHub stand-in built from GitHub's OpenAPI description. The
page's placeholders are filled in (``<sha>``: the channel's head; ``sha256-...``: an SRI hash;
``PATH``: the build-pytorch checkout), and the settings are those of a configured deployment (a
FloxHub organisation, bumps delivered by push, the schedule building nothing after a bump). It must
exit as the page says (0, or 1 where the page says "exit 1 on drift") with no traceback. A command
whose page shows it in a situation the fixtures are not in (a bump branch already pushed, a channel
that moved past main's promise) is listed in ``REFUSES`` with the one line it must refuse with; a
listed command that is no longer in the docs fails the test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_realshapes import make_repos
from tests.support.fixtures_weekly import HEAD, nixpkgs_history

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
SRI = "sha256-" + "A" * 43 + "="
DOC_REV = "0123abcd" * 5  # the revision docs/cli.md shows
# (page, start of the command) -> the one line it refuses with here, and why that is what the page means
REFUSES: dict[tuple[str, str], tuple[str, str]] = {
    ("builds-and-publishing.md", "torchbot release build --branch main --head bump/main-0123abc"): (
        "torchbot: 'origin' has no branch 'bump/main-0123abc', so GitHub cannot build it: push first",
        "the page builds a bump branch its bump pushed; the fixtures have none"),
    ("releases.md", "torchbot release bump-pins --branch main --channel nixos-unstable --push"): (
        "torchbot: Refusing to bump 'main': it promises PyTorch 2.8",
        "the stand-in channel's head holds torch 2.9.1, past main's promise: the guard the page describes"),
    ("cli.md", f"torchbot release bump-pins --branch main --rev {DOC_REV}"): (
        "torchbot: Refusing to bump 'main': it promises PyTorch 2.8",
        "the page's revision holds torch 2.9.1 here, past main's promise"),
}


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    command: str  # as the page writes it (continuations joined)
    comment: str  # what the page says next to it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.command[:50]}"


def examples() -> list[Example]:
    out = []
    for page in DOCS:
        text = page.read_text()
        for m in re.finditer(r"```(sh|console|bash|)\n(.*?)```", text, re.S):
            first = text[:m.start(2)].count("\n") + 1
            lines = m.group(2).split("\n")
            i = 0
            while i < len(lines):
                start, line = i, lines[i]
                while line.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line.rstrip()[:-1] + " " + lines[i].strip()
                i += 1
                stripped = line.strip().removeprefix("$ ")
                if not stripped.startswith("torchbot ") or stripped.startswith("torchbot ask "):
                    continue  # not a command line (a tree, output), or an `ask` the README test runs
                command, _, comment = stripped.partition("  #")
                out.append(Example(page.name, first + start, command.strip(), comment.strip()))
    return out


def reads_only(command: str) -> bool:
    """A command that writes nothing into the repositories: it may share them with the others."""
    words = command.split()
    if {"--push", "--open-pr", "--write", "--commit", "--with-companions"} & set(words):
        return False
    return bool({"--dry-run", "--check"} & set(words)) or words[1] in ("catalog", "dashboard", "completion", "paths") \
        or words[1:3] in (["release", "status"], ["release", "workflow"])


def refusal(example: Example) -> str | None:
    return next((line for (page, start), (line, _why) in REFUSES.items()
                 if example.page == page and example.command.startswith(start)), None)


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    with FakeNixpkgs() as nix, FakeGitHub(repo="acme/build-pytorch", upstream=nix.api_url) as gh:
        nix.shared = make_repos(tmp_path_factory.mktemp("shared-repos"))  # for the examples that only read
        nixpkgs_history(nix)
        nix.add_commit(DOC_REV, "the revision docs/cli.md shows")
        nix.channels["nixos-unstable"] = HEAD
        yield nix, gh


def fill(command: str, where: Path) -> str:
    """The page's placeholders, filled in as a reader would."""
    return command.replace("<sha>", HEAD).replace("sha256-...", SRI).replace(" PATH", f" {where / 'build-pytorch'}")


def run(example: Example, tmp_path: Path, nix, gh) -> subprocess.CompletedProcess:
    pt, tv = nix.shared if reads_only(example.command) else make_repos(tmp_path / "fixtures")
    if not example.command.startswith("torchbot release init "):  # init makes ./build-pytorch itself
        (tmp_path / "build-pytorch").symlink_to(pt.path)
        (tmp_path / "build-torchvision").symlink_to(tv.path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env.update(TORCHBOT_REPO_PATH=f"{pt.path},{tv.path}", TORCHBOT_CHANNELS_URL=nix.channels_url,
               TORCHBOT_NIXPKGS_TARBALL_URL=nix.tarball_url, TORCHBOT_GITHUB_API_URL=gh.url,
               TORCHBOT_GITHUB_TOKEN=gh.token, TORCHBOT_GITHUB_REPO="acme/build-pytorch",
               TORCHBOT_HTTP_RETRIES="1", TORCHBOT_HTTP_TIMEOUT="5",
               TORCHBOT_STATE_DB=f"sqlite:///{tmp_path}/state.sqlite", TORCHBOT_CACHE_DIR=str(tmp_path / "cache"),
               TORCHBOT_GIT_AUTHOR_NAME="torchbot", TORCHBOT_GIT_AUTHOR_EMAIL="bot@example.com",
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path / "home"), TORCHBOT_FLOX_ORG="acme",
               TORCHBOT_BUMP_DELIVERY="push", TORCHBOT_SCHEDULE_BUILD_BACKEND="none")  # no stand-in runs workflows
    for target in re.findall(r"> (~/\S+)", example.command):  # a redirect into a folder the page expects
        (tmp_path / "home" / target[2:]).parent.mkdir(parents=True, exist_ok=True)
    torchbot = f"{shlex.quote(sys.executable)} -m bot"
    line = re.sub(r"^torchbot\b", torchbot, fill(example.command, tmp_path))
    return subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300, check=False)


def test_the_docs_have_examples_and_every_listed_need_is_still_shown():
    found = examples()
    assert len(found) >= 20 and {e.page for e in found} >= {"releases.md", "dashboard.md", "cli.md"}
    for page, start in REFUSES:
        assert any(e.page == page and e.command.startswith(start) for e in found), (page, start)


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.id)
def test_a_docs_example_runs_as_written(example, tmp_path, services):
    r = run(example, tmp_path, *services)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-1500:]
    refused = refusal(example)
    if refused:
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, (example.command, r.stderr)
        assert r.stderr.startswith(refused), (example.command, r.stderr)
        return
    expected = {0, 1} if "exit 1" in example.comment else {0}
    assert r.returncode in expected, (example.command, r.stdout[-1500:], r.stderr[-1500:])
