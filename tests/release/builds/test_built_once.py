"""Built once, on its platform, published from that build (issue 33): a whole release of the
fixture branch (a bump pull request built at its head, merged, published) against the fake
GitHub whose jobs really run the rendered workflow on runners of their platform
(tests/support/fake_runners.py), with ``flox`` and ``nix`` shims that log what runs where
(tests/support/shim_tools.py). The torchbot host's own build and publish commands are the same
shims, logged as ``torchbot``."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from config.errors import ExternalError
from release.builds import run as builds
from release.builds.workflow import render_workflow
from release.publishing.publish import held, publish_pending
from release.state import Publish, state_for
from tests.support import fixtures_builds as fx
from tests.support.fake_runners import SHIMS, Runners, read_log
from tests.support.fakes_github import FakeGitHub

PACKAGES = sorted([*fx.OK, fx.COMPANION, fx.ARM, fx.DARWIN])
BUMP = f"bump/{fx.BRANCH}-0123456"


class World:
    def __init__(self, tmp: Path, *, cache: bool = True, refuses: str | None = None, **over):
        self.tmp = tmp
        self.work = fx.make_repo(tmp, packages=PACKAGES)
        self.origin = tmp / "origin.git"
        self.log = tmp / "shim.log"
        self.cache = tmp / "cache"
        self.cache.mkdir()
        host = (f"SHIM_LOG={self.log} SHIM_HOST=torchbot SHIM_PLATFORM=x86_64-linux SHIM_STORE={tmp / 'host-store'} "
                f"{SHIMS}")
        self.settings = dict(build_command=f"{host}/flox build {{package}}",
                             publish_command=f"{host}/flox publish -o {{org}} {{package}}",
                             build_cache=f"file://{self.cache}" if cache else None, **over)
        (tmp / "runners").mkdir()
        workflow = render_workflow(fx.settings(tmp, **self.settings))
        self.runners = Runners(self.origin, workflow, fx.settings(tmp).github_runners, tmp / "runners", self.log,
                               catalog_refuses=refuses)
        self.gh = FakeGitHub(git_dir=self.origin, runner=self.runners).__enter__()
        self.ctx = fx.context(tmp, github_api_url=self.gh.url, github_token=self.gh.token, github_repo=self.gh.repo,
                              github_poll_seconds=0.01, **self.settings)

    def close(self) -> None:
        self.gh.__exit__(None, None, None)
        self.runners.close()

    def bump(self, nonce: str = "bumped", packages=None, pin: str = fx.NEW_PIN) -> None:
        """A bump pull request's head: the recipes at a new pin, pushed as ``BUMP``."""
        fx.sh(self.work, "git", "checkout", "--quiet", "-B", BUMP, fx.BRANCH)
        fx.write_recipes(self.work, pin, nonce, packages or PACKAGES)
        fx.sh(self.work, "git", "commit", "--quiet", "-am", "bump")
        fx.sh(self.work, "git", "push", "--quiet", "--force", "origin", BUMP)
        fx.sh(self.work, "git", "checkout", "--quiet", "main")

    def merge(self) -> None:
        fx.sh(self.work, "git", "checkout", "--quiet", fx.BRANCH)
        fx.sh(self.work, "git", "merge", "--quiet", "--no-ff", "-m", "Merge the bump", BUMP)
        fx.sh(self.work, "git", "push", "--quiet", "origin", fx.BRANCH)
        fx.sh(self.work, "git", "checkout", "--quiet", "main")

    def build_head(self):
        plan = builds.prepare(self.ctx, fx.BRANCH, repo=self.work, backend="github", head=BUMP, changed_only=True)
        return plan, builds.build(self.ctx, plan)

    def entries(self) -> list[dict]:
        return read_log(self.log)


@pytest.fixture
def world(tmp_path: Path):
    w = World(tmp_path)
    yield w
    w.close()


def _builds(entries: list[dict]) -> collections.Counter:
    return collections.Counter(e["package"] for e in entries if e["action"] == "build")


def test_a_release_builds_each_changed_variant_once_on_its_platform_and_publishes_that_build(world) -> None:
    world.bump()
    plan, rows = world.build_head()
    assert "Outputs go to the cache" in plan.text() and not plan.publishes
    assert sorted(r["package"] for r in rows if r["state"] == "succeeded") == PACKAGES
    world.merge()
    published = publish_pending(world.ctx, None, repo=world.work)
    assert sorted(r["package"] for r in published if r["state"] == "published") == PACKAGES
    assert all("substituted from the cache" in r["message"] for r in published)

    log = world.entries()
    assert [e for e in log if e["host"] == "torchbot"] == []  # the torchbot host builds and publishes nothing
    counts = _builds(log)
    assert counts == dict.fromkeys(PACKAGES, 1)  # every changed variant built once over the whole release
    assert sum(counts.values()) / len(PACKAGES) == 1.0
    for e in log:  # nothing built or published on another platform's runner (aarch64 never on x86_64)
        if e["action"] in ("build", "publish", "refused"):
            assert e["action"] != "refused" and e["platform"] == fx.platforms_of(e["package"])[0], e
            assert e["host"] == "runner" and e["target"] == e["platform"], e  # the job ran where the plan meant
    bump_head = fx.sh(world.origin, "git", "rev-parse", BUMP).strip()
    merged = fx.sh(world.origin, "git", "rev-parse", fx.BRANCH).strip()
    assert {e["commit"] for e in log if e["action"] == "build"} == {bump_head}  # built at the PR's head
    pubs = [e for e in log if e["action"] == "publish"]
    assert sorted(e["package"] for e in pubs) == PACKAGES and {e["commit"] for e in pubs} == {merged}
    # what is published is what was built: the same derivation keys
    built_keys = {e["package"]: e["key"] for e in log if e["action"] == "build"}
    assert {e["package"]: e["key"] for e in pubs} == built_keys
    with state_for(world.ctx).session() as s:
        assert sorted(p.package for p in s.query(Publish)) == PACKAGES
    assert publish_pending(world.ctx, None, repo=world.work) == []  # published once
    assert held(world.ctx, None, repo=world.work) == []

    # the next pull request only edits comments and layout: nothing is built, dispatched or published
    fx.sh(world.work, "git", "checkout", "--quiet", "-B", BUMP, fx.BRANCH)
    for p in PACKAGES:
        recipe = world.work / ".flox" / "pkgs" / f"{p}.nix"
        recipe.write_text("# reworded\n" + recipe.read_text().replace("\n  pkg = {", "\n  # explained\n    pkg = {"))
    fx.sh(world.work, "git", "commit", "--quiet", "-am", "comments")
    fx.sh(world.work, "git", "push", "--quiet", "--force", "origin", BUMP)
    dispatched = len(world.gh.dispatches)
    plan, rows = world.build_head()
    assert plan.items == [] and rows == [] and len(world.gh.dispatches) == dispatched
    assert "0 changed" in plan.rule
    assert _builds(world.entries()) == counts


def test_without_a_cache_the_plan_says_publishing_rebuilds_and_it_does(tmp_path: Path) -> None:
    w = World(tmp_path, cache=False)
    try:
        w.bump()
        plan, _rows = w.build_head()
        assert "No build cache (TORCHBOT_BUILD_CACHE unset): publishing after the merge builds these variants " \
               "again on their runners." in plan.text()
        w.merge()
        published = publish_pending(w.ctx, None, repo=w.work)
        assert all("built again on its runner (no build cache)" in r["message"] for r in published)
        log = w.entries()
        assert [e for e in log if e["host"] == "torchbot"] == []
        counts = _builds(log)
        dep = "pytorch-python313-cuda12_8-sm90-avx512"  # the companion imports it: its job on a fresh runner
        assert counts.pop(dep) == 4  # builds it again, at the PR head and when publishing
        assert set(counts.values()) == {2}  # said plainly, and true: twice
    finally:
        w.close()


def test_a_cache_that_does_not_answer_is_one_line_and_nothing_is_dispatched(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    w = World(tmp_path, cache=False)
    try:
        w.bump()
        ctx = fx.context(tmp_path, github_api_url=w.gh.url, github_token=w.gh.token, github_repo=w.gh.repo,
                         github_poll_seconds=0.01, build_cache=f"http://127.0.0.1:{port}/cache")
        with pytest.raises(ExternalError) as err:
            builds.prepare(ctx, fx.BRANCH, repo=w.work, backend="github", head=BUMP)
        assert "\n" not in err.value.message
        assert err.value.message.startswith(f"The build cache http://127.0.0.1:{port}/cache does not answer")
        assert w.gh.dispatches == [] and builds.status(ctx, fx.BRANCH) == []
    finally:
        w.close()


def test_a_catalog_that_refuses_the_upload_publishes_nothing_and_the_next_run_does(tmp_path: Path) -> None:
    w = World(tmp_path, refuses=fx.ARM)
    try:
        w.bump()
        w.build_head()
        w.merge()
        first = {r["package"]: r for r in publish_pending(w.ctx, None, repo=w.work)}
        assert first[fx.ARM]["state"] == "failed" and "the publish job failed" in first[fx.ARM]["message"]
        assert "\n" not in first[fx.ARM]["message"]
        with state_for(w.ctx).session() as s:
            assert fx.ARM not in {p.package for p in s.query(Publish)}
        # nothing else changed: its build at the PR head is still its latest, so the next run publishes it
        assert [b["state"] for b in builds.status(w.ctx, fx.BRANCH) if b["package"] == fx.ARM] == ["succeeded"]
        w.runners.catalog_refuses = None
        again = publish_pending(w.ctx, None, repo=w.work)
        assert [(r["package"], r["state"]) for r in again] == [(fx.ARM, "published")]
        assert _builds(w.entries())[fx.ARM] == 1  # substituted again, never rebuilt
    finally:
        w.close()


def test_a_platform_with_no_runner_is_named_once_and_nothing_else_changes(tmp_path: Path) -> None:
    """Built on a self-hosted riscv64 runner, whose labels were then removed from the settings:
    publishing names the variant in one line, dispatches nothing for it, records nothing."""
    riscv = "pytorch-python313-cpu-riscv"
    w = World(tmp_path, github_runners="riscv64-linux=self-hosted+riscv64")
    try:
        w.runners.platform_of[("self-hosted", "riscv64")] = "riscv64-linux"
        fx.sh(w.work, "git", "checkout", "--quiet", "-B", BUMP, fx.BRANCH)
        fx.write_recipes(w.work, fx.NEW_PIN, "bumped", PACKAGES)
        (w.work / ".flox" / "pkgs" / f"{riscv}.nix").write_text(
            fx._recipe(riscv, "bumped", fx.NEW_PIN, platforms=["riscv64-linux"]))
        fx.sh(w.work, "git", "add", "-A")
        fx.sh(w.work, "git", "commit", "--quiet", "-m", "bump")
        fx.sh(w.work, "git", "push", "--quiet", "--force", "origin", BUMP)
        fx.sh(w.work, "git", "checkout", "--quiet", "main")
        _plan, rows = w.build_head()
        assert {r["package"]: r["state"] for r in rows}[riscv] == "succeeded"
        w.merge()
        ctx = fx.context(tmp_path, github_api_url=w.gh.url, github_token=w.gh.token, github_repo=w.gh.repo,
                         github_poll_seconds=0.01, **{k: v for k, v in w.settings.items() if k != "github_runners"})
        dispatched = len(w.gh.dispatches)
        out = {r["package"]: r for r in publish_pending(ctx, None, repo=w.work)}
        assert out[riscv]["state"] == "skipped"
        assert out[riscv]["message"] == ("not published: no GitHub runner for riscv64-linux "
                                         "(set TORCHBOT_GITHUB_RUNNERS)")
        (publish_run,) = [p for _, p in w.gh.dispatches[dispatched:]]
        assert riscv not in publish_run["inputs"]["pytorch"]
        with state_for(ctx).session() as s:
            assert riscv not in {p.package for p in s.query(Publish)}
        assert {r["state"] for p, r in out.items() if p != riscv} == {"published"}
    finally:
        w.close()
