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
- ``PUT .../pulls/{n}/merge`` (needs ``git_dir``; ``sha``, ``merge_method`` merge | squash |
  rebase, ``commit_title``, ``commit_message``): writes a real merge (or squash) commit onto the
  base branch and answers 200 ``{"sha", "merged": true, "message"}``; 405 when the pull request is
  closed or its branches conflict; 409 when ``sha`` is not the head's commit ("Head branch was
  modified. Review and try the merge again."). ``merges`` keeps each merge.

Objects carry the pull-request schema's required fields (``url``, ``id``, ``node_id``,
``html_url``, ``number``, ``state``, ``locked``, ``title``, ``user``, ``body``, ``labels``, ``head``
and ``base`` with ``label``/``ref``/``sha``/``repo``/``user``, ``created_at``, ``updated_at``, ...).
``prs`` holds them by number; ``edits`` every PATCH received. What people do: ``close(n, by)`` (closed
unmerged), ``label(n, name)``, ``refuse_merge(n)`` (a protected branch's 405).
"""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime

from tests.support import github_shapes as shapes

ACCOUNT = {"login": "torchbot", "id": 1, "node_id": "U_1", "type": "Bot", "site_admin": False}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Pulls:
    def __init__(self, fake, git_dir=None):
        self.fake = fake
        self.git_dir = git_dir
        self.prs: dict[int, dict] = {}
        self.edits: list[tuple[int, dict]] = []
        self.merges: list[dict] = []  # {"number", "sha", "method"}
        self.closed_by: dict[int, str] = {}  # number -> who closed it (``close``)
        self.refuse: dict[int, tuple[int, str]] = {}  # number -> (status, message) its merge answers (``refuse_merge``)

    # -- what people do ------------------------------------------------------------------------
    def close(self, number: int, by: str = "maintainer") -> dict:
        """A person closes pull request ``number`` without merging it."""
        pr = self.prs[number]
        pr.update(state="closed", closed_at=_now(), updated_at=_now())
        self.closed_by[number] = by
        return pr

    def label(self, number: int, name: str) -> None:
        """A person puts label ``name`` on pull request ``number``."""
        pr = self.prs[number]
        pr["labels"] = [*pr["labels"], shapes.label(name, len(pr["labels"]) + 1)]

    def refuse_merge(self, number: int, status: int = 405,
                     message: str = "At least 1 approving review is required by reviewers with write access.") -> None:
        """The merge of ``number`` is refused as a protected branch refuses it (a review missing)."""
        self.refuse[number] = (status, message)

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
                return 200, self._fresh(pr), {}
            if method == "PATCH":
                return self._edit(pr, body)
        if len(rest) == 2 and rest[0].isdigit() and int(rest[0]) in self.prs and rest[1] == "merge" and method == "PUT":
            return self._merge(self.prs[int(rest[0])], body)
        return 404, shapes.error(404, "Not Found"), {}

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
        pr = shapes.pull_request(self.fake.repo, n, title=body["title"], body=body.get("body"), head=head,
                                 head_sha=head_sha, base=base, base_sha=base_sha,
                                 draft=bool(body.get("draft", False)))
        pr["html_url"] = f"https://github.test/{self.fake.repo}/pull/{n}"
        self.prs[n] = pr
        return 201, pr, {"Location": pr["url"]}

    def _fresh(self, pr: dict) -> dict:
        """An open PR's ``head.sha`` is its branch's commit now (GitHub follows pushes to the head)."""
        if pr["state"] == "open" and self.git_dir is not None:
            sha = self._sha(pr["head"]["ref"])
            if sha:
                pr["head"]["sha"] = sha
        return pr

    def _list(self, req, query: dict) -> tuple[int, object, dict]:
        for pr in self.prs.values():
            self._fresh(pr)
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            return 422, shapes.validation_failed({"field": "state", "code": "invalid"}), {}
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
            pr["base"].update({"ref": body["base"], "sha": self._sha(body["base"]),
                               "label": f"{self.owner}:{body['base']}"})
        sha = self._sha(pr["head"]["ref"])
        if sha:
            pr["head"]["sha"] = sha
        pr["updated_at"] = _now()
        if pr["state"] == "closed" and not pr["closed_at"]:
            pr["closed_at"] = pr["updated_at"]
        return 200, pr, {}

    def _git(self, *args: str) -> str | None:
        env = {**os.environ, "GIT_AUTHOR_NAME": "GitHub", "GIT_AUTHOR_EMAIL": "noreply@github.com",
               "GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com"}
        r = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, text=True, check=False,
                           env=env)
        return r.stdout.strip() if r.returncode == 0 else None

    def _merge(self, pr: dict, body: dict) -> tuple[int, object, dict]:
        method = body.get("merge_method", "merge")
        if method not in ("merge", "squash", "rebase"):
            return self._invalid("merge_method")
        if pr["state"] != "open" or self.git_dir is None:
            return 405, shapes.error(405, "Pull Request is not mergeable"), {}
        if pr["number"] in self.refuse:
            status, message = self.refuse[pr["number"]]
            return status, shapes.error(status, message), {}
        head, base = self._sha(pr["head"]["ref"]), self._sha(pr["base"]["ref"])
        if body.get("sha") and body["sha"] != head:
            return 409, shapes.error(409, "Head branch was modified. Review and try the merge again."), {}
        tree = self._git("merge-tree", "--write-tree", base, head)
        if tree is None:
            return 405, shapes.error(405, "Pull Request is not mergeable"), {}
        title = body.get("commit_title") or f"Merge pull request #{pr['number']} from {self.owner}/{pr['head']['ref']}"
        message = title + ("\n\n" + body["commit_message"] if body.get("commit_message") else "")
        parents = ["-p", base] + (["-p", head] if method == "merge" else [])
        sha = self._git("commit-tree", tree.splitlines()[0], *parents, "-m", message)
        if sha is None or self._git("update-ref", f"refs/heads/{pr['base']['ref']}", sha, base) is None:
            return 405, shapes.error(405, "Pull Request is not mergeable"), {}
        now = _now()
        pr.update(state="closed", merged_at=now, closed_at=now, updated_at=now, merge_commit_sha=sha)
        self.merges.append({"number": pr["number"], "sha": sha, "method": method})
        return 200, shapes.merge_result(sha), {}
