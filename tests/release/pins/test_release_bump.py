"""`torchbot release bump-pins` end to end: real git repos with a bare origin, a real HTTP
server for the channel and GitHub endpoints, real nix-instantiate --parse."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from bot.frontends.cli.main import main as cli
from config.errors import ExternalError, RefusedError, ValidationError
from config.settings import Settings
from release.context import Context
from release.pins.commands import plan_bump
from tests.support import ci
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.fixtures_pins import (
    NEW,
    PIN_A,
    PIN_B,
    PIN_C,
    build_repo,
    git,
    refs,
    small_catalog_branches,
    tree_files,
)

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
    monkeypatch.setenv("TORCHBOT_NIXPKGS_TARBALL_URL", fake.tarball_url)
    monkeypatch.setenv("TORCHBOT_HTTP_RETRIES", "2")
    monkeypatch.setenv("TORCHBOT_HTTP_TIMEOUT", "2")
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_NAME", "torchbot")
    monkeypatch.setenv("TORCHBOT_GIT_AUTHOR_EMAIL", "bot@example.com")
    return work


def ctx() -> Context:
    return Context(Settings(), use_repo=False)


def prefetched(fake, rev) -> str:
    """What nix-prefetch-url --unpack says of the served tarball (the test's own run, in a
    private store so it does not depend on torchbot's choice of store)."""
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        r = subprocess.run(["nix-prefetch-url", "--unpack", "--store", f"local?root={root}",
                            f"{fake.tarball_url}{rev}.tar.gz"], check=False, capture_output=True, text=True)
        subprocess.run(["chmod", "-R", "u+w", root], check=False)  # store paths are read-only
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def with_hash(text: str, rev: str, sha: str) -> str:
    """The fixture recipe with ``sha256`` on the line after its fetchTarball url."""
    line = f'    url = "https://github.com/NixOS/nixpkgs/archive/{rev}.tar.gz";\n'
    assert line in text
    return text.replace(line, line + f'    sha256 = "{sha}";\n')


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
    r = subprocess.run(["nix-instantiate", "--parse", *files], check=False, capture_output=True, text=True)
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


def test_bump_one_branch(env, fake, tmp_path, capsys):
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
    sha = prefetched(fake, NEW)
    assert b["sha256"] == sha
    for path, text in new_files.items():
        assert NEW in text and PIN_A not in text
        assert text == with_hash(old_files[path].replace(PIN_A, NEW), NEW, sha)
    parse_ok(list(new_files.values()), tmp_path)
    msg = git(work, "log", "-1", "--format=%s%n%an", "pytorch-2.8-python312").splitlines()
    assert msg == ["nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.8.4, cudaPackages_12_8)", "torchbot"]
    readme = git(work, "show", "pytorch-2.8-python312:README.md")
    row = next(line for line in readme.splitlines() if line.startswith("| **`pytorch-2.8-python312`**"))
    assert f"[`0123abc`](https://github.com/NixOS/nixpkgs/tree/{NEW})" in row
    main_row = next(line for line in readme.splitlines() if line.startswith("| `main`"))
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
    """--all: every branch and every pin group its own outcome; one refusal (main is checked out
    with uncommitted changes) holds that branch only, and the exit status says some were held."""
    work = env
    dirty(work)
    before_user = user_state(work)
    before = refs(work)
    vllm = tree_files(work, "pytorch-2.9-vllm-0.15.1", ".")
    multi = tree_files(work, "pytorch-2.10-python313", ".")
    rc = cli(["release", "bump-pins", "--all", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["exit_code"] == 1, out
    by = {(o["branch"], o["group"]): o for o in out["outcomes"]}
    assert by[("main", "CUDA 12.8, CPU, darwin")]["outcome"] == "held"
    assert "uncommitted changes" in by[("main", "CUDA 12.8, CPU, darwin")]["reason"]
    multi_groups = sorted(g for b, g in by if b == "pytorch-2.10-python313")
    assert multi_groups == ["CUDA 12.8", "CUDA 13.0, CPU, darwin", "CUDA 13.1"]  # three pins, three outcomes
    assert all(by[("pytorch-2.10-python313", g)]["outcome"] == "bumped" for g in multi_groups)
    assert by[("pytorch-2.8-python312", "CUDA 12.8, CPU, darwin")]["outcome"] == "bumped"
    assert {o["outcome"] for o in out["outcomes"] if o["branch"] == "pytorch-2.9-vllm-0.15.1"} == {"skipped"}
    after = refs(work)
    assert after["refs/heads/main"] == before["refs/heads/main"] and user_state(work) == before_user
    assert after["refs/heads/pytorch-2.8-python312"] != before["refs/heads/pytorch-2.8-python312"]
    # the three groups are three commits, one on the other, each saying which pin it moves
    old = before["refs/heads/pytorch-2.10-python313"]
    log = git(work, "log", "--format=%s", f"{old}..pytorch-2.10-python313").splitlines()
    assert len(log) == 3 and all(line.startswith("nixpkgs: bump pin ") for line in log), log
    for path, text in tree_files(work, "pytorch-2.10-python313", ".").items():
        if path.endswith(".nix"):
            assert NEW in text and not any(p in text for p in (PIN_A, PIN_B, PIN_C)), path
            parse_ok([text], tmp_path)
        else:
            assert path == "README.md" or text == multi[path]
    assert tree_files(work, "pytorch-2.9-vllm-0.15.1", ".") == vllm
    assert out["delivery"] == "local" and "nothing leaves this machine" in cli_text(["--all", "--dry-run"], capsys)

    # a clean checkout (untracked files are fine) is fast-forwarded together with its work tree
    git(work, "reset", "-q", "--hard")
    rc = cli(["release", "bump-pins", "--all", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    kinds = {(o["branch"], o["outcome"]) for o in out["outcomes"]}
    assert ("main", "bumped") in kinds and ("pytorch-2.8-python312", "current") in kinds
    files = tree_files(work, "main")
    parse_ok(list(files.values()), tmp_path)
    assert all(NEW in t and PIN_A not in t for t in files.values())
    assert git(work, "log", "-1", "--format=%s", "main").strip() == (
        "nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.8.4, cudaPackages_12_8)")
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(work, "status", "--porcelain=v1", "--untracked-files=no") == ""
    assert all(NEW in (work / p).read_text() for p in tree_files(work, "main"))
    assert (work / "scratch.txt").read_text() == "untracked work\n"
    # --cuda narrows the groups (the others are skipped, saying why); a missing CUDA set holds one
    rc = cli(["release", "bump-pins", "--all", "--cuda", "13.1", "--rev", NEWER_TORCH, "--dry-run", "--json"])
    out = json.loads(capsys.readouterr().out)
    asked = [o for o in out["outcomes"] if o["outcome"] != "skipped"]
    assert rc == 1, [o for o in out["outcomes"] if o["outcome"] != "skipped"]
    assert [(o["branch"], o["outcome"]) for o in asked] == [("pytorch-2.10-python313", "held")]
    assert "cudaPackages_13_1" in asked[0]["reason"]
    assert any("--cuda" in o["reason"] for o in out["outcomes"] if o["outcome"] == "skipped")


def cli_text(args, capsys) -> str:
    cli(["release", "bump-pins", *args])
    return capsys.readouterr().out


def test_multi_pin_from_pin_and_dry_run(env, fake, tmp_path, capsys):
    work = env
    before = refs(work)
    fake.add_rev(NEW, "2.9.3", CUDA_ALL)
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.10-python313", "--rev", NEW])
    assert rc == 1
    err = capsys.readouterr().err
    assert "--cuda" in err and "--from-pin" in err and "CUDA 13.1" in err
    rc = cli(
        [
            "release",
            "bump-pins",
            "--branch",
            "pytorch-2.10-python313",
            "--from-pin",
            PIN_C[:7],
            "--rev",
            NEW,
            "--dry-run",
        ]
    )
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
    ["minor", "cuda", "vllm", "badrev", "unknownrev", "unknownrev-404", "misspelt-channel", "down", "garbage",
     "channel-garbage"],
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
    elif case == "unknownrev":  # GitHub's 422 "No commit found for SHA: ..."
        args[-1] = "f" * 40
        expect = f"nixpkgs has no commit {'f' * 40}"
    elif case == "unknownrev-404":  # the other answer GitHub documents for it
        fake.unknown_ref_status = 404
        args[-1] = "f" * 40
        expect = f"nixpkgs has no commit {'f' * 40}"
    elif case == "misspelt-channel":  # not a channel; GitHub answers 422 for it as a branch
        args = [*args[:-2], "--channel", "nixos-unstabel"]
        expect = "Channel 'nixos-unstabel' does not exist"
    elif case == "down":
        fake.mode = "down"
        expect = "after 2 attempts"
    elif case == "garbage":
        fake.mode = "garbage"
        expect = "garbage"
    else:
        fake.channels["nixos-unstable"] = "<html>maintenance</html>"
        args = [*args[:-2], "--channel", "nixos-unstable"]
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
    assert "| torch | 2.8.0 | 2.8.4 |" in pr["body"] and "`cudaPackages_12_8`" in pr["body"]
    assert pr["title"] == "nixpkgs: bump pin fe5e41d -> 0123abc (torch 2.8.4, cudaPackages_12_8)"
    pushed = git(origin, "rev-parse", "bump/main-0123abc").strip()
    assert pushed == d["commits"]["main"]
    assert all(NEW in t for t in tree_files(origin, "bump/main-0123abc").values())
    def heads(r):
        return {k: v for k, v in r.items() if k.startswith("refs/heads/")}
    assert heads(refs(work)) == heads(before)  # local branches stay where they were


def test_open_pr_failure_removes_pushed_branch(env, repo, fake):
    _work, origin = repo
    fake.pull_status = 422
    before_origin = refs(origin)
    with pytest.raises(ExternalError):
        plan_bump(ctx(), "main", NEW, open_pr=True).apply()
    assert refs(origin) == before_origin


def test_neither_branch_nor_all(env):
    with pytest.raises(ValidationError):
        plan_bump(ctx(), [], NEW)


def test_fixture_recipes_parse(repo, tmp_path):
    ci.needs(shutil.which("nix-instantiate") is not None, "nix-instantiate is not installed (make nix)")
    work, _ = repo
    parse_ok(list(tree_files(work, "main").values()), tmp_path)


def test_bump_recipes_of_the_generator(tmp_path, fake, monkeypatch):
    """The recipes torchbot itself renders (release.render) bump the same way."""
    from config.catalog_data import load_catalog
    from release.recipes import reader, render
    from tests.support.fixtures_pins import build_repo_from_files

    cat = load_catalog()
    files = {name: render.render_branch(cat, name) for name in ("main", "pytorch-2.9-python313")}
    work, _origin = build_repo_from_files(tmp_path / "gen", files)
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", fake.channels_url)
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("TORCHBOT_NIXPKGS_TARBALL_URL", fake.tarball_url)
    other = tree_files(work, "pytorch-2.9-python313", ".")
    result = plan_bump(ctx(), "main", NEW, repo=work).apply()
    assert list(result.to_dict()["commits"]) == ["main"]
    new = tree_files(work, "main")
    assert len(new) == len(cat.branches["main"].variants)
    assert all(NEW in t and PIN_A not in t for t in new.values())
    parse_ok(list(new.values()), tmp_path)
    assert tree_files(work, "pytorch-2.9-python313", ".") == other
    read = reader.read_repository(work, cat)  # the repository reader reads the new pin back
    branches = read.branches if hasattr(read, "branches") else read
    assert set(branches["main"].pins) == {NEW}


# --- reproducible pins: the tarball's sha256 -------------------------------------------------


def commit_edit(work, branch, edit):
    """Commit ``edit(text) -> text`` on every recipe of ``branch`` with plain git."""
    git(work, "stash", "-q", "--include-untracked")
    git(work, "checkout", "-q", branch)
    for path in (work / ".flox" / "pkgs").glob("*.nix"):
        path.write_text(edit(path.read_text()))
    git(work, "commit", "-qam", "hand edit")
    git(work, "checkout", "-q", "-")


def test_recorded_sha256_is_what_nix_prefetch_url_computes_and_nix_accepts(env, fake, tmp_path):
    work = env
    plan_bump(ctx(), "pytorch-2.8-python312", NEW).apply()
    sha = prefetched(fake, NEW)
    files = tree_files(work, "pytorch-2.8-python312")
    assert files and all(t.count(f'sha256 = "{sha}";') == 1 for t in files.values())
    # Nix itself accepts the hash for the tarball, in a fresh store (so it downloads and checks)
    # and rejects another one
    url = f"{fake.tarball_url}{NEW}.tar.gz"
    for value, ok in ((sha, True), (prefetched(fake, PIN_A), False)):
        root = tmp_path / f"store-{value[:6]}"
        r = subprocess.run(["nix-instantiate", "--store", f"local?root={root}", "--eval", "-E",
                            f'builtins.readFile ((builtins.fetchTarball {{ url = "{url}"; sha256 = "{value}"; }})'
                            ' + "/.git-revision")'], check=False, capture_output=True, text=True)
        subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
        assert (r.returncode == 0) is ok, r.stderr
        if ok:
            assert NEW in r.stdout
    # recipes keep the GitHub URL; only the hash came from the loopback server
    assert all(f"https://github.com/NixOS/nixpkgs/archive/{NEW}.tar.gz" in t for t in files.values())
    assert fake.tarball_url.startswith("http://127.0.0.1:") and NEW in fake.tarball_gets


def test_an_existing_wrong_hash_is_replaced(env, fake, tmp_path):
    work = env
    wrong = "0" * 52
    commit_edit(work, "pytorch-2.8-python312", lambda t: with_hash(t, PIN_A, wrong))
    plan_bump(ctx(), "pytorch-2.8-python312", NEW).apply()
    sha = prefetched(fake, NEW)
    files = tree_files(work, "pytorch-2.8-python312")
    for text in files.values():
        assert wrong not in text and text.count("sha256 = ") == 1 and f'sha256 = "{sha}";' in text
    parse_ok(list(files.values()), tmp_path)
    # a branch already on the revision with a wrong hash gets it repaired, in its own commit
    commit_edit(work, "pytorch-2.8-python312", lambda t: t.replace(sha, wrong))
    plan = plan_bump(ctx(), "pytorch-2.8-python312", NEW)
    assert "pin current; records its sha256" in plan.text()
    plan.apply()
    assert all(f'sha256 = "{sha}";' in t and wrong not in t for t in tree_files(work, "pytorch-2.8-python312").values())
    assert git(work, "log", "-1", "--format=%s", "pytorch-2.8-python312").startswith(
        "nixpkgs: record the sha256 of pin 0123abc")
    # and a branch whose hash is right is up to date: no commit
    before = refs(work)
    assert "up to date" in plan_bump(ctx(), "pytorch-2.8-python312", NEW).apply().text()
    assert refs(work) == before


@pytest.mark.parametrize("how", ["404", "closed-port"])
def test_an_unreachable_tarball_refuses_the_bump_and_changes_nothing(env, fake, monkeypatch, capsys, how):
    work = env
    before = refs(work)
    if how == "404":
        fake.tarballs = False
    else:
        monkeypatch.setenv("TORCHBOT_NIXPKGS_TARBALL_URL", "http://127.0.0.1:9/archive/")
        monkeypatch.setenv("NIX_CONFIG", "download-attempts = 1")  # nix's own retries take 5 s
    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.8-python312", "--rev", NEW])
    err = capsys.readouterr().err
    assert rc == 1 and "cannot be hashed" in err and "nothing was changed" in err and "Traceback" not in err
    assert refs(work) == before


# --- the pull request body ---------------------------------------------------------------

TORCH_PATH = "pkgs/development/python-modules/torch/source/default.nix"


def nixpkgs_history(fake):
    """PIN_A ... NEW with 150 unrelated commits between, two touching torch and two CUDA; one
    torch commit before PIN_A that the PR must not list."""
    fake.history = []
    fake.add_commit("9" * 40, "python3Packages.torch: an older change", [TORCH_PATH])
    fake.add_commit(PIN_A, "base")
    fake.add_commit("1" * 40, "python3Packages.torch: 2.8.0 -> 2.8.4", [TORCH_PATH])
    for i in range(150):
        fake.add_commit(f"{i:040x}", f"pkg{i}: 1.0 -> 1.1", [f"pkgs/by-name/p{i}/package.nix"])
    fake.add_commit("2" * 40, "cudaPackages.cudnn: 9.8 -> 9.10 (cc @someone, `x`)",
                    ["pkgs/development/cuda-modules/cudnn/default.nix"])
    fake.add_commit("4" * 40, "cudaPackages: default to 12.8", ["pkgs/top-level/cuda-packages.nix"])
    fake.add_commit(NEW, "python3Packages.torch: fix the build", ["pkgs/development/python-modules/torch/default.nix"])
    fake.cuda_default.update({PIN_A: "cudaPackages_12_6", NEW: "cudaPackages_12_8"})


def test_pr_body_lets_a_reviewer_judge_the_bump(env, repo, fake):
    work, _ = repo
    nixpkgs_history(fake)
    main_recipes = tree_files(work, "main")
    plan_bump(ctx(), "main", NEW, open_pr=True).apply()
    body = fake.pulls[0]["body"]
    lines = body.splitlines()
    # compare link and size (the compare API paged: 154 commits at 100 a page)
    assert f"**Compare**: https://github.com/NixOS/nixpkgs/compare/{PIN_A}...{NEW} (154 commits)" in body
    assert sum("/compare/" in r and "page=2" in r for r in fake.requests) == 1
    # torch and CUDA before and after
    assert "| torch | 2.8.0 | 2.8.4 |" in lines
    assert "| default CUDA (`cudaPackages`) | 12.6 | 12.8 |" in lines
    assert "| `cudaPackages_12_8` (the recipes' CUDA) | 12.8 | 12.8 (present) |" in lines
    # the commits between the pins that touch torch or CUDA paths, and only those
    torch_at = lines.index(next(line for line in lines if line.startswith("- **torch**")))
    assert lines[torch_at].endswith(": 2")
    assert lines[torch_at + 1] == (f"  - [`1111111`](https://github.com/NixOS/nixpkgs/commit/{'1' * 40}) "
                                   "python3Packages.torch: 2.8.0 -> 2.8.4")
    assert lines[torch_at + 2].endswith("python3Packages.torch: fix the build")
    cuda_at = lines.index(next(line for line in lines if line.startswith("- **CUDA**")))
    assert lines[cuda_at].endswith(": 2")
    assert "cudaPackages.cudnn: 9.8 -> 9.10 (cc @\u200bsomeone, 'x')" in lines[cuda_at + 1]  # no mention, no code span
    assert "cudaPackages: default to 12.8" in lines[cuda_at + 2]
    assert "an older change" not in body and "pkg7:" not in body
    # variants to rebuild, per platform (the recipes' meta.platforms)
    per = {}
    for text in main_recipes.values():
        platform = text.split('platforms = [ "')[1].split('"')[0]
        per[platform] = per.get(platform, 0) + 1
    n = len(main_recipes)
    assert f"**{n} variants** to rebuild (" in body
    for platform, count in per.items():
        assert f"{count} {platform}" in body
    # Renovate-style notes that say what torchbot does
    for note in ("📅 **Schedule**: torchbot's weekly bump", "`0 6 * * 1`", "🚦 **Automerge**: disabled",
                 "♻ **Updating**: the next bump of `main` force-pushes", "`bump/main-0123abc`",
                 "🔕 **Ignore**: close this PR", "reports here as the `torchbot/builds` status",
                 "### Status", "✅ Guards passed: torch stays 2.8", f"--branch main --changed-only` ({n} variants"):
        assert note in body, note
    assert f'✅ Tarball hash: `sha256 = "{prefetched(fake, NEW)}"` written into {n} recipes' in body


def test_pr_opens_even_when_the_commits_cannot_be_listed(env, repo, fake):
    fake.history = []  # the compare API knows neither pin
    plan_bump(ctx(), "main", NEW, open_pr=True).apply()
    body = fake.pulls[0]["body"]
    assert "Could not be listed: GitHub knows no nixpkgs comparison fe5e41d...0123abc." in body
    assert "| torch | 2.8.0 | 2.8.4 |" in body and "**Compare**: https://github.com/NixOS/nixpkgs/compare/" in body


def test_real_shape_recipes_all_get_the_hash_and_a_fixture_hash_is_replaced(fake, tmp_path, monkeypatch):
    """On a repository in the real recipe shapes: every moved recipe records the served
    tarball's sha256, the one that already had a (wrong) sha256 included."""
    from tests.support.fixtures_realshapes import PIN_MAIN, PIN_SHA256, make_pytorch_repo

    pt = make_pytorch_repo(tmp_path / "pt")
    monkeypatch.setenv("TORCHBOT_CHANNELS_URL", fake.channels_url)
    monkeypatch.setenv("TORCHBOT_GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("TORCHBOT_NIXPKGS_TARBALL_URL", fake.tarball_url)
    fake.add_rev(PIN_MAIN, "2.8.0", CUDA_ALL | {"cudaPackages_13"})
    fake.add_rev(NEW, "2.8.4", CUDA_ALL | {"cudaPackages_13"})
    plan_bump(ctx(), "main", NEW, repo=pt.path).apply()
    sha = prefetched(fake, NEW)
    files = tree_files(pt.path, "main")
    moved = [p for p, f in ((pt.recipe_path(n), f) for n, f in pt.branches["main"].recipes.items())
             if f.pin == PIN_MAIN]
    assert moved and [s for s, _ in pt.by_shape("pin-sha256") if s == "main"]
    for path in moved:
        text = files[path]
        assert f"archive/{NEW}.tar.gz" in text and text.count("sha256 = ") == 1 and f'sha256 = "{sha}";' in text
        assert PIN_SHA256 not in text
    parse_ok([files[p] for p in moved], tmp_path)


def test_a_fresh_clone_bumps_a_branch_that_is_only_on_the_remote(env, repo, fake, tmp_path, monkeypatch, capsys):
    """`git clone` leaves one local branch; the README's quick start bumps others: the commit goes
    on a new local branch at origin's tip (as `git switch` makes one), and a dry run makes none."""
    _, origin = repo
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    monkeypatch.setenv("TORCHBOT_REPO_PATH", str(clone))
    tip = git(clone, "rev-parse", "origin/pytorch-2.8-python312").strip()
    before = refs(clone)
    assert "refs/heads/pytorch-2.8-python312" not in before

    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.8-python312", "--rev", NEW, "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "pytorch-2.8-python312: fe5e41d -> 0123abc" in out and "nothing was written" in out
    assert refs(clone) == before

    rc = cli(["release", "bump-pins", "--branch", "pytorch-2.8-python312", "--rev", NEW])
    assert rc == 0, capsys.readouterr()
    after = refs(clone)
    assert {r for r in after if after[r] != before.get(r)} == {"refs/heads/pytorch-2.8-python312"}
    assert git(clone, "rev-parse", "pytorch-2.8-python312~1").strip() == tip
    assert NEW in git(clone, "show", "pytorch-2.8-python312:README.md")

    rc = cli(["release", "bump-pins", "--branch", "no-such-branch", "--rev", NEW])
    err = capsys.readouterr().err
    assert rc == 2 and "No branch no-such-branch" in err and "pytorch-2.9-vllm-0.15.1" in err  # origin's too
