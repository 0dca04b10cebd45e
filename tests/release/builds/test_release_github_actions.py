"""The github backend against a fake GitHub Actions API on 127.0.0.1, and the workflow it
dispatches (checked with check-jsonschema and zizmor)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from config.errors import ExternalError, UsageError
from release.builds import github as github_actions
from release.builds import run as builds
from release.builds.plan import BuildItem
from release.builds.workflow import render_workflow, write_workflow
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub


def _ctx(tmp_path: Path, gh: FakeGitHub, **over):
    base = dict(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo, github_poll_seconds=0.01)
    return fx.context(tmp_path, **{**base, **over})


def test_dispatch_poll_and_states(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path)
    with FakeGitHub(fail={fx.FAILING}) as gh:
        ctx = _ctx(tmp_path, gh)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        rows = {r["package"]: r for r in builds.build(ctx, plan)}
        (workflow, payload), = gh.dispatches
    assert workflow == "torchbot-build.yml" and payload["ref"] == fx.BRANCH  # the branch built, not main
    inputs = payload["inputs"]
    assert inputs["branch"] == fx.BRANCH and len(inputs["request_id"]) == 16
    assert json.loads(inputs["companions"]) == [
        {"package": fx.COMPANION, "platform": "x86_64-linux", "runs_on": ["ubuntu-latest"]}]
    assert sorted(e["package"] for e in json.loads(inputs["pytorch"])) == sorted(set(fx.ALL) - {fx.COMPANION})
    assert rows[fx.FAILING]["state"] == "failed" and "failure" in rows[fx.FAILING]["message"]
    for pkg in set(fx.ALL) - {fx.FAILING}:
        assert rows[pkg]["state"] == "succeeded" and rows[pkg]["backend"] == "github"
        assert rows[pkg]["log"].startswith("https://github.com/acme/build-pytorch/actions/runs/1000/job/")
        assert rows[pkg]["started"] and rows[pkg]["finished"] and rows[pkg]["external_id"] == "1000"
    # it polled: the run went queued -> in_progress -> completed
    assert sum(1 for m, p in gh.requests if p.endswith("/jobs")) >= 3


def test_poll_active_one_pass_at_a_time(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        # each pass is due by the next: a pass that took less than a 10 ms interval left the
        # next one nothing due (it happened once, 0 where 2 moved)
        ctx = _ctx(tmp_path, gh, github_poll_seconds=1e-6)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        rows = github_actions.dispatch_build(ctx, plan, wait=False)
        assert {r["state"] for r in rows} == {"queued"}
        assert github_actions.poll_active(ctx) == 0  # still queued
        assert github_actions.poll_active(ctx) == 2  # running
        assert github_actions.poll_active(ctx) == 2  # succeeded
        assert github_actions.poll_active(ctx) == 0  # nothing left to follow
    assert {r["state"] for r in builds.status(ctx, fx.BRANCH)} == {"succeeded"}


def test_errors_are_clear_and_record_nothing(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, github_token="wrong", http_retries=1)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        with pytest.raises(ExternalError, match="HTTP 401"):
            builds.build(ctx, plan)
        assert builds.status(ctx, fx.BRANCH) == []
        with pytest.raises(UsageError, match="GITHUB_TOKEN"):
            builds.build(fx.context(tmp_path, github_api_url=gh.url), plan)


def test_each_variant_runs_on_its_platforms_runner(tmp_path: Path) -> None:
    repo = fx.make_repo(tmp_path, packages=[*fx.OK, fx.ARM, fx.DARWIN])
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, github_big_parallel_runners={"x86_64-linux": ["self-hosted", "gpu-pool"]})
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        rows = github_actions.dispatch_build(ctx, plan, wait=False)
        (_, payload), = gh.dispatches
    entries = {e["package"]: e for e in json.loads(payload["inputs"]["pytorch"])}
    assert entries == {
        "pytorch-python313-cpu-avx2": {"package": "pytorch-python313-cpu-avx2", "platform": "x86_64-linux",
                                       "runs_on": ["ubuntu-latest"]},
        # big-parallel (CUDA) recipes go to the team's pool where one is set for the platform
        "pytorch-python313-cuda12_8-sm90-avx512": {"package": "pytorch-python313-cuda12_8-sm90-avx512",
                                                   "platform": "x86_64-linux", "runs_on": ["self-hosted", "gpu-pool"]},
        fx.ARM: {"package": fx.ARM, "platform": "aarch64-linux", "runs_on": ["ubuntu-24.04-arm"]},
        fx.DARWIN: {"package": fx.DARWIN, "platform": "aarch64-darwin", "runs_on": ["macos-14"]},
    }
    assert payload["ref"] == fx.BRANCH and len(rows) == 4


def test_dry_run_json_lists_package_platform_runner_and_ref(tmp_path: Path, monkeypatch, capsys) -> None:
    from bot.frontends.cli import main as cli
    repo = fx.make_repo(tmp_path, packages=[*fx.OK, fx.ARM, fx.DARWIN, fx.COMPANION])
    monkeypatch.setenv("TORCHBOT_STATE_DB", f"sqlite:///{tmp_path / 'cli.sqlite'}")
    monkeypatch.setenv("TORCHBOT_GITHUB_RUNNERS", "aarch64-darwin=macos-15")
    code = cli.main(["release", "build", "--repo", str(repo), "--branch", fx.BRANCH, "--backend", "github",
                     "--dry-run", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ref"] == fx.BRANCH and out["backend"] == "github"
    got = {b["package"]: (b["platform"], b["runs_on"]) for b in out["build"]}
    assert got == {
        "pytorch-python313-cpu-avx2": ("x86_64-linux", ["ubuntu-latest"]),
        "pytorch-python313-cuda12_8-sm90-avx512": ("x86_64-linux", ["ubuntu-latest"]),
        fx.ARM: ("aarch64-linux", ["ubuntu-24.04-arm"]),
        fx.DARWIN: ("aarch64-darwin", ["macos-15"]),
        fx.COMPANION: ("x86_64-linux", ["ubuntu-latest"]),
    }
    assert out["platforms"] == {"x86_64-linux": 3, "aarch64-darwin": 1, "aarch64-linux": 1}
    assert out["skipped"] == []
    assert cli.main(["release", "build", "--repo", str(repo), "--branch", fx.BRANCH, "--backend", "github",
                     "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "(github, ref pytorch-2.8-python313)" in text and "1 aarch64-linux on ubuntu-24.04-arm" in text


def test_a_branch_larger_than_one_run_is_dispatched_in_batches(tmp_path: Path) -> None:
    """GitHub runs at most 256 jobs per matrix: 300 variants and their companions go out as
    two dispatches, each companion with the pytorch variant it waits for."""
    torch = [f"pytorch-python313-cuda12_8-sm{n}-avx2" for n in range(100, 400)]
    comps = [t.replace("pytorch-", "torchvision-", 1) for t in torch[::10]]
    items = [BuildItem(t, "b", platform="x86_64-linux", runs_on=("ubuntu-latest",)) for t in torch]
    items += [BuildItem(c, "b", after=c.replace("torchvision-", "pytorch-", 1), platform="x86_64-linux",
                        runs_on=("ubuntu-latest",)) for c in comps]
    runs = github_actions.batches(items)
    assert len(runs) == 2
    for t, c in runs:
        assert len(t) <= 256 and len(c) <= 256
        assert len(json.dumps(t)) + len(json.dumps(c)) < 65_535
        names = {e["package"] for e in t}
        assert all(e["package"].replace("torchvision-", "pytorch-", 1) in names for e in c)
    assert sorted(e["package"] for t, c in runs for e in t + c) == sorted(torch + comps)


def test_batches_are_dispatched_at_the_branch_and_followed(tmp_path: Path) -> None:
    many = [f"pytorch-python313-cuda12_8-sm{n}-avx2" for n in range(100, 360)]
    repo = fx.make_repo(tmp_path, packages=many)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh)
        rows = builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
    assert [len(json.loads(p["inputs"]["pytorch"])) for _, p in gh.dispatches] == [256, 4]
    assert {p["ref"] for _, p in gh.dispatches} == {fx.BRANCH}
    assert len(rows) == 260 and {r["state"] for r in rows} == {"succeeded"}


def _workflow_checks(path: Path) -> None:
    """GitHub's workflow schema (check-jsonschema, offline) and zizmor (offline): no finding."""
    bindir = Path(sys.executable).parent
    tools = bindir.parent / "tools" / "bin"  # check-jsonschema's own venv, inside the project's (Makefile)
    schema = subprocess.run([str(tools / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                             str(path)], check=False, capture_output=True, text=True)
    assert schema.returncode == 0, schema.stdout + schema.stderr
    lint = subprocess.run([str(bindir / "zizmor"), "--offline", "--no-progress", "--format", "plain", str(path)],
                          check=False, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "No findings to report" in lint.stdout + lint.stderr


def test_rendered_workflow_is_valid_and_safe(tmp_path: Path) -> None:
    ctx = fx.context(tmp_path, github_max_parallel=3, build_jobs=5)
    text = render_workflow(ctx.settings)
    assert "workflow_dispatch:" in text and "include: ${{ fromJSON(inputs.pytorch) }}" in text
    assert "runs-on: ${{ matrix.runs_on }}" in text and text.count("max-parallel: 3") == 2
    assert "max-parallel: 5" not in text  # TORCHBOT_BUILD_JOBS is local parallelism only
    assert 'FLOX_ORG: "acme"' in text and 'run: flox publish -o "$FLOX_ORG" "$PACKAGE"' in text
    assert "needs: pytorch" in text and "permissions: {}" in text
    # no ${{ }} inside a run: line, every action pinned to a 40-hex commit with its tag
    assert not [line for line in text.splitlines() if "run:" in line and "${{" in line]
    uses = [line.split("uses:", 1)[1].strip() for line in text.splitlines() if "uses:" in line]
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+(\.\d+)*", u) for u in uses)
    assert text.count("persist-credentials: false") == text.count("actions/checkout@")
    assert not re.search(r"\$[a-z_]+\b(?!\s*\}\})", text.replace("$FLOX_ORG", "").replace("$PACKAGE", ""))
    path = tmp_path / "torchbot-build.yml"
    path.write_text(text)
    _workflow_checks(path)


def test_no_cap_by_default_leaves_max_parallel_out(tmp_path: Path) -> None:
    """GitHub's default is no cap: every matrix job runs at once."""
    text = render_workflow(fx.context(tmp_path, build_jobs=1).settings)
    assert "max-parallel" not in text and "$max_parallel" not in text
    assert "fail-fast: false" in text and "matrix:" in text
    path = tmp_path / "torchbot-build.yml"
    path.write_text(text)
    _workflow_checks(path)


def test_a_bad_max_parallel_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    from config.errors import ConfigError
    from config.settings import load_settings

    for bad in ("0", "-2", "lots"):
        with pytest.raises(ConfigError) as err:
            load_settings(_env_file=None, github_max_parallel=bad)
        assert str(err.value).startswith("TORCHBOT_GITHUB_MAX_PARALLEL: ") and "\n" not in str(err.value)
    assert load_settings(_env_file=None, github_max_parallel="none").github_max_parallel is None
    assert load_settings(_env_file=None, github_max_parallel="20").github_max_parallel == 20


def test_a_bad_org_cannot_reach_the_workflow(tmp_path: Path) -> None:
    from config.errors import ConfigError
    from config.settings import load_settings

    evil = 'acme"\n    run: curl evil'
    with pytest.raises(ConfigError, match="TORCHBOT_FLOX_ORG"):  # refused when the settings load
        load_settings(flox_org=evil, _env_file=None)
    settings = fx.context(tmp_path).settings.model_copy(update={"flox_org": evil})  # and by the workflow itself
    with pytest.raises(UsageError, match="TORCHBOT_FLOX_ORG"):
        render_workflow(settings)


def test_workflow_commit_goes_to_the_named_branch_without_touching_the_checkout(tmp_path: Path, capsys,
                                                                                monkeypatch) -> None:
    from bot.frontends.cli import main as cli
    monkeypatch.setenv("TORCHBOT_FLOX_ORG", "acme")
    ctx = fx.context(tmp_path)
    repo = fx.make_repo(tmp_path)
    (repo / "scratch.txt").write_text("mine\n")
    before = (builds.git(repo, "symbolic-ref", "HEAD"), builds.git(repo, "status", "--porcelain"),
              builds.git(repo, "rev-parse", "main"))
    path, sha = write_workflow(ctx, repo, commit=True, branch=fx.BRANCH)
    assert str(path) == ".github/workflows/torchbot-build.yml"
    assert builds.git(repo, "rev-parse", fx.BRANCH).strip() == sha
    assert builds.git(repo, "show", f"{fx.BRANCH}:{path}") == render_workflow(ctx.settings)
    assert builds.git(repo, "log", "-1", "--format=%s", fx.BRANCH).strip() == "torchbot: GitHub Actions build workflow"
    after = (builds.git(repo, "symbolic-ref", "HEAD"), builds.git(repo, "status", "--porcelain"),
             builds.git(repo, "rev-parse", "main"))
    assert after == before and not (repo / ".github").exists()
    assert write_workflow(ctx, repo, commit=True, branch=fx.BRANCH) == (path, None)  # already there
    # the committed file passes the same checks
    committed = tmp_path / "committed.yml"
    committed.write_text(builds.git(repo, "show", f"{fx.BRANCH}:{path}"))
    _workflow_checks(committed)
    # --commit needs --branch, and the branch must exist
    assert cli.main(["release", "workflow", "--repo", str(repo), "--commit"]) == 2
    assert "--branch" in capsys.readouterr().err
    assert cli.main(["release", "workflow", "--repo", str(repo), "--commit", "--branch", "nope"]) == 2  # bad input
    assert "No branch 'nope'" in capsys.readouterr().err
    assert builds.git(repo, "rev-parse", fx.BRANCH).strip() == sha

    # a fresh clone has one local branch: the commit goes on a new local branch at origin's tip
    import subprocess

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(repo), str(clone)], check=True)
    assert builds.git(clone, "branch", "--list", fx.BRANCH).strip() == ""
    assert cli.main(["release", "workflow", "--repo", str(clone), "--commit", "--branch", fx.BRANCH, "--dry-run"]) == 0
    assert builds.git(clone, "branch", "--list", fx.BRANCH).strip() == ""  # a dry run makes no branch
    capsys.readouterr()
    builds.git(clone, "update-ref", f"refs/remotes/origin/{fx.BRANCH}", f"{sha}~1")  # origin before the workflow
    path, new = write_workflow(ctx, clone, commit=True, branch=fx.BRANCH)
    assert builds.git(clone, "rev-parse", f"{new}~1").strip() == builds.git(repo, "rev-parse", f"{sha}~1").strip()


def test_github_builds_are_recorded_as_published_by_the_workflow(tmp_path: Path) -> None:
    from release.publishing import publish

    repo = fx.make_repo(tmp_path, packages=fx.OK)
    with FakeGitHub() as gh:
        ctx = _ctx(tmp_path, gh, publish_command="false")  # torchbot must not publish these itself
        builds.build(ctx, builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github"))
    rows = publish.publish_pending(ctx, fx.BRANCH)
    assert sorted((r["package"], r["state"]) for r in rows) == [(p, "published") for p in sorted(fx.OK)]
    assert publish.publish_pending(ctx, fx.BRANCH) == []


def test_real_shape_branch_dry_run_gives_arm_and_macos_runners(tmp_path: Path) -> None:
    from tests.support.fixtures_realshapes import make_pytorch_repo

    pt = make_pytorch_repo(tmp_path / "pt")
    branch = "pytorch-2.10-python313"
    ctx = fx.context(tmp_path, github_big_parallel_runners="x86_64-linux=self-hosted+big")
    plan = builds.prepare(ctx, branch, repo=pt.path, backend="github").to_dict()
    assert plan["ref"] == branch and plan["skipped"] == []
    got = {b["package"]: (b["platform"], tuple(b["runs_on"])) for b in plan["build"]}
    facts = pt.branches[branch].recipes
    assert set(got) == set(facts)
    for package, f in facts.items():
        platform, runs_on = got[package]
        assert platform == f.platforms[0]
        expected = {"aarch64-linux": ("ubuntu-24.04-arm",), "aarch64-darwin": ("macos-14",),
                    "x86_64-linux": ("self-hosted", "big") if f.big_parallel else ("ubuntu-latest",)}[platform]
        assert runs_on == expected, package
    assert {p for p, _ in got.values()} == {"x86_64-linux", "aarch64-linux", "aarch64-darwin"}
