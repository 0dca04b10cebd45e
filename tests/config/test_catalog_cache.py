"""The compiled catalog cache (config/catalog_cache.py): a stale or corrupt entry never changes an
answer. Real torchbot processes over a real cache directory for the embedded catalog; fixture
repositories (real git) for the repository catalog, with a branch moved between two reads."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from config import catalog_data as catalog_module
from config.catalog import DATA_DIR, Catalog
from config.catalog_cache import cached, files_key
from config.catalog_data import load_catalog
from release.recipes import repos
from tests.support import ci, forked_cli
from tests.support.fixtures_realshapes import RECIPES, git, make_repos

QUESTIONS = ["which variant for an H100 with Graviton3", "RTX 4090 with a Ryzen 9 7950X, python 3.12",
             "which torchvision for an RTX 4090 and i9-13900K", "no GPU, Celeron N5105"]


def run_ask(cache: Path, *question: str, repo_path: str | None = None, pythonpath: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHBOT_")}
    env["TORCHBOT_CACHE_DIR"] = str(cache)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    if repo_path:
        env["TORCHBOT_REPO_PATH"] = repo_path
    if pythonpath:  # Python's start-up reads PYTHONPATH: a process started from scratch
        r = subprocess.run([sys.executable, "-m", "bot", "ask", "--json", *question], capture_output=True, text=True,
                           env=env, cwd=cache.parent, timeout=120, check=False)
    else:
        r = forked_cli.run(["ask", "--json", *question], env=env, cwd=cache.parent)
    assert r.returncode == 0, r.stderr
    return r.stdout


def entries(cache: Path, kind: str) -> list[Path]:
    return sorted(cache.glob(f"{kind}-*.pickle"))


@pytest.mark.parametrize("damage", ["truncated", "garbage", "another object", "empty"])
def test_a_corrupt_catalog_entry_is_rebuilt_and_the_answers_do_not_change(tmp_path, damage):
    cache = tmp_path / "cache"
    first = [run_ask(cache, q) for q in QUESTIONS]
    [entry] = entries(cache, "catalog")
    data = entry.read_bytes()
    entry.write_bytes({"truncated": data[: len(data) // 2], "garbage": os.urandom(4096), "empty": b"",
                       "another object": pickle.dumps(("not the key", {"branches": {}}))}[damage])
    assert [run_ask(cache, q) for q in QUESTIONS] == first
    assert entries(cache, "catalog") == [entry] and entry.read_bytes() != b""  # written again


def test_an_entry_of_other_data_under_this_name_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHBOT_CACHE_DIR", str(tmp_path / "cache"))
    key = files_key(DATA_DIR)
    real = cached("catalog", key, lambda: catalog_module.build_catalog(DATA_DIR), Catalog)
    [entry] = entries(tmp_path / "cache", "catalog")
    # an entry that names the right file but was made for another key: the file name is a digest
    # of the key, the entry holds the whole digest and is only used when it matches
    _digest, obj = pickle.loads(entry.read_bytes())
    entry.write_bytes(pickle.dumps(("0" * 64, obj.with_branches([], "tampered"))))
    again = cached("catalog", key, lambda: catalog_module.build_catalog(DATA_DIR), Catalog)
    assert again.source == "embedded" and set(again.branches) == set(real.branches)


def test_a_changed_data_file_is_read_again_not_taken_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHBOT_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    before = load_catalog(data)
    assert before.recommended == "pytorch-2.9-python313"
    toml = data / "branches.toml"
    toml.write_text(toml.read_text().replace('recommended = "pytorch-2.9-python313"', 'recommended = "main"'))
    load_catalog.cache_clear()  # a new process
    after = load_catalog(data)
    assert after.recommended == "main" and len(entries(tmp_path / "cache", "catalog")) == 2


def test_a_cache_that_cannot_be_written_is_left_aside(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache's parent directory should be")
    monkeypatch.setenv("TORCHBOT_CACHE_DIR", str(blocker / "cache"))  # (a start check refuses this in the CLI)
    built = cached("catalog", files_key(DATA_DIR), lambda: catalog_module.build_catalog(DATA_DIR), Catalog)
    assert built.recommended == "pytorch-2.9-python313" and blocker.is_file()


def test_a_moved_branch_is_read_again_not_taken_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHBOT_CACHE_DIR", str(tmp_path / "cache"))
    pt, tv = make_repos(tmp_path)
    paths = [pt.path, tv.path]
    embedded = load_catalog()

    def fresh_process_catalog():
        repos._STATE.clear()
        repos._STORED.clear()
        return repos.catalog_from_repositories(paths, embedded)

    first = fresh_process_catalog()
    assert entries(tmp_path / "cache", "repo-catalog")
    assert fresh_process_catalog().branches.keys() == first.branches.keys()  # from the cache
    branch = "pytorch-2.10-python313"
    gone = sorted(first.branches[branch].by_package)[0]
    git(pt.path, "checkout", "-q", branch)
    git(pt.path, "rm", "-q", f"{RECIPES}/{gone}.nix")
    git(pt.path, "commit", "-q", "-m", "drop one recipe")
    after = fresh_process_catalog()
    assert gone not in after.branches[branch].by_package
    assert len(entries(tmp_path / "cache", "repo-catalog")) == 2


def test_the_repository_catalog_from_the_cache_answers_as_a_fresh_read(tmp_path):
    pt, tv = make_repos(tmp_path)
    cache = tmp_path / "cache"
    repo_path = f"{pt.path},{tv.path}"
    fresh = [run_ask(cache, q, repo_path=repo_path) for q in QUESTIONS]
    assert entries(cache, "repo-catalog")
    assert [run_ask(cache, q, repo_path=repo_path) for q in QUESTIONS] == fresh


def test_a_new_nix_grammar_reads_the_repositories_again_not_from_the_cache(tmp_path):
    """The repository catalog is read with tree-sitter-nix: another version of the grammar (here
    its metadata, first on the path, as pip leaves it after an upgrade) may read the recipes
    otherwise, so an entry made with the old one is not served."""
    from importlib.metadata import version

    from config.catalog_cache import _version

    for dist in ("tree-sitter", "tree-sitter-nix"):
        assert _version(dist) == version(dist)  # the version the key holds is the installed one
    pt, tv = make_repos(tmp_path)
    cache = tmp_path / "cache"
    repo_path = f"{pt.path},{tv.path}"
    fresh = run_ask(cache, QUESTIONS[0], repo_path=repo_path)
    assert len(entries(cache, "repo-catalog")) == 1
    assert run_ask(cache, QUESTIONS[0], repo_path=repo_path) == fresh  # the same grammar: from the cache
    assert len(entries(cache, "repo-catalog")) == 1
    for dist, module in (("tree-sitter-nix", "tree_sitter_nix"), ("tree-sitter", "tree_sitter")):
        upgraded = tmp_path / f"upgraded-{module}"
        info = upgraded / f"{module}-{version(dist)}.post1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version(dist)}.post1\n")
        before = len(entries(cache, "repo-catalog"))
        assert run_ask(cache, QUESTIONS[0], repo_path=repo_path, pythonpath=upgraded) == fresh
        assert len(entries(cache, "repo-catalog")) == before + 1, f"{dist} upgraded, the old entry served"


def test_the_quick_xdg_directories_are_the_ones_platformdirs_gives(monkeypatch):
    import platformdirs

    from config import paths

    if not sys.platform.startswith("linux"):
        ci.skip("the quick path is Linux's")
    for value in (None, "", "  ", "/srv/xdg"):
        for var in ("XDG_CACHE_HOME", "XDG_DATA_HOME"):
            if value is None:
                monkeypatch.delenv(var, raising=False)
            else:
                monkeypatch.setenv(var, value)
        dirs = platformdirs.PlatformDirs("torchbot", appauthor=False)
        assert (paths.default_cache_dir(), paths.data_dir()) == (Path(dirs.user_cache_dir), Path(dirs.user_data_dir))
