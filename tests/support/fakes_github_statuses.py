"""Commit statuses for :class:`tests.support.fakes_github.FakeGitHub`, as GitHub's REST API serves
them (OpenAPI ``status`` and ``combined-commit-status``):

- ``POST /repos/{o}/{r}/statuses/{sha}`` (201): ``state`` one of error | failure | pending |
  success (422 otherwise), optional ``target_url``, ``description`` (at most 140 characters,
  422 beyond), ``context`` (default "default"). With ``git_dir`` (the bare origin) the commit must
  exist there (422 "No commit found for SHA: …").
- ``GET .../commits/{ref}/statuses`` (newest first) and ``GET .../commits/{ref}/status`` (the
  combined state: the latest status per context).

``posted`` keeps every status, oldest first; ``of(sha, context)`` those of one commit.
"""

from __future__ import annotations

import subprocess

from tests.support import github_shapes as shapes

STATES = ("error", "failure", "pending", "success")
CREATOR = {"login": "torchbot", "id": 1, "node_id": "U_1", "type": "Bot", "site_admin": False}


class Statuses:
    def __init__(self, fake, git_dir=None):
        self.fake, self.git_dir = fake, git_dir
        self.posted: list[dict] = []  # {"sha", "status"}

    def _commit(self, ref: str) -> str | None:
        if self.git_dir is None:
            return ref if len(ref) == 40 else None
        r = subprocess.run(["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "--quiet",
                            f"{ref}^{{commit}}"], capture_output=True, text=True, check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def route(self, method: str, rest: list[str], body: dict) -> tuple[int, object, dict] | None:
        """The answer to ``/repos/{repo}/<rest>``, or None when it is not a statuses path."""
        if rest[:1] == ["statuses"] and len(rest) == 2 and method == "POST":
            return self._post(rest[1], body)
        if rest[:1] == ["commits"] and len(rest) == 3 and rest[2] in ("statuses", "status") and method == "GET":
            sha = self._commit(rest[1])
            if sha is None:
                return 422, shapes.validation_failed(message=f"No commit found for SHA: {rest[1]}"), {}
            mine = [p["status"] for p in reversed(self.posted) if p["sha"] == sha]
            return 200, (mine if rest[2] == "statuses" else self._combined(sha, mine)), {}
        return None

    def _post(self, sha: str, body: dict) -> tuple[int, object, dict]:
        def invalid(field: str):
            return 422, shapes.validation_failed({"resource": "Status", "field": field, "code": "invalid"}), {}

        if body.get("state") not in STATES:
            return invalid("state")
        if len(body.get("description") or "") > 140:
            return invalid("description")
        if len(sha) != 40 or self._commit(sha) != sha:
            return 422, shapes.validation_failed(message=f"No commit found for SHA: {sha}"), {}
        n = len(self.posted) + 1
        status = shapes.commit_status(self.fake.repo, sha, n, state=body["state"],
                                      context=body.get("context") or "default",
                                      description=body.get("description"), target_url=body.get("target_url"))
        self.posted.append({"sha": sha, "status": status})
        return 201, status, {"Location": status["url"]}

    def _combined(self, sha: str, newest_first: list[dict]) -> dict:
        return shapes.combined_status(self.fake.repo, sha, newest_first)

    def of(self, sha: str, context: str = "torchbot/builds") -> list[dict]:
        """The statuses posted on ``sha`` in ``context``, oldest first (for tests)."""
        return [p["status"] for p in self.posted if p["sha"] == sha and p["status"]["context"] == context]
