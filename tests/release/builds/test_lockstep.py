"""build-torchvision in lockstep (issue 33 point 4): a companion repository's bump is built in its
own GitHub repository's workflow and recorded under that repository, though its branch and
package names are build-pytorch's too (``main`` of both holds
``torchvision-python313-cuda12_8-sm61-avx``). Two GitHub stand-ins behind one API base (the
build-pytorch one forwards what is not its own to the build-torchvision one), real git
repositories with bare origins, the torchvision origin under a ``github.com/acme/…`` path as its
remote names its GitHub repository."""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path

import pytest

from config.errors import UsageError
from release.builds import run as builds
from release.builds.github import dispatch_build, poll_active
from release.schedule.delivered import build_after_bump
from release.state import GithubRun, state_for
from tests.support import fixtures_builds as fx
from tests.support.fakes_github import FakeGitHub
from tests.support.waiting import wait_for

TORCH = "pytorch-python313-cuda12_8-sm90-avx512"
PKGS = [TORCH, fx.COMPANION]  # the same names in both repositories, on the same branch


def _repos(tmp: Path, tv_on_github: bool = True) -> tuple[Path, Path, Path, Path]:
    pt = fx.make_repo(tmp / "pt", packages=PKGS)
    tv = fx.make_repo(tmp / "tv", packages=PKGS)
    tv_origin = tmp / ("github.com/acme" if tv_on_github else "elsewhere") / "build-torchvision.git"
    tv_origin.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(tmp / "tv" / "origin.git"), str(tv_origin)], check=True)
    fx.sh(tv, "git", "remote", "set-url", "origin", str(tv_origin))
    return pt, tmp / "pt" / "origin.git", tv, tv_origin


@pytest.fixture
def world(tmp_path: Path):
    pt, pt_origin, tv, tv_origin = _repos(tmp_path)
    with FakeGitHub(repo="acme/build-torchvision", git_dir=tv_origin) as gh_tv, \
            FakeGitHub(repo="acme/build-pytorch", upstream=gh_tv.url, git_dir=pt_origin) as gh:
        ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", github_api_url=gh.url, github_token=gh.token,
                         github_repo=gh.repo, github_poll_seconds=0.01)
        yield ctx, gh, gh_tv, pt, tv


def _edit(repo: Path, package: str) -> None:
    fx.sh(repo, "git", "checkout", "--quiet", fx.BRANCH)
    recipe = repo / ".flox" / "pkgs" / f"{package}.nix"
    recipe.write_text(recipe.read_text().replace("echo ${torch} > $out", "echo ${torch} changed > $out"))
    fx.sh(repo, "git", "commit", "--quiet", "-am", "edit")
    fx.sh(repo, "git", "push", "--quiet", "origin", fx.BRANCH)
    fx.sh(repo, "git", "checkout", "--quiet", "main")


def _build(ctx, repo: Path):
    plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github", changed_only=True)
    return plan, builds.build(ctx, plan)


def test_each_repository_builds_in_its_own_workflow_and_keeps_its_own_record(world) -> None:
    ctx, gh, gh_tv, pt, tv = world
    plan, rows = _build(ctx, pt)
    assert plan.github is None and sorted(r["package"] for r in rows if r["state"] == "succeeded") == PKGS
    assert len(gh.dispatches) == 1 and gh_tv.dispatches == []

    plan, rows = _build(ctx, tv)  # the same branch and package names: built all the same, in its repository
    assert plan.github == "acme/build-torchvision"
    assert sorted(r["package"] for r in rows if r["state"] == "succeeded") == PKGS
    assert len(gh_tv.dispatches) == 1 and len(gh.dispatches) == 1
    assert {r["repo"] for r in rows} == {"acme/build-torchvision"}
    with state_for(ctx).session() as s:
        assert sorted((r.repo or "") for r in s.query(GithubRun)) == ["", "acme/build-torchvision"]
    latest = state_for(ctx).builds(fx.BRANCH)
    assert sorted((b.repo or "", b.package) for b in latest) == sorted(
        [("", p) for p in PKGS] + [("acme/build-torchvision", p) for p in PKGS])  # four rows, none hidden

    # one repository's change builds in that repository only; the other's record is its own
    _edit(tv, fx.COMPANION)
    assert builds.prepare(ctx, fx.BRANCH, repo=pt, backend="github", changed_only=True).items == []
    plan, rows = _build(ctx, tv)
    assert [r["package"] for r in rows] == [fx.COMPANION] and rows[0]["state"] == "succeeded"
    assert len(gh_tv.dispatches) == 2 and len(gh.dispatches) == 1


def test_the_poller_follows_each_repositorys_runs_through_that_repository(world) -> None:
    ctx, _gh, gh_tv, pt, tv = world
    for repo in (pt, tv):
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        dispatch_build(ctx, plan, wait=False)
    st = state_for(ctx)

    def done() -> bool:
        poll_active(ctx)
        return all(b.state == "succeeded" for b in st.builds(fx.BRANCH)) and len(st.builds(fx.BRANCH)) == 4

    wait_for(done, "both repositories' builds to succeed")
    with st.session() as s:  # each run found and read in its own repository
        where = {(r.repo or ""): r.html_url for r in s.query(GithubRun)}
    assert where[""].startswith("https://github.com/acme/build-pytorch/actions/runs/")
    assert where["acme/build-torchvision"].startswith("https://github.com/acme/build-torchvision/actions/runs/")
    assert any(p.startswith("/repos/acme/build-torchvision/actions/runs/") and p.endswith("/jobs")
               for _m, p in gh_tv.requests)


def test_the_weekly_build_after_a_bump_builds_the_companions_pull_request_too(world) -> None:
    ctx, gh, gh_tv, _pt, tv = world
    head = f"bump/{fx.BRANCH}-0123456"
    fx.sh(tv, "git", "checkout", "--quiet", "-B", head, fx.BRANCH)
    fx.write_recipes(tv, fx.NEW_PIN, "bumped", PKGS)
    fx.sh(tv, "git", "commit", "--quiet", "-am", "bump")
    fx.sh(tv, "git", "push", "--quiet", "origin", head)
    fx.sh(tv, "git", "checkout", "--quiet", "main")
    lines = build_after_bump(ctx, [{"branch": fx.BRANCH, "head": head, "repo": str(tv)}], "github")
    assert lines == [f"{fx.BRANCH} at {head}: 2 variant(s), 2 succeeded"], lines
    ((_, payload),) = gh_tv.dispatches
    assert payload["ref"] == head and payload["inputs"]["publish"] == "false"
    assert gh.dispatches == []


def test_a_companion_with_no_github_repository_is_one_line_and_nothing_is_dispatched(tmp_path: Path) -> None:
    pt, pt_origin, tv, _ = _repos(tmp_path, tv_on_github=False)
    with FakeGitHub(repo="acme/build-pytorch", git_dir=pt_origin) as gh:
        ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", github_api_url=gh.url, github_token=gh.token,
                         github_repo=gh.repo)
        with pytest.raises(UsageError, match=r"^work has no GitHub repository") as err:
            builds.prepare(ctx, fx.BRANCH, repo=tv, backend="github")
        assert "\n" not in err.value.message and gh.dispatches == []


# -- a whole release of both repositories: built at each bump PR's head, merged as a pair, published, announced --

RELEASE = sorted([fx.OK[1], fx.COMPANION, fx.ARM])  # pytorch, torchvision (imports it), an aarch64 variant
BUMP = f"bump/{fx.BRANCH}-0123456"
TV = "acme/build-torchvision"


class Release:
    """Both repositories with their bare origins, each GitHub stand-in's jobs run by runners of their
    platform with the flox/nix shims, each logging to its own file; the torchbot host's build and
    publish commands are the shims too, logging to a third."""

    def __init__(self, tmp: Path, slack_url: str, slack_token: str, tv_branch: str = fx.BRANCH,
                 tv_variants: list[str] = RELEASE):
        from release.builds.workflow import render_workflow
        from tests.support.fake_runners import SHIMS, Runners

        self.pt, self.pt_origin, self.tv, self.tv_origin = _repos(tmp)
        self.tv_branch, self.variants = tv_branch, {"pt": RELEASE, "tv": tv_variants}
        for key, repo, branch in (("pt", self.pt, fx.BRANCH), ("tv", self.tv, tv_branch)):
            fx.sh(repo, "git", "checkout", "--quiet", "-B", branch, f"origin/{fx.BRANCH}")
            for old in (repo / ".flox" / "pkgs").glob("*.nix"):
                old.unlink()
            fx.write_recipes(repo, fx.PIN, "start", self.variants[key], alone=TORCH not in self.variants[key])
            fx.sh(repo, "git", "add", "-A")
            fx.sh(repo, "git", "commit", "--quiet", "-m", "the release's variants")
            fx.sh(repo, "git", "push", "--quiet", "origin", branch)
            fx.sh(repo, "git", "checkout", "--quiet", "main")
        if tv_branch != fx.BRANCH:  # build-torchvision has no branch of build-pytorch's name
            fx.sh(self.tv, "git", "push", "--quiet", "origin", "--delete", fx.BRANCH)
            fx.sh(self.tv, "git", "branch", "--quiet", "-D", fx.BRANCH)
        self.logs = {"pt": tmp / "pt-runners.log", "tv": tmp / "tv-runners.log", "host": tmp / "host.log"}
        host = (f"SHIM_LOG={self.logs['host']} SHIM_HOST=torchbot SHIM_PLATFORM=x86_64-linux "
                f"SHIM_STORE={tmp / 'host-store'} {SHIMS}")
        (tmp / "cache").mkdir()
        self.settings = dict(build_command=f"{host}/flox build {{package}}", build_cache=f"file://{tmp / 'cache'}",
                             publish_command=f"{host}/flox publish -o {{org}} {{package}}")
        workflow = render_workflow(fx.settings(tmp, **self.settings))
        runners = fx.settings(tmp).github_runners
        (tmp / "pt-jobs").mkdir()
        (tmp / "tv-jobs").mkdir()
        self.runners = [Runners(self.pt_origin, workflow, runners, tmp / "pt-jobs", self.logs["pt"]),
                        Runners(self.tv_origin, workflow, runners, tmp / "tv-jobs", self.logs["tv"])]
        self.gh_tv = FakeGitHub(repo=TV, git_dir=self.tv_origin, runner=self.runners[1]).__enter__()
        self.gh = FakeGitHub(repo="acme/build-pytorch", upstream=self.gh_tv.url, git_dir=self.pt_origin,
                             runner=self.runners[0]).__enter__()
        self.ctx = fx.context(tmp, repo_path=f"{self.pt},{self.tv}", github_api_url=self.gh.url,
                              github_token=self.gh.token, github_repo=self.gh.repo, github_poll_seconds=0.01,
                              bump_automerge=True, slack_bot_token=slack_token, slack_api_url=slack_url,
                              **self.settings)

    def close(self) -> None:
        self.gh.__exit__(None, None, None)
        self.gh_tv.__exit__(None, None, None)
        for r in self.runners:
            r.close()

    def bump(self) -> dict[str, int]:
        """Both bump pull requests to NEW_PIN, opened, and written to the release record as the
        bump stage writes them; their numbers."""
        from config.outcomes import BumpKind
        from release.state.record import GroupOutcome, write_bump

        numbers, outcomes = {}, []
        for key, repo, gh, branch in (("pt", self.pt, self.gh, fx.BRANCH), ("tv", self.tv, self.gh_tv, self.tv_branch)):
            fx.sh(repo, "git", "checkout", "--quiet", "-B", BUMP, branch)
            fx.write_recipes(repo, fx.NEW_PIN, f"bumped {key}", self.variants[key],  # each repository's own
                             alone=TORCH not in self.variants[key])
            fx.sh(repo, "git", "commit", "--quiet", "-am", "bump")
            fx.sh(repo, "git", "push", "--quiet", "origin", BUMP)
            fx.sh(repo, "git", "checkout", "--quiet", "main")
            numbers[key] = gh.add_pull(BUMP, branch)["number"]
            outcomes.append(GroupOutcome(repo=str(repo), repo_name=key, branch=branch, group="",
                                         kind=BumpKind.BUMPED, old_pin=fx.PIN, target=fx.NEW_PIN, delivery="pr",
                                         pr_number=numbers[key], head_ref=BUMP,
                                         head_sha=fx.sh(repo, "git", "rev-parse", BUMP).strip()))
        write_bump(state_for(self.ctx), outcomes)
        return numbers

    def build(self, repo: Path) -> list[str]:
        branch = self.tv_branch if repo == self.tv else fx.BRANCH
        return build_after_bump(self.ctx, [{"branch": branch, "head": BUMP, "repo": str(repo)}], "github")

    def row(self, repo: Path):
        from release.state.record import rows

        (row,) = rows(state_for(self.ctx), repo)
        return row


@pytest.fixture
def release(tmp_path: Path):
    from tests.support.fakes_slack import FakeSlack

    with FakeSlack() as slack:
        r = Release(tmp_path, slack.url, slack.token)
        r.slack = slack
        yield r
        r.close()


def _pair_statuses(gh: FakeGitHub, sha: str) -> list[tuple[str, str]]:
    """The ``torchbot/pair`` statuses posted on ``sha``, oldest first: (state, description)."""
    return [(st["state"], st["description"]) for st in gh.statuses.of(sha, "torchbot/pair")]


def test_a_torchvision_pr_waiting_for_a_pair_whose_builds_then_fail_is_told_so_on_github(release) -> None:
    from config.outcomes import PairWait

    numbers = release.bump()
    assert release.build(release.tv) == [f"{fx.BRANCH} at {BUMP}: 3 variant(s), 3 succeeded"]
    head = release.row(release.tv).head_sha
    assert [s for s, _ in _pair_statuses(release.gh_tv, head)] == ["pending"]
    release.gh.fail.add(fx.ARM)  # build-pytorch's aarch64 variant fails at its PR's head
    assert release.build(release.pt) == [f"{fx.BRANCH} at {BUMP}: 3 variant(s), 2 succeeded, 1 failed"]
    assert release.gh.pulls.merges == [] and release.gh_tv.pulls.merges == []
    assert _pair_statuses(release.gh_tv, head)[1:] == [
        ("failure", f"build-pytorch's #{numbers['pt']} failed to build: this merges only with its pair")]
    assert release.row(release.tv).waits_for == PairWait.FAILED


def _per_variant(log: Path, action: str = "build") -> collections.Counter:
    from tests.support.fake_runners import read_log

    return collections.Counter(e["package"] for e in read_log(log) if e["action"] == action)


def test_a_whole_release_of_both_repositories_builds_each_changed_variant_once_and_merges_them_as_a_pair(
        release) -> None:
    from config.outcomes import PairWait, PrState
    from release.publishing import announce
    from release.publishing.publish import publish_pending
    from release.state import Publish
    from release.state import Release as ReleaseThread
    from tests.support.fake_runners import read_log

    numbers = release.bump()
    # build-torchvision's PR is built first and passes: it waits for its build-pytorch pair, and says why
    assert release.build(release.tv) == [f"{fx.BRANCH} at {BUMP}: 3 variant(s), 3 succeeded"]
    assert release.gh_tv.pulls.merges == [] and release.gh.pulls.merges == []
    tv_row = release.row(release.tv)
    assert (tv_row.waits_for, tv_row.pair_pr) == (PairWait.BUILDING, numbers["pt"])
    assert _pair_statuses(release.gh_tv, tv_row.head_sha) == [(  # and GitHub shows it on its head
        "pending", f"waits for build-pytorch's #{numbers['pt']}, which is not built yet: it merges only with its pair")]
    # build-pytorch's passes: it merges, and build-torchvision's with it, in the same run
    assert release.build(release.pt) == [f"{fx.BRANCH} at {BUMP}: 3 variant(s), 3 succeeded"]
    assert [m["number"] for m in release.gh.pulls.merges] == [numbers["pt"]]
    assert [m["number"] for m in release.gh_tv.pulls.merges] == [numbers["tv"]]
    assert _pair_statuses(release.gh_tv, tv_row.head_sha)[1:] == [
        ("success", f"build-pytorch's #{numbers['pt']} merged: this merges with it")]
    assert _pair_statuses(release.gh, release.row(release.pt).head_sha) == []  # build-pytorch's waits for none
    assert release.row(release.pt).pr_state == PrState.MERGED
    tv_row = release.row(release.tv)
    assert (tv_row.pr_state, tv_row.waits_for) == (PrState.MERGED, None)

    # the publish job covers both repositories: each from its merged branch, on its own runners
    published = publish_pending(release.ctx, None)
    assert sorted((r["repo"] or "", r["package"]) for r in published if r["state"] == "published") == sorted(
        [("", p) for p in RELEASE] + [(TV, p) for p in RELEASE])
    assert all("substituted from the cache" in r["message"] for r in published)
    assert publish_pending(release.ctx, None) == []  # once
    with state_for(release.ctx).session() as s:
        assert sorted((p.repo or "", p.package) for p in s.query(Publish)) == sorted(
            [("", p) for p in RELEASE] + [(TV, p) for p in RELEASE])
        assert sorted((r.repo or "", r.branch, r.pin, r.total) for r in s.query(ReleaseThread)) == [
            ("", fx.BRANCH, fx.NEW_PIN, 3), (TV, fx.BRANCH, fx.NEW_PIN, 3)]
    # announced: a thread each, build-torchvision's parent saying whose it is
    assert announce.flush(release.ctx)["error"] is None
    parents = [m["text"] for m in release.slack.messages("C0ANNOUNCE") if not m.get("thread_ts")]
    assert len(parents) == 2
    assert sorted("of build-torchvision" in p for p in parents) == [False, True]
    assert all("all 3 variant(s) published" in p for p in parents)

    # builds per variant over the whole release: 1.0 per changed variant in each repository, 0 on the host
    pt_merge = fx.sh(release.pt_origin, "git", "rev-parse", fx.BRANCH).strip()
    tv_merge = fx.sh(release.tv_origin, "git", "rev-parse", fx.BRANCH).strip()
    for key, origin, merge in (("pt", release.pt_origin, pt_merge), ("tv", release.tv_origin, tv_merge)):
        counts = _per_variant(release.logs[key])
        assert counts == dict.fromkeys(RELEASE, 1), (key, counts)
        assert sum(counts.values()) / len(RELEASE) == 1.0
        head = fx.sh(origin, "git", "rev-parse", BUMP).strip()
        log = read_log(release.logs[key])
        assert {e["commit"] for e in log if e["action"] == "build"} == {head}  # built at the PR's head
        pubs = [e for e in log if e["action"] == "publish"]
        assert sorted(e["package"] for e in pubs) == RELEASE and {e["commit"] for e in pubs} == {merge}
        for e in log:  # on a runner of its platform: no aarch64 variant built or published on x86_64
            if e["action"] in ("build", "publish", "refused"):
                assert e["action"] != "refused" and e["host"] == "runner", e
                assert e["platform"] == fx.platforms_of(e["package"])[0] == e["target"], e
    assert read_log(release.logs["host"]) == []  # the torchbot host builds and publishes nothing
    assert any(e["platform"] == "aarch64-linux" and e["package"] == fx.ARM
               for e in read_log(release.logs["tv"]) if e["action"] == "build")


def test_a_torchvision_pr_whose_pytorch_pair_was_closed_waits_and_the_dashboard_says_why(release) -> None:
    from config.outcomes import PairWait, PrState
    from release.dashboard.commands import dashboard
    from release.state.record import set_pr_state

    numbers = release.bump()
    release.gh.pulls.close(numbers["pt"], by="maintainer")  # a person closed build-pytorch's PR
    set_pr_state(state_for(release.ctx), release.pt, fx.BRANCH, numbers["pt"], PrState.CLOSED, "maintainer")
    assert release.build(release.tv) == [f"{fx.BRANCH} at {BUMP}: 3 variant(s), 3 succeeded"]
    assert release.gh_tv.pulls.merges == []  # every build passed, and it still waits
    row = release.row(release.tv)
    assert (row.pr_state, row.waits_for, row.pair_pr) == (PrState.OPEN, PairWait.CLOSED, numbers["pt"])
    assert _pair_statuses(release.gh_tv, row.head_sha) == [
        ("failure", f"build-pytorch's #{numbers['pt']} was closed without merging: this merges only with its pair")]
    from release.context import Context

    model = dashboard(Context(release.ctx.settings)).model  # as it reads the repositories
    (need,) = [n for n in model.needs if n.kind == "pair-waits"]
    assert need.text == (f"PR #{numbers['tv']} waits for build-pytorch's #{numbers['pt']}, which was closed "
                         "without merging: it merges only with its pair")
    from release.publishing.publish import held, publish_pending

    assert publish_pending(release.ctx, None) == []  # nothing of it merged, nothing published
    assert held(release.ctx, None) != []


def test_local_builds_of_the_same_branch_and_variant_in_both_repositories_run_at_once(tmp_path: Path) -> None:
    """A variant lock is its repository's: build-torchvision's ``main`` building a variant named as
    one of build-pytorch's ``main`` neither waits for it nor is skipped, and each repository's
    lock still keeps a second build of its own variant from starting."""
    import threading

    from release.state import BuildLock

    pt, _pt_origin, tv, _tv_origin = _repos(tmp_path)
    gate = tmp_path / "gate"
    ctx = fx.context(tmp_path, repo_path=f"{pt},{tv}", github_repo="acme/build-pytorch", build_jobs=1,
                     build_command=f"while [ ! -e {gate} ]; do sleep 0.02; done; touch result-{{package}}")
    st = state_for(ctx)
    results: dict[str, list[dict]] = {}

    def start(repo: Path, name: str) -> threading.Thread:
        plan = builds.prepare(ctx, fx.BRANCH, [fx.COMPANION], repo=repo)
        assert [i.package for i in plan.items] == [fx.COMPANION], plan.text()
        thread = threading.Thread(target=lambda: results.__setitem__(name, builds.run_local(ctx, plan)))
        thread.start()
        return thread

    def locked(repo: str | None):
        with st.session() as s:
            return s.query(BuildLock).filter(BuildLock.repo.is_(None) if repo is None else BuildLock.repo == repo,
                                             BuildLock.pgid.is_not(None)).all()

    threads = []
    try:
        threads.append(start(pt, "pt"))
        wait_for(lambda: locked(None), "build-pytorch's build to run")
        threads.append(start(tv, "tv"))  # planned while build-pytorch's holds the same branch and name
        wait_for(lambda: locked("acme/build-torchvision"), "build-torchvision's build to run too")
        for repo in (pt, tv):  # each repository's own lock still holds
            again = builds.prepare(ctx, fx.BRANCH, [fx.COMPANION], repo=repo)
            assert again.items == [] and again.skipped[0].reason.startswith("already building since")
    finally:
        gate.touch()
        for thread in threads:
            thread.join(60)
    assert {n: [(r["package"], r["state"], r.get("repo")) for r in rows] for n, rows in results.items()} == {
        "pt": [(fx.COMPANION, "succeeded", None)],
        "tv": [(fx.COMPANION, "succeeded", "acme/build-torchvision")]}
    with st.session() as s:
        assert s.query(BuildLock).count() == 0


TV_BRANCH = "torchvision-0.23-python313"  # a build-torchvision branch not named as its build-pytorch pair


def test_a_torchvision_branch_named_apart_from_its_pytorch_pair_is_paired_by_versions(tmp_path: Path) -> None:
    """The reader pairs build-torchvision's ``torchvision-0.23-python313`` (torchvision recipes
    only) with build-pytorch's ``pytorch-2.8-python313`` by versions, as ``bump-pins
    --with-companions`` bumps them: its bump PR waits for that branch's PR and merges with it,
    into its own branch."""
    from config.outcomes import PairWait, PrState
    from release.builds.pairing import pytorch_branches
    from tests.support.fakes_slack import FakeSlack

    with FakeSlack() as slack:
        r = Release(tmp_path, slack.url, slack.token, tv_branch=TV_BRANCH, tv_variants=[fx.COMPANION])
        try:
            assert pytorch_branches(r.ctx, r.tv, TV_BRANCH) == [fx.BRANCH, TV_BRANCH]
            numbers = r.bump()
            assert r.build(r.tv) == [f"{TV_BRANCH} at {BUMP}: 1 variant(s), 1 succeeded"]
            assert r.gh_tv.pulls.merges == []  # its builds passed; its pair has not
            row = r.row(r.tv)
            assert (row.branch, row.waits_for, row.pair_pr) == (TV_BRANCH, PairWait.BUILDING, numbers["pt"])
            assert r.build(r.pt) == [f"{fx.BRANCH} at {BUMP}: 3 variant(s), 3 succeeded"]
            assert [m["number"] for m in r.gh.pulls.merges] == [numbers["pt"]]
            assert [m["number"] for m in r.gh_tv.pulls.merges] == [numbers["tv"]]  # in the same run
            row = r.row(r.tv)
            assert (row.pr_state, row.waits_for) == (PrState.MERGED, None)
            head = fx.sh(r.tv_origin, "git", "rev-parse", BUMP).strip()
            fx.sh(r.tv_origin, "git", "merge-base", "--is-ancestor", head, TV_BRANCH)  # into its own branch
        finally:
            r.close()
