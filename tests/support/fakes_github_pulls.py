"""Pull requests and commit statuses of the fake GitHub (``FakeGitHub(origin=...)``), backed by
a real bare git repository that stands for the GitHub repository: a pull request's head and
base are branches of it, a merge writes a real merge commit onto the base branch, a status
needs a commit the repository has. Shapes and status codes follow GitHub's REST reference
(OpenAPI ``pull-request``, ``pull-request-simple``, ``status``, ``combined-commit-status``,
``pull-request-merge-result``): required fields are present, unknown input is refused.

- ``POST /repos/{o}/{r}/pulls`` (201): ``head``/``base`` must be branches (422 otherwise); a
  second open pull request for the same head and base is refused 422 ("A pull request already
  exists for o:head."), as GitHub does.
- ``GET /repos/{o}/{r}/pulls`` with ``state`` (open | closed | all), ``head`` (``owner:branch``)
  and ``base`` filters; ``GET``/``PATCH .../pulls/{n}`` (title, body, state, base).
- ``PUT .../pulls/{n}/merge`` (``sha``, ``merge_method`` merge | squash | rebase,
  ``commit_title``, ``commit_message``): 200 ``{"sha", "merged": true, "message"}``; 405 when the
  pull request is closed or its branches conflict; 409 when ``sha`` is not the head's commit
  ("Head branch was modified. Review and try the merge again."). ``merges`` keeps each merge.
- ``POST /repos/{o}/{r}/statuses/{sha}`` (201): ``state`` one of error | failure | pending |
  success, optional ``target_url``, ``description`` (at most 140 characters), ``context``
  (default "default"); 422 for an unknown commit or a bad state. ``GET .../commits/{ref}/statuses``
  (newest first) and ``GET .../commits/{ref}/status`` (combined: the latest per context).
"""

from __future__ import annotations

import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

STATES = ("error", "failure", "pending", "success")
MERGE_METHODS = ("merge", "squash", "rebase")
_ENV = {"GIT_AUTHOR_NAME": "GitHub", "GIT_AUTHOR_EMAIL": "noreply@github.com", "GIT_COMMITTER_NAME": "GitHub",
        "GIT_COMMITTER_EMAIL": "noreply@github.com"}


def _iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PullsApi:
    def __init__(self, repo: str, origin: Path, api_url: str):
        self.repo, self.origin, self.api = repo, Path(origin), api_url.rstrip("/")
        self.owner = repo.split("/", 1)[0]
        self.pulls: dict[int, dict] = {}
        self.statuses: list[dict] = []  # every status posted, oldest first
        self.merges: list[dict] = []  # {"number", "sha", "method"}

    # -- git ------------------------------------------------------------------------------

    def _git(self, *args: str, check: bool = True) -> str | None:
        proc = subprocess.run(["git", "-C", str(self.origin), *args], capture_output=True, text=True,
                              env={**os.environ, **_ENV}, check=False)
        if proc.returncode != 0:
            if check:
                raise RuntimeError(proc.stderr)
            return None
        return proc.stdout.strip()

    def branch_sha(self, branch: str) -> str | None:
        return self._git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", check=False)

    def commit_sha(self, ref: str) -> str | None:
        return self.branch_sha(ref) or self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)

    # -- routing --------------------------------------------------------------------------

    def route(self, method: str, rest: list[str], query: dict, body: dict) -> tuple[int, object, dict] | None:
        """The answer to ``/repos/{repo}/<rest>``, or None when it is not a pulls/statuses path."""
        if rest[:1] == ["pulls"]:
            if len(rest) == 1:
                return self._create(body) if method == "POST" else self._list(query) if method == "GET" else None
            if not rest[1].isdigit() or int(rest[1]) not in self.pulls:
                return 404, {"message": "Not Found"}, {}
            pr = self.pulls[int(rest[1])]
            if len(rest) == 2:
                return (200, self._full(pr), {}) if method == "GET" else self._patch(pr, body) if method == "PATCH" \
                    else None
            if rest[2:] == ["merge"] and method == "PUT":
                return self._merge(pr, body)
            return None
        if rest[:1] == ["statuses"] and len(rest) == 2 and method == "POST":
            return self._post_status(rest[1], body)
        if rest[:1] == ["commits"] and len(rest) == 3 and method == "GET" and rest[2] in ("statuses", "status"):
            sha = self.commit_sha(rest[1])
            if sha is None:
                return 422, {"message": f"No commit found for SHA: {rest[1]}"}, {}
            mine = [s for s in reversed(self.statuses) if s["sha"] == sha]
            if rest[2] == "statuses":
                return 200, [s["status"] for s in mine], {}
            return 200, self._combined(sha, mine), {}
        return None

    # -- pull requests --------------------------------------------------------------------

    def _ref(self, branch: str) -> dict:
        return {"label": f"{self.owner}:{branch}", "ref": branch, "sha": self.branch_sha(branch) or "",
                "user": {"login": self.owner, "id": 1, "type": "Organization"},
                "repo": {"id": 1, "name": self.repo.split("/", 1)[1], "full_name": self.repo}}

    def _simple(self, pr: dict) -> dict:
        n = pr["number"]
        return {"url": f"{self.api}/repos/{self.repo}/pulls/{n}", "id": 9000 + n, "node_id": f"PR_{n}",
                "html_url": f"https://github.com/{self.repo}/pull/{n}", "number": n, "state": pr["state"],
                "locked": False, "title": pr["title"], "body": pr["body"], "draft": pr["draft"],
                "user": {"login": "torchbot", "id": 2, "type": "Bot"}, "labels": [], "assignees": [],
                "requested_reviewers": [], "created_at": pr["created_at"], "updated_at": pr["updated_at"],
                "closed_at": pr["closed_at"], "merged_at": pr["merged_at"],
                "merge_commit_sha": pr["merge_commit_sha"], "head": self._ref(pr["head"]),
                "base": self._ref(pr["base"]), "author_association": "NONE", "auto_merge": None}

    def _full(self, pr: dict) -> dict:
        return {**self._simple(pr), "merged": pr["merged_at"] is not None, "mergeable": True,
                "mergeable_state": "clean", "merged_by": None, "comments": 0, "review_comments": 0,
                "maintainer_can_modify": False, "commits": 1, "additions": 0, "deletions": 0, "changed_files": 0}

    def _create(self, body: dict) -> tuple[int, object, dict]:
        head, base = body.get("head"), body.get("base")
        if not isinstance(head, str) or not isinstance(base, str) or not body.get("title"):
            return 422, {"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "missing_field",
                                                                     "field": "head" if not head else "base"}]}, {}
        head = head.split(":", 1)[-1]
        if self.branch_sha(head) is None or self.branch_sha(base) is None:
            field = "head" if self.branch_sha(head) is None else "base"
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "PullRequest", "field": field, "code": "invalid"}]}, {}
        if any(p["head"] == head and p["base"] == base and p["state"] == "open" for p in self.pulls.values()):
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "PullRequest", "code": "custom",
                                     "message": f"A pull request already exists for {self.owner}:{head}."}]}, {}
        n = len(self.pulls) + 1
        now = _iso()
        self.pulls[n] = {"number": n, "head": head, "base": base, "title": body["title"], "body": body.get("body"),
                         "draft": bool(body.get("draft")), "state": "open", "created_at": now, "updated_at": now,
                         "closed_at": None, "merged_at": None, "merge_commit_sha": None}
        return 201, self._full(self.pulls[n]), {}

    def _list(self, query: dict) -> tuple[int, object, dict]:
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            return 422, {"message": "Validation Failed"}, {}
        out = []
        for pr in sorted(self.pulls.values(), key=lambda p: -p["number"]):
            if state != "all" and pr["state"] != state:
                continue
            if query.get("head") and f"{self.owner}:{pr['head']}" != query["head"]:
                continue
            if query.get("base") and pr["base"] != query["base"]:
                continue
            out.append(self._simple(pr))
        return 200, out, {}

    def _patch(self, pr: dict, body: dict) -> tuple[int, object, dict]:
        unknown = set(body) - {"title", "body", "state", "base", "maintainer_can_modify"}
        if unknown or body.get("state", "open") not in ("open", "closed"):
            return 422, {"message": "Validation Failed"}, {}
        for key in ("title", "body", "base"):
            if key in body:
                pr[key] = body[key]
        if "state" in body and pr["merged_at"] is None:
            pr["state"] = body["state"]
            pr["closed_at"] = _iso() if body["state"] == "closed" else None
        pr["updated_at"] = _iso()
        return 200, self._full(pr), {}

    def _merge(self, pr: dict, body: dict) -> tuple[int, object, dict]:
        method = body.get("merge_method", "merge")
        if method not in MERGE_METHODS:
            return 422, {"message": "Validation Failed"}, {}
        if pr["state"] != "open":
            return 405, {"message": "Pull Request is not mergeable"}, {}
        head, base = self.branch_sha(pr["head"]), self.branch_sha(pr["base"])
        if body.get("sha") and body["sha"] != head:
            return 409, {"message": "Head branch was modified. Review and try the merge again."}, {}
        tree = self._git("merge-tree", "--write-tree", base, head, check=False)
        if tree is None:
            return 405, {"message": "Pull Request is not mergeable"}, {}
        title = body.get("commit_title") or f"Merge pull request #{pr['number']} from {self.owner}/{pr['head']}"
        message = title + ("\n\n" + body["commit_message"] if body.get("commit_message") else "")
        parents = ["-p", base] + (["-p", head] if method == "merge" else [])
        sha = self._git("commit-tree", tree.splitlines()[0], *parents, "-m", message)
        self._git("update-ref", f"refs/heads/{pr['base']}", sha, base)
        now = _iso()
        pr.update(state="closed", merged_at=now, closed_at=now, updated_at=now, merge_commit_sha=sha)
        self.merges.append({"number": pr["number"], "sha": sha, "method": method})
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}, {}

    # -- statuses -------------------------------------------------------------------------

    def _post_status(self, sha: str, body: dict) -> tuple[int, object, dict]:
        if body.get("state") not in STATES:
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Status", "field": "state", "code": "invalid"}]}, {}
        if len(body.get("description") or "") > 140:
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Status", "field": "description", "code": "custom"}]}, {}
        if self._git("cat-file", "-e", f"{sha}^{{commit}}", check=False) is None or len(sha) != 40:
            return 422, {"message": f"No commit found for SHA: {sha}"}, {}
        n = len(self.statuses) + 1
        now = _iso()
        status = {"url": f"{self.api}/repos/{self.repo}/statuses/{sha}", "avatar_url": None, "id": n,
                  "node_id": f"SC_{n}", "state": body["state"], "description": body.get("description"),
                  "target_url": body.get("target_url"), "context": body.get("context") or "default",
                  "created_at": now, "updated_at": now, "creator": {"login": "torchbot", "id": 2, "type": "Bot"}}
        self.statuses.append({"sha": sha, "status": status, "t": time.monotonic()})
        return 201, status, {}

    def _combined(self, sha: str, newest_first: list[dict]) -> dict:
        latest: dict[str, dict] = {}
        for s in newest_first:
            latest.setdefault(s["status"]["context"], s["status"])
        states = {s["state"] for s in latest.values()}
        state = ("failure" if states & {"error", "failure"} else "pending" if "pending" in states or not states
                 else "success")
        return {"state": state, "sha": sha, "total_count": len(latest), "statuses": list(latest.values()),
                "repository": {"id": 1, "full_name": self.repo},
                "commit_url": f"{self.api}/repos/{self.repo}/commits/{sha}",
                "url": f"{self.api}/repos/{self.repo}/commits/{sha}/status"}

    def of(self, sha: str, context: str = "torchbot/builds") -> list[dict]:
        """The statuses posted on ``sha`` in ``context``, oldest first (for tests)."""
        return [s["status"] for s in self.statuses if s["sha"] == sha and s["status"]["context"] == context]
