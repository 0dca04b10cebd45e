"""GitHub's objects as GitHub gives them, for the stand-ins: each starts from the example of
its operation in GitHub's OpenAPI description (``github_spec.example``: every required field
present, GitHub's own values) and gets the facts a test drives set on it (numbers, titles,
refs, shas, states, URLs). Use these rather than hand-written dicts so a stand-in stays
valid for the conformance check (``github_conformance``) whatever torchbot starts to read.

Builders: :func:`pull_request` (create/get/update), :func:`pull_request_simple` (the listing),
:func:`merge_result`, :func:`issue`, :func:`issue_comment`, :func:`commit_status`,
:func:`combined_status`, :func:`git_ref`, :func:`repository`, :func:`error`,
:func:`validation_failed`.
Each is checked against the spec by tests/release/adapters/test_github_spec.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.support import github_spec as spec

API = "https://api.github.com"
WEB = "https://github.com"
DOCS = "https://docs.github.com/rest"
PULLS = "/repos/{owner}/{repo}/pulls"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def error(status: int, message: str) -> dict:
    """GitHub's error body (``basic-error``): 401, 403, 404, 409, 410, ..."""
    return {"message": message, "documentation_url": DOCS, "status": str(status)}


def validation_failed(*errors: dict, message: str = "Validation Failed") -> dict:
    """GitHub's 422 body (``validation-error``); ``errors`` like ``{"resource": "PullRequest",
    "field": "head", "code": "invalid"}`` (``code`` is required)."""
    return {"message": message, "errors": list(errors), "documentation_url": DOCS, "status": "422"}


def user(login: str) -> dict:
    """A user object (``simple-user``)."""
    return _user(login)


def label(name: str, i: int = 1) -> dict:
    """A label object (as issues and pull requests carry them)."""
    example = spec.example("post", "/repos/{owner}/{repo}/issues", 201)["labels"]
    return {**(example[0] if example else {}), "name": name, "id": i}


def _user(login: str) -> dict:
    user = spec.example("post", PULLS, 201)["user"]
    user.update({"login": login, "url": f"{API}/users/{login}", "html_url": f"{WEB}/{login}",
                 "type": "Bot" if login.endswith("[bot]") else "User"})
    return user


def _branch(repo: str, ref: str, sha: str, side: dict) -> dict:
    owner, name = repo.split("/", 1)
    side.update({"label": f"{owner}:{ref}", "ref": ref, "sha": sha})
    side["user"]["login"] = owner
    side["repo"].update({"name": name, "full_name": repo, "html_url": f"{WEB}/{repo}", "url": f"{API}/repos/{repo}"})
    side["repo"]["owner"]["login"] = owner
    return side


def _pull(shaped: dict, repo: str, number: int, title: str, body: str | None, head: str, head_sha: str, base: str,
          base_sha: str, state: str, draft: bool, merged_at: str | None, merge_commit_sha: str | None,
          user: str) -> dict:
    api, web = f"{API}/repos/{repo}", f"{WEB}/{repo}"
    stamp = now()
    shaped.update({
        "url": f"{api}/pulls/{number}", "id": 100000 + number, "node_id": f"PR_{number}",
        "html_url": f"{web}/pull/{number}", "diff_url": f"{web}/pull/{number}.diff",
        "patch_url": f"{web}/pull/{number}.patch", "issue_url": f"{api}/issues/{number}",
        "commits_url": f"{api}/pulls/{number}/commits", "review_comments_url": f"{api}/pulls/{number}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}", "comments_url": f"{api}/issues/{number}/comments",
        "statuses_url": f"{api}/statuses/{head_sha}", "number": number, "state": state, "locked": False,
        "title": title, "body": body, "draft": draft, "user": _user(user), "labels": [], "milestone": None,
        "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
        "created_at": stamp, "updated_at": stamp, "closed_at": merged_at if state == "closed" else None,
        "merged_at": merged_at, "merge_commit_sha": merge_commit_sha, "active_lock_reason": None,
        "author_association": "NONE", "auto_merge": None,
    })
    _branch(repo, head, head_sha, shaped["head"])
    _branch(repo, base, base_sha, shaped["base"])
    links = {"self": f"{api}/pulls/{number}", "html": f"{web}/pull/{number}", "issue": f"{api}/issues/{number}",
             "comments": f"{api}/issues/{number}/comments", "review_comments": f"{api}/pulls/{number}/comments",
             "review_comment": f"{api}/pulls/comments{{/number}}", "commits": f"{api}/pulls/{number}/commits",
             "statuses": f"{api}/statuses/{head_sha}"}
    shaped["_links"] = {k: {"href": v} for k, v in links.items()}
    return shaped


def pull_request(repo: str, number: int, *, title: str, head: str, head_sha: str, base: str, base_sha: str,
                 body: str | None = None, state: str = "open", draft: bool = False, merged_at: str | None = None,
                 merge_commit_sha: str | None = None, user: str = "torchbot[bot]") -> dict:
    """A pull request as create / get / update answer it (``pull-request``)."""
    shaped = _pull(spec.example("post", PULLS, 201), repo, number, title, body, head, head_sha, base, base_sha,
                   state, draft, merged_at, merge_commit_sha, user)
    shaped.update({"merged": merged_at is not None, "mergeable": None if merged_at else True,
                   "mergeable_state": "unknown" if merged_at else "clean", "merged_by": None, "comments": 0,
                   "review_comments": 0, "commits": 1, "additions": 1, "deletions": 1, "changed_files": 1,
                   "maintainer_can_modify": False, "rebaseable": None})
    return shaped


def pull_request_simple(repo: str, number: int, *, title: str, head: str, head_sha: str, base: str, base_sha: str,
                        body: str | None = None, state: str = "open", draft: bool = False,
                        merged_at: str | None = None, merge_commit_sha: str | None = None,
                        user: str = "torchbot[bot]") -> dict:
    """A pull request as the listing gives it (``pull-request-simple``)."""
    return _pull(spec.example("get", PULLS)[0], repo, number, title, body, head, head_sha, base, base_sha, state,
                 draft, merged_at, merge_commit_sha, user)


def merge_result(sha: str, message: str = "Pull Request successfully merged") -> dict:
    shaped = spec.example("put", PULLS + "/{pull_number}/merge", name="response-if-merge-was-successful")
    shaped.update({"sha": sha, "merged": True, "message": message})
    return shaped


def issue(repo: str, number: int, *, title: str, body: str | None = None, state: str = "open",
          labels: list[str] = (), user: str = "torchbot[bot]") -> dict:
    """An issue (``issue``): not a pull request (GitHub's example is one: ``pull_request`` dropped)."""
    shaped = spec.example("post", "/repos/{owner}/{repo}/issues", 201)
    api, stamp = f"{API}/repos/{repo}/issues/{number}", now()
    shaped.pop("pull_request", None)
    label = shaped["labels"][0] if shaped["labels"] else None
    shaped.update({
        "id": 200000 + number, "node_id": f"I_{number}", "url": api, "repository_url": f"{API}/repos/{repo}",
        "labels_url": api + "/labels{/name}", "comments_url": api + "/comments", "events_url": api + "/events",
        "html_url": f"{WEB}/{repo}/issues/{number}", "number": number, "state": state,
        "state_reason": "completed" if state == "closed" else None, "title": title, "body": body,
        "user": _user(user), "assignee": None, "assignees": [], "milestone": None, "locked": False,
        "active_lock_reason": None, "comments": 0, "created_at": stamp, "updated_at": stamp,
        "closed_at": stamp if state == "closed" else None, "closed_by": None, "author_association": "NONE",
        "labels": [{**label, "name": n, "id": i + 1} for i, n in enumerate(labels)] if label else [],
    })
    return shaped


def issue_comment(repo: str, issue_number: int, comment_id: int, body: str, user: str = "torchbot[bot]") -> dict:
    shaped = spec.example("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments", 201)
    stamp = now()
    shaped.update({"id": comment_id, "node_id": f"IC_{comment_id}", "body": body, "user": _user(user),
                   "url": f"{API}/repos/{repo}/issues/comments/{comment_id}",
                   "html_url": f"{WEB}/{repo}/issues/{issue_number}#issuecomment-{comment_id}",
                   "issue_url": f"{API}/repos/{repo}/issues/{issue_number}", "created_at": stamp,
                   "updated_at": stamp, "author_association": "NONE"})
    return shaped


def commit_status(repo: str, sha: str, status_id: int, *, state: str, context: str = "default",
                  description: str | None = None, target_url: str | None = None) -> dict:
    """A commit status as ``POST /statuses/{sha}`` answers it (``status``)."""
    shaped = spec.example("post", "/repos/{owner}/{repo}/statuses/{sha}", 201)
    stamp = now()
    shaped.update({"url": f"{API}/repos/{repo}/statuses/{sha}", "id": status_id, "node_id": f"SC_{status_id}",
                   "state": state, "context": context, "description": description, "target_url": target_url,
                   "created_at": stamp, "updated_at": stamp, "creator": _user("torchbot[bot]")})
    return shaped


def combined_status(repo: str, sha: str, statuses: list[dict]) -> dict:
    """``GET /commits/{ref}/status``: the latest status per context (``statuses`` newest first,
    as :func:`commit_status` made them) and their combined state."""
    shaped = spec.example("get", "/repos/{owner}/{repo}/commits/{ref}/status")
    latest: dict[str, dict] = {}
    for s in statuses:
        latest.setdefault(s["context"], s)
    states = {s["state"] for s in latest.values()}
    state = "failure" if states & {"error", "failure"} else "pending" if "pending" in states or not states \
        else "success"
    item = shaped["statuses"][0]
    shaped.update({"state": state, "sha": sha, "total_count": len(latest),
                   "statuses": [{**item, **{k: s[k] for k in item if k in s}} for s in latest.values()],
                   "commit_url": f"{API}/repos/{repo}/commits/{sha}",
                   "url": f"{API}/repos/{repo}/commits/{sha}/status"})
    shaped["repository"].update({"name": repo.split("/", 1)[1], "full_name": repo})
    return shaped


def git_ref(repo: str, ref: str, sha: str) -> dict:
    """A git reference (``git-ref``): ``ref`` like ``refs/heads/main``."""
    shaped = spec.example("get", "/repos/{owner}/{repo}/git/ref/{ref}")
    shaped.update({"ref": ref, "node_id": f"REF_{sha[:8]}", "url": f"{API}/repos/{repo}/git/{ref}"})
    shaped["object"].update({"sha": sha, "type": "commit", "url": f"{API}/repos/{repo}/git/commits/{sha}"})
    return shaped


def repository(repo: str, private: bool = True) -> dict:
    """A repository as ``GET /repos/{owner}/{repo}`` gives it (``full-repository``)."""
    shaped = spec.example("get", "/repos/{owner}/{repo}")
    for optional in ("source", "parent", "template_repository"):  # a fork's: the example's lack 'language'
        shaped.pop(optional, None)
    shaped["language"] = "Nix"
    owner, name = repo.split("/", 1)
    shaped.update({"name": name, "full_name": repo, "private": private, "html_url": f"{WEB}/{repo}",
                   "url": f"{API}/repos/{repo}"})
    shaped["owner"]["login"] = owner
    return shaped
