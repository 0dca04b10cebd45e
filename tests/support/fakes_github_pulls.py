"""Pull requests for :class:`tests.support.fakes_github.FakeGitHub`, as strict as GitHub's REST API
(``/repos/{owner}/{repo}/pulls``):

- ``POST .../pulls`` needs ``title``, ``head`` and ``base`` (422 otherwise); ``head`` is ``branch``
  or ``owner:branch``. With ``git_dir`` (the bare origin the bumps push to) the head and base
  branches must exist there (422 "head/base invalid"), and the PR's ``head.sha`` is read from it.
  A second open PR for the same head and base answers 422 "A pull request already exists for
  owner:branch.", as GitHub does.
- ``GET .../pulls`` filters ``state`` (open by default; closed; all), ``head`` (``owner:branch``) and
  ``base``, newest first, paged: ``per_page`` defaults to 30 and is capped at 100, ``Link`` headers
  carry next/last/prev/first.
- ``GET .../pulls/{n}``; ``PATCH .../pulls/{n}`` edits ``title``, ``body``, ``state``, ``base``
  (422 on another field's bad value), and re-reads ``head.sha`` from ``git_dir``.

Objects carry the pull-request schema's required fields (``url``, ``id``, ``node_id``,
``html_url``, ``number``, ``state``, ``locked``, ``title``, ``user``, ``body``, ``labels``, ``head``
and ``base`` with ``label``/``ref``/``sha``/``repo``/``user``, ``created_at``, ``updated_at``, ...).
``prs`` holds them by number; ``edits`` every PATCH received.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

ACCOUNT = {"login": "torchbot", "id": 1, "node_id": "U_1", "type": "Bot", "site_admin": False}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Pulls:
    def __init__(self, fake, git_dir=None):
        self.fake = fake
        self.git_dir = git_dir
        self.prs: dict[int, dict] = {}
        self.edits: list[tuple[int, dict]] = []

    @property
    def owner(self) -> str:
        return self.fake.repo.split("/")[0]

    def _sha(self, branch: str) -> str | None:
        if self.git_dir is None:
            return "0" * 40
        r = subprocess.run(["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "--quiet",
                            f"refs/heads/{branch}^{{commit}}"], capture_output=True, text=True, check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def _ref(self, branch: str, sha: str) -> dict:
        repo = {"id": 2, "node_id": "R_2", "name": self.fake.repo.split("/")[1], "full_name": self.fake.repo,
                "private": False, "owner": ACCOUNT, "html_url": f"https://github.test/{self.fake.repo}"}
        return {"label": f"{self.owner}:{branch}", "ref": branch, "sha": sha, "user": ACCOUNT, "repo": repo}

    def route(self, req, method: str, rest: list[str], query: dict, body: dict) -> tuple[int, object, dict]:
        if not rest and method == "POST":
            return self._create(body)
        if not rest and method == "GET":
            return self._list(req, query)
        if len(rest) == 1 and rest[0].isdigit() and int(rest[0]) in self.prs:
            pr = self.prs[int(rest[0])]
            if method == "GET":
                return 200, pr, {}
            if method == "PATCH":
                return self._edit(pr, body)
        return 404, {"message": "Not Found"}, {}

    def _invalid(self, field: str, code: str = "invalid", message: str | None = None):
        err = {"resource": "PullRequest", "field": field, "code": code}
        if message:
            err = {"resource": "PullRequest", "code": "custom", "message": message}
        return 422, {"message": "Validation Failed", "errors": [err],
                     "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}, {}

    def _create(self, body: dict) -> tuple[int, object, dict]:
        for field in ("head", "base"):
            if not isinstance(body.get(field), str) or not body[field]:
                return self._invalid(field, "missing_field")
        if not isinstance(body.get("title"), str) or not body["title"].strip():
            return self._invalid("title", "missing_field")
        head = body["head"].split(":", 1)[-1]
        base = body["base"]
        head_sha, base_sha = self._sha(head), self._sha(base)
        if head_sha is None:
            return self._invalid("head")
        if base_sha is None:
            return self._invalid("base")
        for pr in self.prs.values():
            if pr["state"] == "open" and pr["head"]["ref"] == head and pr["base"]["ref"] == base:
                return self._invalid("head", message=f"A pull request already exists for {self.owner}:{head}.")
        n = max(self.prs, default=0) + 1
        api = f"{self.fake.url}repos/{self.fake.repo}"
        now = _now()
        pr = {
            "url": f"{api}/pulls/{n}", "id": 1000 + n, "node_id": f"PR_{n}",
            "html_url": f"https://github.test/{self.fake.repo}/pull/{n}",
            "diff_url": f"https://github.test/{self.fake.repo}/pull/{n}.diff",
            "patch_url": f"https://github.test/{self.fake.repo}/pull/{n}.patch",
            "issue_url": f"{api}/issues/{n}", "commits_url": f"{api}/pulls/{n}/commits",
            "review_comments_url": f"{api}/pulls/{n}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}", "comments_url": f"{api}/issues/{n}/comments",
            "statuses_url": f"{api}/statuses/{head_sha}",
            "number": n, "state": "open", "locked": False, "title": body["title"], "user": ACCOUNT,
            "body": body.get("body"), "labels": [], "milestone": None, "active_lock_reason": None,
            "created_at": now, "updated_at": now, "closed_at": None, "merged_at": None, "merge_commit_sha": None,
            "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": self._ref(head, head_sha), "base": self._ref(base, base_sha),
            "_links": {"self": {"href": f"{api}/pulls/{n}"}, "html": {"href": f"https://github.test/pull/{n}"}},
            "author_association": "NONE", "auto_merge": None, "draft": bool(body.get("draft", False)),
        }
        self.prs[n] = pr
        return 201, pr, {"Location": pr["url"]}

    def _list(self, req, query: dict) -> tuple[int, object, dict]:
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            return 422, {"message": "Validation Failed", "errors": [{"field": "state", "code": "invalid"}]}, {}
        rows = [p for p in sorted(self.prs.values(), key=lambda p: -p["number"])
                if state == "all" or p["state"] == state]
        if query.get("head"):
            owner, _, ref = query["head"].partition(":")
            rows = [p for p in rows if ref and owner == self.owner and p["head"]["ref"] == ref]
        if query.get("base"):
            rows = [p for p in rows if p["base"]["ref"] == query["base"]]
        window, links = self.fake._page(req, f"/repos/{self.fake.repo}/pulls", query, len(rows))
        return 200, rows[window], links

    def _edit(self, pr: dict, body: dict) -> tuple[int, object, dict]:
        if "state" in body and body["state"] not in ("open", "closed"):
            return self._invalid("state")
        if "base" in body and self._sha(body["base"]) is None:
            return self._invalid("base")
        self.edits.append((pr["number"], dict(body)))
        for field in ("title", "body", "state"):
            if field in body:
                pr[field] = body[field]
        if "base" in body:
            pr["base"] = self._ref(body["base"], self._sha(body["base"]))
        sha = self._sha(pr["head"]["ref"])
        if sha:
            pr["head"]["sha"] = sha
        pr["updated_at"] = _now()
        if pr["state"] == "closed" and not pr["closed_at"]:
            pr["closed_at"] = pr["updated_at"]
        return 200, pr, {}
