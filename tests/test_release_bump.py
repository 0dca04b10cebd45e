"""`torchbot release bump-pins` end to end: real git repos with a bare origin, a real HTTP
server for the channel and GitHub endpoints, real nix-instantiate --parse."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from bot.cli import main as cli
from release.context import Context
from config.errors import ExternalError, RefusedError, ValidationError
from config.settings import Settings
from release.pins.commands import plan_bump
from tests.fakes_nixpkgs import FakeNixpkgs
from tests.fixtures_pins import NEW, PIN_A, PIN_B, PIN_C, build_repo, git, refs, small_catalog_branches, tree_files

NEWER_TORCH = "aaaabbbbccccddddeeeeffff0000111122223333"
CUDA_ALL = {"cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13_0", "cudaPackages_13_1"}


@pytest.fixture
def fake():
    with FakeNixpkgs() as f:
        f.add_rev(PIN_A, "2.8.0", CUDA_ALL)
        f.add_rev(PIN_B, "2.9.1", CUDA_ALL)
        f.add_rev(PIN_C, "2.9.1", CUDA_ALL)
        f.add_rev("0182a361324364ae3f436a63005877674cf45efb", "2.9.1", CUDA_ALL)
        f.add_rev(NEW, "2.8.4", CUDA_ALL)
        f.add_rev(NEWER_TORCH, "2.9.1", {"cudaPackages_12_9", "cudaPackages_13_0"})
        f.channels["nixos-unstable"] = NEW
        yield f


@pytest.fixture
def repo(tmp_path):
    work, origin = build_repo(tmp_path, small_catalog_branches())
    return work, origin


@pytest.fixture
def env(monkeypatch, fake, repo):
    work, _ = repo
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(work))
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", fake.channels_url)
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("TORCHBOT_HTTP_RETRIES", "2")
    monkeypatch.setenv("TORCHBOT_HTTP_TIMEOUT", "2")
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_NAME", "torchbot")
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_EMAIL", "bot@example.com")
    return work


def ctx() -> Context:
    return Context(Settings(), use_repo=False)


def parse_ok(texts, tmp_path) -> None:
    """nix-instantiate --parse over every given recipe text (one process)."""
    if isinstance(texts, str):
        texts = [texts]
    d = tmp_path / f"parse{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    files = []
    for i, text in enumerate(texts):
        f = d / f"r{i}.nix"
        f.write_text(text)
        files.append(str(f))
    r = subprocess.run(["nix-instantiate", "--parse", *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def user_state(work):
    return (
        git(work, "symbolic-ref", "HEAD"),
        git(work, "ls-files", "-s"),
        git(work, "status", "--porcelain=v1", "--untracked-files=all"),
        (work / "scratch.txt").read_text(),
    )


def dirty(work):
    (work / "scratch.txt").write_text("untracked work\n")
    (work / "README.md").write_text((work / "README.md").read_text() + "local edit\n")
    (work / "notes.txt").write_text("staged\n")
    git(work, "add", "notes.txt")


def test_bump_one_branch(env, tmp_path, capsys):
    work = env
    dirty(work)
    before_user = user_state(work)
    before = refs(work)
    others = {b: tree_files(work, b, ".") for b in ("main", "pytorch-2.9-vllm-0.15.1", "pytorch-2.10-python313")}
    old_files = tree_files(work, "pytorch-2.8-python312")

    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.8-python312", "--rev", NEW, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    b = out["branches"][0]
    assert b["old_pin"] == PIN_A and b["new_pin"] == NEW
    new_files = tree_files(work, "pytorch-2.8-python312")
    assert set(new_files) == set(old_files)
    for path, text in new_files.items():
        assert NEW in text and PIN_A not in text
        assert text == old_files[path].replace(PIN_A, NEW)
    parse_ok(list(new_files.values()), tmp_path)
    msg = git(work, "log", "-1", "--format=%s%n%an", "pytorch-2.8-python312").splitlines()
    assert msg == ["nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.8.4, cudaPackages_12_8)", "torchbot"]
    readme = git(work, "show", "pytorch-2.8-python312:README.md")
    row = [l for l in readme.splitlines() if l.startswith("| **`pytorch-2.8-python312`**")][0]
    assert f"[`0123abc`](https://github.com/NixOS/nixpkgs/tree/{NEW})" in row
    main_row = [l for l in readme.splitlines() if l.startswith("| `main`")][0]
    assert PIN_A in main_row  # other branches' rows keep their pins
    # other branches byte-identical, one commit on the bumped branch
    for name, files in others.items():
        assert tree_files(work, name, ".") == files
    after = refs(work)
    changed = {r for r in after if after[r] != before.get(r)}
    assert changed == {"refs/heads/pytorch-2.8-python312"}
    assert git(work, "rev-parse", "pytorch-2.8-python312~1").strip() == before["refs/heads/pytorch-2.8-python312"]
    assert user_state(work) == before_user

    # idempotence: second run makes no commit
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.8-python312", "--rev", NEW])
    assert rc == 0
    assert "up to date" in capsys.readouterr().out
    assert refs(work) == after


def test_bump_all_from_channel(env, tmp_path, capsys):
    work = env
    dirty(work)
    before_user = user_state(work)
    before = refs(work)
    vllm = tree_files(work, "pytorch-2.9-vllm-0.15.1", ".")
    multi = tree_files(work, "pytorch-2.10-python313", ".")
    # --all: the three-pin branch needs a selector, and the refusal lists its groups
    rc = cli(["release", "bump-pins", "--all"])
    err = capsys.readouterr().err
    assert rc == 1 and "pytorch-2.10-python313" in err and "fe5e41d" in err and "6a030d5" in err and "2017d6d" in err
    assert refs(work) == before
    # main is checked out with uncommitted changes: moving it would leave an index that reverts
    # the bump, so the whole run is refused and nothing moves
    args = ["release", "bump-pins", "--all", "--cuda", "12.8", "--channel", "nixos-unstable", "--json"]
    rc = cli(args)
    captured = capsys.readouterr()
    assert rc == 1 and "checked out" in captured.err and "uncommitted changes" in captured.err
    assert refs(work) == before and user_state(work) == before_user
    # a clean checkout (untracked files are fine) is fast-forwarded together with its work tree
    git(work, "reset", "-q", "--hard")
    rc = cli(args)
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert sorted(out["commits"]) == ["main", "pytorch-2.10-python313", "pytorch-2.8-python312"]
    assert any(s["branch"] == "pytorch-2.9-vllm-0.15.1" for s in out["skipped"])
    for name in ("main", "pytorch-2.8-python312"):
        files = tree_files(work, name)
        parse_ok(list(files.values()), tmp_path)
        for path, text in files.items():
            assert NEW in text and PIN_A not in text
            assert git(work, "log", "-1", "--format=%s", name).strip() == (
                "nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.8.4, cudaPackages_12_8)"
            )
    after_multi = tree_files(work, "pytorch-2.10-python313", ".")
    for path, text in after_multi.items():
        if "cuda12_8" in path:
            assert NEW in text and PIN_A not in text
            parse_ok([text], tmp_path)
        else:
            assert text == multi[path] or path == "README.md"
    assert tree_files(work, "pytorch-2.9-vllm-0.15.1", ".") == vllm
    # main was checked out: HEAD still names it, and index and files hold the bump (nothing staged)
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(work, "status", "--porcelain=v1", "--untracked-files=no") == ""
    assert all(NEW in (work / p).read_text() for p in tree_files(work, "main"))
    assert (work / "scratch.txt").read_text() == "untracked work\n"
    assert any("fast-forwarded" in n for n in out["notes"])


def test_multi_pin_from_pin_and_dry_run(env, fake, tmp_path, capsys):
    work = env
    before = refs(work)
    fake.add_rev(NEW, "2.9.3", CUDA_ALL)
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.10-python313", "--rev", NEW])
    assert rc == 1
    err = capsys.readouterr().err
    assert "--cuda" in err and "--from-pin" in err and "CUDA 13.1" in err
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.10-python313", "--from-pin", PIN_C[:7], "--rev", NEW, "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "2017d6d -> 0123abc" in out and "nothing was written" in out
    assert refs(work) == before
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.10-python313", "--from-pin", PIN_C[:7], "--rev", NEW])
    assert rc == 0
    files = tree_files(work, "pytorch-2.10-python313")
    parse_ok([t for p, t in files.items() if "cuda13_1" in p], tmp_path)
    for path, text in files.items():
        if "cuda13_1" in path:
            assert NEW in text
        else:
            assert NEW not in text
    assert git(work, "log", "-1", "--format=%s", "pytorch-2.10-python313").strip() == (
        "nixpkgs: bump pin 2017d6d -> 0123abc (torch 2.9.3, cudaPackages_13_1)"
    )


@pytest.mark.parametrize(
    "case",
    ["minor", "cuda", "vllm", "badrev", "unknownrev", "down", "garbage", "channel-garbage"],
)
def test_refusals_change_nothing(env, fake, case, capsys):
    work = env
    before = refs(work)
    args = ["release", "bump-pins", "--branch", "pytorch-2.8-python312", "--rev", NEW]
    if case == "minor":
        fake.torch[NEW] = "2.9.1"
        expect = "torch 2.9.1"
    elif case == "cuda":
        args[-1] = NEWER_TORCH
        fake.torch[NEWER_TORCH] = "2.8.1"
        expect = "cudaPackages_12_8"
    elif case == "vllm":
        args[3] = "pytorch-2.9-vllm-0.15.1"
        expect = "--force"
    elif case == "badrev":
        args[-1] = "not-a-sha"
        expect = "40-character"
    elif case == "unknownrev":
        args[-1] = "f" * 40
        expect = "no commit"
    elif case == "down":
        fake.mode = "down"
        expect = "after 2 attempts"
    elif case == "garbage":
        fake.mode = "garbage"
        expect = "garbage"
    else:
        fake.channels["nixos-unstable"] = "<html>maintenance</html>"
        args = args[:-2] + ["--channel", "nixos-unstable"]
        expect = "not a commit id"
    rc = cli(args)
    err = capsys.readouterr().err
    assert rc == 1, err
    assert expect in err
    assert "Traceback" not in err
    assert refs(work) == before


def test_minor_change_names_both_versions(env, fake):
    fake.torch[NEW] = "2.9.1"
    with pytest.raises(RefusedError) as info:
        plan_bump(ctx(), "pytorch-2.8-python312", NEW)
    assert "2.9.1" in info.value.message and "2.8.0" in info.value.message


def test_vllm_with_force(env, fake, tmp_path):
    work = env
    fake.torch[NEW] = "2.9.1"
    plan = plan_bump(ctx(), "pytorch-2.9-vllm-0.15.1", NEW, force=True)
    assert "pytorch-2.9-vllm-0.15.1" in plan.text()
    result = plan.apply()
    assert "pytorch-2.9-vllm-0.15.1" in result.to_dict()["commits"]
    files = tree_files(work, "pytorch-2.9-vllm-0.15.1")
    assert all(NEW in t for t in files.values())
    parse_ok(list(files.values()), tmp_path)


def test_push_to_origin_and_rejected_push(env, repo, tmp_path):
    work, origin = repo
    result = plan_bump(ctx(), "main", NEW, push=True).apply()
    sha = result.to_dict()["commits"]["main"]
    assert git(origin, "rev-parse", "main").strip() == sha
    assert git(work, "rev-parse", "main").strip() == sha

    # someone else moves origin's pytorch-2.8-python312: our push is rejected, nothing changes
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "-b", "pytorch-2.8-python312", str(origin), str(other))
    (other / "x.txt").write_text("x")
    git(other, "add", "x.txt")
    git(other, "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "remote moved")
    git(other, "push", "-q", "origin", "pytorch-2.8-python312")
    before, before_origin = refs(work), refs(origin)
    with pytest.raises(ExternalError) as info:
        plan_bump(ctx(), ["pytorch-2.8-python312"], NEW, push=True).apply()
    assert "rejected" in info.value.message and "as they were" in info.value.message
    assert refs(work) == before
    assert refs(origin) == before_origin


def test_open_pr(env, repo, fake):
    work, origin = repo
    before = refs(work)
    result = plan_bump(ctx(), "main", NEW, open_pr=True).apply()
    d = result.to_dict()
    assert d["pull_requests"][0]["url"] == "https://github.test/pr/1"
    pr = fake.pulls[0]
    assert pr["head"] == "bump/main-0123abc" and pr["base"] == "main"
    assert pr["repo"] == "barstoolbluz/build-pytorch"
    assert f"https://github.com/NixOS/nixpkgs/compare/{PIN_A}...{NEW}" in pr["body"]
    assert "2.8.0 -> 2.8.4" in pr["body"] and "cudaPackages_12_8" in pr["body"]
    assert pr["title"] == "nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.8.4, cudaPackages_12_8)"
    pushed = git(origin, "rev-parse", "bump/main-0123abc").strip()
    assert pushed == d["commits"]["main"]
    assert all(NEW in t for t in tree_files(origin, "bump/main-0123abc").values())
    heads = lambda r: {k: v for k, v in r.items() if k.startswith("refs/heads/")}
    assert heads(refs(work)) == heads(before)  # local branches stay where they were


def test_open_pr_failure_removes_pushed_branch(env, repo, fake):
    work, origin = repo
    fake.pull_status = 422
    before_origin = refs(origin)
    with pytest.raises(ExternalError):
        plan_bump(ctx(), "main", NEW, open_pr=True).apply()
    assert refs(origin) == before_origin


def test_neither_branch_nor_all(env):
    with pytest.raises(ValidationError):
        plan_bump(ctx(), [], NEW)


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="nix-instantiate not installed")
def test_fixture_recipes_parse(repo, tmp_path):
    work, _ = repo
    parse_ok(list(tree_files(work, "main").values()), tmp_path)


def test_bump_recipes_of_the_generator(tmp_path, fake, monkeypatch):
    """The recipes torchbot itself renders (release.render) bump the same way."""
    render = pytest.importorskip("release.recipes.render")
    from config.catalog import load_catalog
    from tests.fixtures_pins import build_repo_from_files

    cat = load_catalog()
    files = {name: render.render_branch(cat, name) for name in ("main", "pytorch-2.9-python313")}
    work, origin = build_repo_from_files(tmp_path / "gen", files)
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", fake.channels_url)
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", fake.api_url)
    other = tree_files(work, "pytorch-2.9-python313", ".")
    result = plan_bump(ctx(), "main", NEW, repo=work).apply()
    assert list(result.to_dict()["commits"]) == ["main"]
    new = tree_files(work, "main")
    assert len(new) == len(cat.branches["main"].variants)
    assert all(NEW in t and PIN_A not in t for t in new.values())
    parse_ok(list(new.values()), tmp_path)
    assert tree_files(work, "pytorch-2.9-python313", ".") == other
    try:  # the repository reader (issue 3) reads the new pin back when it is installed
        from release.recipes import reader
    except ImportError:
        return
    read = reader.read_repository(work, cat)
    branches = read.branches if hasattr(read, "branches") else read
    assert set(branches["main"].pins) == {NEW}
