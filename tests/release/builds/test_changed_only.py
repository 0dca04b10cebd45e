"""--changed-only decides by what a variant would build (issue 33 point 2): its derivation path
(real ``nix-instantiate``; the fixture's recipes evaluate offline), else, when evaluation is
impossible (here: no Nix on PATH), its syntax tree without comments and layout plus the files it
imports and, for a recipe that takes Flox's arguments, manifest.lock. The plan says which rule
decided."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from release.builds import run as builds
from tests.support import ci
from tests.support import fixtures_builds as fx

PKGS = [*fx.OK, fx.COMPANION]
TORCH = "pytorch-python313-cuda12_8-sm90-avx512"  # the pytorch variant the companion imports


@pytest.fixture(params=["derivation", "syntax"])
def rule(request, monkeypatch, tmp_path: Path) -> str:
    if request.param == "syntax":  # no Nix on this host: PATH without nix-instantiate
        bare = tmp_path / "bin-without-nix"
        bare.mkdir()
        for tool in ("git", "tar", "sh", "bash"):
            found = shutil.which(tool)
            if found:
                os.symlink(found, bare / tool)
        monkeypatch.setenv("PATH", str(bare))
    elif shutil.which("nix-instantiate") is None:
        ci.skip("nix-instantiate is not installed")
    return request.param


def _built(tmp_path: Path) -> tuple[object, Path]:
    repo = fx.make_repo(tmp_path, packages=PKGS)
    ctx = fx.context(tmp_path)
    # recorded successes at the branch's commit, as a finished build leaves them
    from release.state import Build, state_for

    commit = fx.sh(repo, "git", "rev-parse", fx.BRANCH).strip()
    recipes = builds.list_recipes(repo, commit)
    with state_for(ctx).session() as s:
        s.add_all(Build(package=p, branch=fx.BRANCH, state="succeeded", backend="github", recipe_blob=recipes[p],
                        commit=commit, pin=fx.PIN) for p in PKGS)
    return ctx, repo


def _edit(repo: Path, edits: dict[str, callable], message: str = "edit") -> None:
    fx.sh(repo, "git", "checkout", "--quiet", fx.BRANCH)
    for rel, change in edits.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(change(p.read_text() if p.exists() else ""))
    fx.sh(repo, "git", "add", "-A")
    fx.sh(repo, "git", "commit", "--quiet", "-m", message)
    fx.sh(repo, "git", "push", "--quiet", "origin", fx.BRANCH)
    fx.sh(repo, "git", "checkout", "--quiet", "main")


def _comments_and_layout(text: str) -> str:
    return ("# reworded header\n" + text.replace("\n  pkg = {", "\n  # the stand-in, explained again\n\n      pkg = {")
            .replace("in\n", "in   # trailing comment\n"))


def _recipe(p: str) -> str:
    return f".flox/pkgs/{p}.nix"


def test_a_comment_only_edit_builds_nothing(tmp_path: Path, rule: str) -> None:
    ctx, repo = _built(tmp_path)
    _edit(repo, {_recipe(p): _comments_and_layout for p in PKGS})
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    assert plan.items == [] and sorted(plan.unchanged) == sorted(PKGS)
    said = "derivation paths (nix-instantiate)" if rule == "derivation" else "syntax trees without comments"
    assert said in plan.rule and f"Changed: {plan.rule}." in plan.text()
    if rule == "syntax":
        assert "evaluation impossible: no nix-instantiate on this host" in plan.rule


def test_a_changed_build_script_builds_that_variant_and_its_companion(tmp_path: Path, rule: str) -> None:
    ctx, repo = _built(tmp_path)
    _edit(repo, {_recipe(TORCH): lambda t: t.replace("echo ok > $out", "echo changed > $out")})
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    assert [i.package for i in plan.items] == [TORCH, fx.COMPANION]  # the companion imports it
    assert "2 changed" in plan.rule or "1 changed" in plan.rule


def test_a_manifest_lock_change_rebuilds_exactly_the_recipes_that_use_it(tmp_path: Path, monkeypatch) -> None:
    bare = tmp_path / "bin-without-nix"  # the callPackage-style recipe cannot be evaluated alone: syntax rule
    bare.mkdir()
    for tool in ("git", "tar", "sh"):
        os.symlink(shutil.which(tool), bare / tool)
    repo = fx.make_repo(tmp_path, packages=PKGS)
    _edit(repo, {".flox/env/manifest.lock": lambda _t: '{"lockfile-version": 1, "rev": "aaa"}\n',
                 _recipe("pytorch-python313-flox-args"): lambda _t: (
                     "# takes its packages from the environment (manifest.lock)\n"
                     "{ python3Packages, ... }:\npython3Packages.torch.override { cudaSupport = false; }\n")},
          "a callPackage recipe")
    ctx = fx.context(tmp_path)
    from release.state import Build, state_for

    commit = fx.sh(repo, "git", "rev-parse", fx.BRANCH).strip()
    recipes = builds.list_recipes(repo, commit)
    with state_for(ctx).session() as s:
        s.add_all(Build(package=p, branch=fx.BRANCH, state="succeeded", backend="github", recipe_blob=b,
                        commit=commit) for p, b in recipes.items())
    _edit(repo, {".flox/env/manifest.lock": lambda _t: '{"lockfile-version": 1, "rev": "bbb"}\n'}, "relock")
    monkeypatch.setenv("PATH", str(bare))
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    assert [i.package for i in plan.items] == ["pytorch-python313-flox-args"]  # the pinned recipes stay
    assert "syntax trees" in plan.rule and "1 changed" in plan.rule


def _seed_cache(cache: Path, repo: Path, packages: list[str], monkeypatch) -> None:
    """``cache`` holds ``packages``' outputs at the branch's head, as ``nix copy --to`` leaves
    them (the shims' own evaluation of the real output path)."""
    from tests.support import shim_tools

    cache.mkdir(exist_ok=True)
    (cache / "nix-cache-info").write_text("StoreDir: /nix/store\n")
    monkeypatch.setenv("SHIM_GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("SHIM_SHA", fx.sh(repo, "git", "rev-parse", fx.BRANCH).strip())
    for p in packages:
        out = shim_tools._out_path(p)
        assert out and out.startswith("/nix/store/")
        (cache / (out.rsplit("/", 1)[-1].split("-", 1)[0] + ".narinfo")).write_text(f"StorePath: {out}\n")


@pytest.mark.parametrize("served", ["file", "http"])
def test_an_unchanged_variant_missing_from_the_cache_is_built_again(tmp_path: Path, monkeypatch, served) -> None:
    if shutil.which("nix-instantiate") is None:
        ci.skip("nix-instantiate is not installed")
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    _ctx, repo = _built(tmp_path)
    cache = tmp_path / "cache"
    lost = next(p for p in fx.OK if p != TORCH)  # no companion imports it
    present = [p for p in PKGS if p != lost]
    _seed_cache(cache, repo, present, monkeypatch)
    _edit(repo, {_recipe(p): _comments_and_layout for p in PKGS})  # same derivations
    server = None
    url = f"file://{cache}"
    if served == "http":  # a real HTTP cache on 127.0.0.1 (HEAD <hash>.narinfo: 200 or 404)
        handler = functools.partial(SimpleHTTPRequestHandler, directory=str(cache))
        handler.log_message = lambda *a: None
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        ctx = fx.context(tmp_path, build_cache=url)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    assert [i.package for i in plan.items] == [lost]  # unchanged, but the cache lacks it
    assert sorted(plan.unchanged) == sorted(present)
    assert "0 changed" in plan.rule and "1 unchanged but missing, built again" in plan.rule
    assert f"Changed: {plan.rule}." in plan.text()


def test_a_cache_that_cannot_be_asked_leaves_the_derivation_rule_and_says_why(tmp_path: Path) -> None:
    if shutil.which("nix-instantiate") is None:
        ci.skip("nix-instantiate is not installed")
    _ctx, repo = _built(tmp_path)
    ctx = fx.context(tmp_path, build_cache="s3://team-cache?region=eu-west-1")
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    assert plan.items == [] and "the cache was not asked: s3://team-cache is an S3 cache" in plan.rule
    assert "region" not in plan.rule  # the URL is said without its query


def test_under_the_syntax_rule_the_cache_is_not_asked_and_the_plan_says_so(tmp_path: Path, monkeypatch) -> None:
    _ctx, repo = _built(tmp_path)
    bare = tmp_path / "bin-without-nix"
    bare.mkdir()
    for tool in ("git", "tar", "sh"):
        os.symlink(shutil.which(tool), bare / tool)
    monkeypatch.setenv("PATH", str(bare))
    (tmp_path / "cache").mkdir()
    ctx = fx.context(tmp_path, build_cache=f"file://{tmp_path / 'cache'}")
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, changed_only=True)
    assert plan.items == [] and "the cache was not asked (without evaluation there are no output paths)" in plan.rule


def test_each_variant_is_evaluated_for_its_own_platform_and_found_in_the_cache_its_runner_filled(
        tmp_path: Path, monkeypatch) -> None:
    """An aarch64-linux or aarch64-darwin variant's output path is the one Nix on its runner
    evaluates (``import <nixpkgs> {}`` follows the evaluating system), not this x86_64 host's: so
    an unchanged one whose runner pushed its output to the cache is not built again."""
    if shutil.which("nix-instantiate") is None:
        ci.skip("nix-instantiate is not installed")
    from release.adapters import nixeval
    from release.state import Build, state_for

    pkgs = [fx.ARM, fx.DARWIN, fx.OK[0]]
    repo = fx.make_repo(tmp_path, packages=pkgs)
    commit = fx.sh(repo, "git", "rev-parse", fx.BRANCH).strip()
    systems = {p: fx.platforms_of(p)[0] for p in pkgs}
    assert set(systems.values()) == {"aarch64-linux", "aarch64-darwin", "x86_64-linux"}
    own, why = nixeval.evaluate(repo, commit, pkgs, systems=systems)
    host, _ = nixeval.evaluate(repo, commit, pkgs)
    assert own is not None and host is not None, why
    assert own[fx.OK[0]] == host[fx.OK[0]]
    assert own[fx.ARM].out != host[fx.ARM].out and own[fx.DARWIN].out != host[fx.DARWIN].out

    recipes = builds.list_recipes(repo, commit)
    ctx = fx.context(tmp_path)
    with state_for(ctx).session() as s:
        s.add_all(Build(package=p, branch=fx.BRANCH, state="succeeded", backend="github", recipe_blob=recipes[p],
                        commit=commit, pin=fx.PIN) for p in pkgs)
    cache = tmp_path / "cache"
    for p in pkgs:  # each pushed by the runner of its platform
        monkeypatch.setenv("SHIM_PLATFORM", systems[p])
        _seed_cache(cache, repo, [p], monkeypatch)
    monkeypatch.delenv("SHIM_PLATFORM")
    _edit(repo, {_recipe(p): _comments_and_layout for p in pkgs})  # same derivations
    plan = builds.prepare(fx.context(tmp_path, build_cache=f"file://{cache}"), fx.BRANCH, repo=repo,
                          changed_only=True)
    assert plan.items == [] and sorted(plan.unchanged) == sorted(pkgs), plan.rule
    assert "0 unchanged but missing" in plan.rule
