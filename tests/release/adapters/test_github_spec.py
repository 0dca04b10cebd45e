"""torchbot against stand-ins that answer as GitHub's OpenAPI description says, and the check
that holds the stand-ins and torchbot's requests to it (tests/support/github_conformance).

- An unknown ref as GitHub gives it: ``422 No commit found for SHA`` (and 404) on
  ``commits/{ref}`` is "no such commit": the refusal a user should see, not an HTTP error.
- torchbot asks for less: the sha media type to resolve a ref, the API version header on
  every request, the token only to GitHub.
- The stand-ins are as strict as GitHub: per_page capped at 100 with Link headers, the five
  rate-limit headers, a token check, the dispatch body validated, started_at a string.
- The check fails when a stand-in drops a required field or a request sends a parameter, a
  header or a body the spec does not define.
"""

from __future__ import annotations

import json

import httpx
import pytest

from config.errors import ExternalError, RefusedError
from config.settings import Settings
from release.adapters.github import Actions
from release.adapters.nixpkgs import NixpkgsClient
from tests.support import github_conformance as conformance
from tests.support import github_shapes as shapes
from tests.support import github_spec as spec
from tests.support.fakes_github import FakeGitHub
from tests.support.fakes_nixpkgs import FakeNixpkgs
from tests.support.github_openapi import regenerate

SHA = "ab" * 20
GITHUB = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


@pytest.fixture
def nix():
    with FakeNixpkgs() as f:
        f.add_rev(SHA, "2.9.1", {"cudaPackages_12_9"})
        f.branches["nixos-unstable"] = SHA
        yield f


def _client(nix: FakeNixpkgs, **over) -> NixpkgsClient:
    base = dict(channels_url=nix.channels_url, github_api_url=nix.api_url, http_retries=1, http_timeout=5,
                github_token=nix.token, _env_file=None)
    return NixpkgsClient(Settings(**{**base, **over}))


# -- unknown refs as GitHub says them -------------------------------------------------------

@pytest.mark.parametrize("status", [422, 404])
def test_an_unknown_revision_is_refused_as_no_such_commit(nix, status) -> None:
    nix.unknown_ref_status = status
    with _client(nix) as c, pytest.raises(RefusedError, match=f"nixpkgs has no commit {'f' * 40}; nothing"):
        c.resolve("f" * 40)
    assert nix.requests[-1].startswith("GET /api/repos/NixOS/nixpkgs/commits/ffff")


@pytest.mark.parametrize("status", [422, 404])
def test_a_misspelt_channel_is_refused_as_no_such_channel(nix, status) -> None:
    nix.unknown_ref_status = status
    with _client(nix) as c, pytest.raises(ExternalError) as err:
        c.channel_head("nixos-unstabel")
    assert str(err.value) == (f"Channel 'nixos-unstabel' does not exist at {nix.channels_url} "
                              "nor as a nixpkgs branch.")


def test_a_channel_that_is_a_nixpkgs_branch_resolves_through_github(nix) -> None:
    with _client(nix) as c:
        assert c.channel_head("nixos-unstable") == SHA  # no such channel endpoint; the branch


def test_another_422_is_still_github_failing(nix) -> None:
    """Only GitHub's "No commit found" 422 means no such commit; any other 422 is an error."""
    with FakeGitHub(token=nix.token, upstream=nix.api_url) as gh:
        gh.throttle(1, status=422, retry_after=None)  # {"message": "Server Error"}
        with _client(nix, github_api_url=gh.url) as c, pytest.raises(ExternalError, match="HTTP 422") as err:
            c.resolve(SHA)
    assert not isinstance(err.value, RefusedError)


# -- asking GitHub for less -------------------------------------------------------------------

def test_resolve_asks_for_the_sha_alone_and_names_the_api_version(nix) -> None:
    seen: list[httpx.Request] = []
    hooked = httpx.Client(timeout=5, event_hooks={"request": [seen.append]})
    settings = Settings(channels_url=nix.channels_url, github_api_url=nix.api_url, github_token=nix.token,
                        _env_file=None)
    with NixpkgsClient(settings, client=hooked) as c:
        assert c.resolve("nixos-unstable") == SHA
        assert c.channel_head("nixos-unstable") == SHA  # the channel endpoint: 404, then GitHub
    commit, channel, again = seen
    assert commit.headers["accept"] == "application/vnd.github.sha"
    assert commit.headers["x-github-api-version"] == "2022-11-28"
    assert commit.headers["authorization"] == f"Bearer {nix.token}"
    assert "authorization" not in channel.headers  # the token goes to GitHub only
    assert again.headers["x-github-api-version"] == "2022-11-28"


def test_every_actions_request_names_the_api_version() -> None:
    seen: list[httpx.Request] = []
    with FakeGitHub() as gh:
        hooked = httpx.Client(timeout=5, event_hooks={"request": [seen.append]})
        actions = Actions(Settings(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                                   _env_file=None), client=hooked)
        made = actions.dispatch({"request_id": "r1", "pytorch": "[]", "companions": "[]"}, ref="main")
        actions.run(str(made["id"]))
        actions.jobs(str(made["id"]))
    assert len(seen) == 3 and all(r.headers["x-github-api-version"] == "2022-11-28" for r in seen)
    assert json.loads(seen[0].content)["return_run_details"] is True


# -- the stand-ins are as strict as GitHub ----------------------------------------------------

def test_fake_nixpkgs_caps_per_page_at_100_and_links_the_pages(nix) -> None:
    for i in range(150):
        nix.add_commit(f"{i:040x}", files=("pkgs/a.nix",))
    head = f"{149:040x}"
    url = f"{nix.api_url}repos/NixOS/nixpkgs/commits"
    auth = {**GITHUB, "Authorization": f"Bearer {nix.token}"}
    first = httpx.get(url, params={"sha": head, "path": "pkgs/a.nix", "per_page": 500}, headers=auth)
    second = httpx.get(first.links["next"]["url"], headers=auth)
    assert len(first.json()) == 100 and first.links["last"]["url"].endswith("page=2")
    assert len(second.json()) == 50 and "next" not in second.links and second.links["first"]["url"]
    default = httpx.get(url, params={"sha": head}, headers=auth)
    assert len(default.json()) == 30  # GitHub's default page
    for resp in (first, second, default):
        assert all(resp.headers.get(h) for h in conformance.RATE_HEADERS)


def test_fake_nixpkgs_checks_the_token(nix) -> None:
    url = f"{nix.api_url}repos/NixOS/nixpkgs/commits/{SHA}"
    wrong = httpx.get(url, headers={**GITHUB, "Authorization": "Bearer ghp-wrong"})
    anonymous = httpx.get(url, headers=GITHUB)
    assert wrong.status_code == 401 and wrong.json()["message"] == "Bad credentials"
    assert wrong.headers["x-ratelimit-limit"] == "60"
    assert anonymous.status_code == 200 and anonymous.headers["x-ratelimit-limit"] == "60"


@pytest.mark.parametrize(("body", "why"), [
    ({"inputs": {"a": "1"}}, "\"ref\" wasn't supplied"),
    ({"ref": "main", "inputs": {"a": 1}}, "is not a string"),
    ({"ref": "main", "inputs": {f"i{n}": "x" for n in range(26)}}, "more than the maximum of 25"),
])
def test_a_dispatch_body_github_would_refuse_is_refused_422(body, why) -> None:
    with FakeGitHub() as gh, conformance.expect_problems():
        resp = httpx.post(f"{gh.url}repos/{gh.repo}/actions/workflows/build.yml/dispatches", json=body,
                          headers={**GITHUB, "Authorization": f"Bearer {gh.token}"})
    assert resp.status_code == 422 and why in resp.json()["message"] and not gh.runs
    assert resp.json()["documentation_url"]


def test_a_queued_job_has_a_started_at_string_as_github_gives() -> None:
    with FakeGitHub() as gh:
        gh.hold_runs("queued", job_status="queued")
        actions = Actions(Settings(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                                   _env_file=None))
        made = actions.dispatch({"pytorch": json.dumps(["p1", "p2"])}, ref="main")
        jobs = actions.jobs(str(made["id"]))
    assert [j["status"] for j in jobs] == ["queued", "queued"]
    assert all(isinstance(j["started_at"], str) and j["completed_at"] is None for j in jobs)


# -- the check fails what GitHub would not do -------------------------------------------------

class _Dropping(FakeGitHub):
    """A stand-in that forgot a field GitHub always gives."""

    def _run(self, run: dict) -> dict:
        shaped = super()._run(run)
        del shaped["head_sha"]
        return shaped


def test_the_check_fails_a_stand_in_that_drops_a_required_field() -> None:
    with _Dropping() as gh, conformance.expect_problems() as found:
        actions = Actions(Settings(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                                   _env_file=None))
        actions.run(str(actions.dispatch({}, ref="main")["id"]))
    assert len(found) == 1 and "GET /repos/acme/build-pytorch/actions/runs/1000 -> 200" in found[0]
    assert "'head_sha' is a required property" in found[0]


def test_the_check_fails_a_request_with_a_parameter_the_spec_does_not_define() -> None:
    with FakeGitHub() as gh, conformance.expect_problems() as found:
        actions = Actions(Settings(github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                                   _env_file=None))
        actions.dispatch({}, ref="main")
        actions._all_pages("runs/1000/jobs", "jobs", {"filter": "latest", "state": "open"})
    assert any("query parameter 'state' is not defined by actions/list-jobs-for-workflow-run" in p for p in found)


@pytest.mark.parametrize(("method", "path", "params", "headers", "body", "expect"), [
    ("GET", "runs/1000/jobs", {"filter": "everything"}, GITHUB, None, "'everything' is not one of"),
    ("GET", "runs/1", {}, {"Accept": "application/vnd.github+json"}, None, "no X-GitHub-Api-Version"),
    ("GET", "runs/1/logs", {}, GITHUB, None, "not an operation of GitHub's API"),
    ("GET", "runs/1", {}, {**GITHUB, "Accept": "application/vnd.github.sha"}, None,
     "'application/vnd.github.sha' is not a media type of actions/get-workflow-run"),
    ("POST", "workflows/b.yml/dispatches", {}, GITHUB, {"ref": "main", "inputs": [1]}, "request body: inputs"),
])
def test_the_check_fails_requests_github_does_not_define(method, path, params, headers, body, expect) -> None:
    with FakeGitHub() as gh, conformance.expect_problems() as found:
        httpx.request(method, f"{gh.url}repos/{gh.repo}/actions/{path}", params=params, json=body,
                      headers={**headers, "Authorization": f"Bearer {gh.token}"})
    assert any(expect in p for p in found), found


def test_the_check_passes_what_github_gives() -> None:
    """Every example answer of the trimmed spec is valid against its own schema once the
    stand-ins' repairs are made (GitHub's own examples miss a few required fields)."""
    op = spec.operation("GET", "/repos/NixOS/nixpkgs/commits/abc/status")
    assert op is not None and op.id == "repos/get-combined-status-for-ref"
    assert spec.operation("GET", "/repos/o/r/contents/a/b/c.nix").params["path"] == "a/b/c.nix"
    assert spec.operation("GET", "/repos/o/r/git/ref/heads/main").params["ref"] == "heads/main"


def test_the_trimmed_spec_holds_exactly_the_operations_regenerate_lists() -> None:
    trimmed = {(m, p) for p, ops in spec.spec()["paths"].items() for m in ops}
    assert trimmed == set(regenerate.OPERATIONS)
    assert spec.spec()["info"]["version"] == "23.0.2" and "@octokit/openapi@23.0.2" in spec.spec()["info"]["x-source"]


INNER = '''
import httpx
from tests.support.fakes_github import FakeGitHub


def test_sends_a_request_github_does_not_define():
    with FakeGitHub() as gh:
        r = httpx.get(f"{gh.url}repos/{gh.repo}/actions/runs/1/jobs", params={"colour": "red"},
                      headers={"Authorization": f"Bearer {gh.token}", "Accept": "application/vnd.github+json"})
    assert r.status_code == 404


def test_sends_nothing():
    assert True
'''


def test_the_check_fails_the_test_and_the_run(tmp_path) -> None:
    """The plugin (what tests/conftest.py takes) fails the test during which an exchange was off
    the spec, fails the run, and says what was checked."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "tests.support.github_conformance", "--rootdir", str(tmp_path), "test_inner.py"],
                          check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout
    assert done.returncode == 1, out
    assert "2 passed, 1 error" in out  # the offending test errs at its teardown; the other is untouched
    assert "ERROR test_inner.py::test_sends_a_request_github_does_not_define" in out
    assert "query parameter 'colour' is not defined by actions/list-jobs-for-workflow-run" in out
    assert "request: no X-GitHub-Api-Version: 2022-11-28 header" in out
    assert "GitHub conformance: 1 exchanges" in out and "2 problems" in out


R, A, B = "acme/build-pytorch", "a" * 40, "b" * 40
_STATUS = shapes.commit_status(R, A, 1, state="success", context="torchbot/builds")


@pytest.mark.parametrize(("schema", "shaped"), [
    ("pull-request", shapes.pull_request(R, 1, title="t", head="bump/main", head_sha=A, base="main", base_sha=B)),
    ("pull-request", shapes.pull_request(R, 2, title="t", head="h", head_sha=A, base="main", base_sha=B,
                                         state="closed", merged_at=shapes.now(), merge_commit_sha=B)),
    ("pull-request-simple", shapes.pull_request_simple(R, 1, title="t", head="h", head_sha=A, base="main",
                                                       base_sha=B)),
    ("pull-request-merge-result", shapes.merge_result(A)),
    ("issue", shapes.issue(R, 3, title="torchbot dashboard", body="- [ ] x", labels=["torchbot"])),
    ("issue-comment", shapes.issue_comment(R, 3, 9, "done")),
    ("status", _STATUS),
    ("combined-commit-status", shapes.combined_status(R, A, [_STATUS])),
    ("git-ref", shapes.git_ref(R, "refs/heads/main", A)),
    ("validation-error", shapes.validation_failed({"resource": "Issue", "field": "title", "code": "missing_field"})),
    ("basic-error", shapes.error(404, "Not Found")),
])
def test_the_shapes_the_stand_ins_give_are_valid_github_objects(schema, shaped) -> None:
    assert conformance._errors(spec.pointer("components", "schemas", schema), shaped) == []


def test_an_issue_is_not_a_pull_request() -> None:
    """GitHub's example issue is a pull request's; an issue built from it must not be one
    (the issues listing tells them apart by ``pull_request``)."""
    assert "pull_request" not in shapes.issue(R, 1, title="t")


def test_fake_nixpkgs_history_keeps_a_file_until_a_commit_changes_it(nix) -> None:
    nix.add_commit("1" * 40, torch="2.9.1", cuda_sets={"cudaPackages_12_9"})
    nix.add_commit("2" * 40)
    nix.add_commit("3" * 40, torch="2.10.0")
    nix.dates["2" * 40] = "2026-01-02T03:04:05Z"
    with _client(nix) as c:
        assert [c.torch_version(r * 40) for r in "123"] == ["2.9.1", "2.9.1", "2.10.0"]
        assert c.cuda_sets("3" * 40) == ["cudaPackages_12_9"]
    got = httpx.get(f"{nix.api_url}repos/NixOS/nixpkgs/commits/{'2' * 40}", headers=GITHUB).json()
    assert got["commit"]["committer"]["date"] == "2026-01-02T03:04:05Z" and got["parents"][0]["sha"] == "1" * 40


INNER_GOOD = '''
import httpx
from tests.support.fakes_github import FakeGitHub


def test_reads_the_repository():
    with FakeGitHub() as gh:
        r = httpx.get(f"{gh.url}repos/{gh.repo}", headers={
            "Authorization": f"Bearer {gh.token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28"})
    assert r.status_code == 200
'''


def test_the_counts_and_problems_of_parallel_workers_are_added_up(tmp_path) -> None:
    """Under pytest-xdist (``make test`` runs ``-n``) each worker checks the exchanges of its own
    tests: the controller's summary and exit status are those of all of them."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    (tmp_path / "test_inner_bad.py").write_text(INNER)
    (tmp_path / "test_inner_good_a.py").write_text(INNER_GOOD)
    (tmp_path / "test_inner_good_b.py").write_text(INNER_GOOD)
    env = {**os.environ, "PYTHONPATH": str(root)}
    # --basetemp: a pytest-xdist controller makes its workers' temporary directories under one of
    # its own; left to pytest it numbers one in /tmp/pytest-of-<user> and, when the run ends,
    # deletes the oldest there, which may be a whole earlier suite's (600 MB): under the suite's
    # load that took this run past its timeout and failed CI.
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.support.github_conformance",
           "-n", "2", "--dist", "loadfile", "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "inner-tmp"), "."]
    done = subprocess.run(cmd, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = done.stdout
    assert done.returncode == 1, out
    assert "4 passed, 1 error" in out, out
    assert "GitHub conformance: 3 exchanges" in out and "over 2 operations; 2 problems" in out, out
    assert "repos/get 2" in out and "actions/list-jobs-for-workflow-run 1" in out, out
    assert "query parameter 'colour' is not defined by actions/list-jobs-for-workflow-run" in out, out
