"""The GitHub adapter (REST over httpx): pull requests on the managed repository, and the
few GitHub Actions endpoints the github build backend uses (dispatch, runs, jobs), and the
commit statuses and merges that report builds back to a bump pull request.

Every call goes through the shared retry policy (``release.adapters.http``: backoff with
jitter, ``Retry-After`` and ``x-ratelimit-reset`` honoured). Lists are read whole: 100 per
page (GitHub's maximum), following the ``Link: rel="next"`` header until there is none.
``Actions.requests`` counts the requests sent and ``Actions.rate`` holds the last rate-limit
headers, so the follower can count requests per poll and pace itself.

May import: config.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import httpx

from config.errors import ExternalError, UsageError
from config.settings import Settings
from release.adapters.http import HttpClient, RateLimit, Refused, github_headers, github_message

PER_PAGE = 100  # GitHub's maximum page size
WHY = {
    401: "the token is not accepted (revoked, expired or mistyped): set a working TORCHBOT_GITHUB_TOKEN",
    403: "the token may not do this: give TORCHBOT_GITHUB_TOKEN access to TORCHBOT_GITHUB_REPO {repo} "
         "(Actions: read and write)",
    404: "GitHub shows the token no repository {repo}: check TORCHBOT_GITHUB_REPO, and that "
         "TORCHBOT_GITHUB_TOKEN can see it",
}


class AccessRefused(Refused):
    """GitHub refused the token or does not show it the repository (401, a 403 that is not a rate
    limit, a 404 of the repository): no work on that repository can go on until a setting is
    fixed. The message is one line naming the setting and what GitHub said."""


def _said(resp: httpx.Response) -> str:
    try:
        message = resp.json().get("message")
    except (ValueError, AttributeError):
        message = None
    return f"HTTP {resp.status_code}" + (f" {' '.join(str(message).split())[:200]}" if message else "")
MAX_PAGES = 1000  # a guard against a server whose "next" never ends
WRITE = ("admin", "maintain", "write")  # the collaborator permissions that may act on the repository
EDITS_QUERY = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { issue(number: $number) {
    author { login }
    userContentEdits(last: 100) { nodes { editedAt editor { login } diff } } } } }"""


def own_pull(pr: dict, repo: str, login: str | None) -> bool:
    """Whether ``pr`` (a pull request object as GitHub lists it) is torchbot's own: its head branch
    is in ``repo`` itself (not a fork) and ``login`` (torchbot's account) opened it. The one rule
    for "a bump pull request": a fork's pull request, whatever its branch is called, is never
    adopted, rebased, updated or merged."""
    if not login or not isinstance(pr, dict):
        return False
    head = pr.get("head") if isinstance(pr.get("head"), dict) else {}
    head_repo = head.get("repo") if isinstance(head.get("repo"), dict) else {}
    author = pr.get("user") if isinstance(pr.get("user"), dict) else {}
    return (str(head_repo.get("full_name") or "").lower() == repo.lower()
            and str(author.get("login") or "").lower() == login.lower())


class GitHub:
    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.settings = settings
        self.http = HttpClient(settings, headers=github_headers(settings), client=client)

    def close(self) -> None:
        self.http.close()

    def login(self) -> str:
        """The login of the token's account (TORCHBOT_GITHUB_LOGIN, else GET /user, asked once):
        torchbot's own identity on GitHub, the creator of its dashboard issues and the author of its
        pull requests."""
        if getattr(self, "_login", None) is None and getattr(self.settings, "github_login", None):
            self._login = self.settings.github_login  # a GitHub App's bot: /user is not for installation tokens
        if getattr(self, "_login", None) is None:
            me = self._call("GET", "user", "read the token's own account (GET /user; a GitHub App installation "
                                           "token cannot: set TORCHBOT_GITHUB_LOGIN to <app-slug>[bot])")
            login = me.get("login") if isinstance(me, dict) else None
            if not isinstance(login, str) or not login:
                raise ExternalError("GitHub answered GET /user without a login.")
            self._login = login
        return self._login

    def permission(self, repo: str, user: str) -> str:
        """``user``'s permission on ``repo`` (admin, maintain, write, triage, read or none):
        GET /repos/{repo}/collaborators/{user}/permission; "none" when GitHub knows no such
        collaborator (404)."""
        url = f"{self.settings.github_api_url}repos/{repo}/collaborators/{quote(user, safe='')}/permission"
        resp = self.http.request("GET", url, failure=f"Could not read the permission of {user} on {repo}")
        if resp.status_code == 404:
            return "none"
        if resp.status_code != 200:
            raise ExternalError(f"GitHub refused to say the permission of {user} on {repo} (HTTP {resp.status_code}).")
        try:
            data = resp.json()
        except ValueError:
            raise ExternalError("GitHub answered the permission with garbage.") from None
        role = data.get("role_name") if isinstance(data, dict) else None
        level = data.get("permission") if isinstance(data, dict) else None
        return str(role if role in WRITE else level or "none")

    def issue_edits(self, repo: str, number: int) -> list[dict]:
        """The edit history of issue ``number`` (GraphQL ``userContentEdits``), oldest first:
        ``[{"editor": login or None, "at": ISO time, "body": the body that edit left or None}]``;
        [] for an issue never edited. ExternalError when GitHub does not say."""
        owner, _, name = repo.partition("/")
        api = self.settings.github_api_url
        url = api[: -len("v3/")] + "graphql" if api.endswith("/api/v3/") else api + "graphql"  # GHES: /api/graphql
        resp = self.http.request("POST", url, json={"query": EDITS_QUERY, "variables": {
            "owner": owner, "name": name, "number": number}}, failure=f"Could not read the history of {repo}#{number}")
        try:
            data = resp.json() if resp.status_code == 200 else None
            issue = data["data"]["repository"]["issue"]
            nodes = issue["userContentEdits"]["nodes"]
        except (ValueError, KeyError, TypeError):
            raise ExternalError(f"GitHub did not give the edit history of {repo}#{number} "
                                f"(HTTP {resp.status_code}).") from None
        if not isinstance(nodes, list):
            raise ExternalError(f"GitHub did not give the edit history of {repo}#{number}.")
        out = []
        for n in reversed(nodes):  # GitHub lists the newest edit first
            if not isinstance(n, dict):
                continue
            editor = n.get("editor") if isinstance(n.get("editor"), dict) else {}
            body = n.get("diff")
            out.append({"editor": editor.get("login") if isinstance(editor.get("login"), str) else None,
                        "at": str(n.get("editedAt") or ""), "body": body if isinstance(body, str) else None})
        return sorted(out, key=lambda e: e["at"])  # stable: same-second edits keep GitHub's order

    def open_pr(self, *, head: str, base: str, title: str, body: str, repo: str | None = None) -> dict:
        """POST /repos/{repo}/pulls; returns {"number", "url"}."""
        repo = repo or self.settings.github_repo
        url = f"{self.settings.github_api_url}repos/{repo}/pulls"
        payload = {"title": title, "head": head, "base": base, "body": body}
        resp = self.http.request("POST", url, json=payload,
                                 failure=f"Could not open the pull request {head} -> {base}")
        if resp.status_code in WHY:  # the token or the repository: one line naming the setting
            raise AccessRefused(f"GitHub refused the pull request {head} -> {base} ({_said(resp)}): "
                                + WHY[resp.status_code].format(repo=repo) + ".", resp.status_code)
        if resp.status_code not in (200, 201):
            raise ExternalError(f"GitHub refused the pull request {head} -> {base} (HTTP {resp.status_code}).")
        try:
            data = resp.json()
            return {"number": data.get("number"), "url": data.get("html_url") or data.get("url")}
        except (ValueError, AttributeError):
            raise ExternalError("GitHub answered the pull request with garbage.") from None


    # -- issues and pull requests (the dashboard) ----------------------------------------------
    def _call(self, method: str, path: str, what: str, ok=(200,), **kw):
        url = f"{self.settings.github_api_url}{path}"
        resp = self.http.request(method, url, failure=f"Could not {what}", **kw)
        if resp.status_code not in ok:
            raise ExternalError(f"GitHub refused to {what} (HTTP {resp.status_code}).")
        try:
            return resp.json()
        except ValueError:
            raise ExternalError(f"GitHub answered {what} with garbage.") from None

    def pulls(self, repo: str, state: str = "open") -> list[dict]:
        """GET /repos/{repo}/pulls (one page of 100, newest first)."""
        data = self._call("GET", f"repos/{repo}/pulls", f"list the pull requests of {repo}",
                          params={"state": state, "per_page": 100})
        return data if isinstance(data, list) else []

    def issues(self, repo: str, *, creator: str | None = None, labels: str | None = None) -> list[dict]:
        """GET /repos/{repo}/issues (open and closed, one page of 100; pull requests left out)."""
        params = {"state": "all", "per_page": 100, **({"creator": creator} if creator else {}),
                  **({"labels": labels} if labels else {})}
        data = self._call("GET", f"repos/{repo}/issues", f"list the issues of {repo}", params=params)
        return [i for i in data if "pull_request" not in i] if isinstance(data, list) else []

    def issue(self, repo: str, number: int) -> dict | None:
        url = f"{self.settings.github_api_url}repos/{repo}/issues/{number}"
        resp = self.http.request("GET", url, failure=f"Could not read issue #{number} of {repo}")
        if resp.status_code in (404, 410):
            return None
        if resp.status_code != 200:
            raise ExternalError(f"GitHub refused to read issue #{number} of {repo} (HTTP {resp.status_code}).")
        return resp.json()

    def create_issue(self, repo: str, title: str, body: str) -> dict:
        return self._call("POST", f"repos/{repo}/issues", f"create an issue in {repo}", ok=(201,),
                          json={"title": title, "body": body})

    def update_issue(self, repo: str, number: int, **fields) -> dict:
        return self._call("PATCH", f"repos/{repo}/issues/{number}", f"edit issue #{number} of {repo}", json=fields)

    def own_pulls(self, repo: str, state: str = "open") -> list[dict]:
        """torchbot's own pull requests of ``repo`` (``own_pull``), one page of 100, newest first."""
        login = self.login()
        return [p for p in self.pulls(repo, state) if own_pull(p, repo, login)]

    def open_pulls(self, *, base: str, repo: str | None = None) -> list[dict]:
        """Every open pull request into ``base`` (see :meth:`pulls_into`)."""
        return self.pulls_into(base=base, repo=repo, state="open")

    def pulls_into(self, *, base: str, repo: str | None = None, state: str = "open") -> list[dict]:
        """torchbot's own pull requests into ``base`` (``own_pull``: never a fork's) in ``state``
        (open, closed, all; GET /repos/{repo}/pulls?state=S&base=B, 100 per page, following
        ``Link: rel="next"``), newest first: ``[{"number", "url", "head", "sha", "title", "state",
        "merged", "closed_at", "labels"}]``."""
        repo = repo or self.settings.github_repo
        url: str | None = f"{self.settings.github_api_url}repos/{repo}/pulls"
        params: dict | None = {"state": state, "base": base, "per_page": PER_PAGE}
        out: list[dict] = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            resp = self.http.request("GET", url, params=params, failure=f"Could not list the pull requests into {base}")
            if resp.status_code >= 400:
                raise ExternalError(f"GitHub refused the list of pull requests into {base} (HTTP {resp.status_code}).")
            try:
                out.extend({"number": p["number"], "url": p.get("html_url"), "head": p["head"]["ref"],
                            "sha": p["head"].get("sha"), "title": p.get("title", ""), "state": p.get("state"),
                            "merged": bool(p.get("merged_at")), "closed_at": p.get("closed_at"),
                            "labels": [str(lb.get("name")) for lb in p.get("labels") or [] if isinstance(lb, dict)]}
                           for p in resp.json() if own_pull(p, repo, self.login()))
            except (ValueError, KeyError, TypeError):
                raise ExternalError("GitHub answered the list of pull requests with garbage.") from None
            url, params = resp.links.get("next", {}).get("url"), None
        return out

    def closed_by(self, repo: str, number: int) -> str:
        """Who closed issue or pull request ``number`` (the issue's ``closed_by``), "" when unknown."""
        try:
            issue = self.issue(repo, number) or {}
        except ExternalError:
            return ""
        return str((issue.get("closed_by") or {}).get("login") or "")

    def comment(self, repo: str, number: int, body: str) -> dict:
        """POST /repos/{repo}/issues/{number}/comments (a pull request's conversation too)."""
        return self._call("POST", f"repos/{repo}/issues/{number}/comments", f"comment on #{number} of {repo}",
                          ok=(201,), json={"body": body})

    def update_pr(self, number: int, *, title: str, body: str, repo: str | None = None) -> dict:
        """PATCH /repos/{repo}/pulls/{number} (title and body); returns {"number", "url"}."""
        repo = repo or self.settings.github_repo
        url = f"{self.settings.github_api_url}repos/{repo}/pulls/{number}"
        resp = self.http.request("PATCH", url, json={"title": title, "body": body},
                                 failure=f"Could not update pull request #{number}")
        if resp.status_code != 200:
            raise ExternalError(f"GitHub refused the update of pull request #{number} (HTTP {resp.status_code}).")
        try:
            data = resp.json()
            return {"number": data.get("number", number), "url": data.get("html_url") or data.get("url")}
        except (ValueError, AttributeError):
            raise ExternalError("GitHub answered the pull request update with garbage.") from None


def github_time(value: str | None) -> datetime | None:
    """A GitHub timestamp (``2026-01-01T00:00:00Z``) as a naive UTC datetime."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


class Actions:
    """The few GitHub Actions endpoints torchbot uses."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None, repo: str | None = None):
        """``repo``: another repository of the same token (a companion build-torchvision);
        None: TORCHBOT_GITHUB_REPO."""
        if settings.github_token is None:
            raise UsageError("The github backend needs TORCHBOT_GITHUB_TOKEN.")
        self.s = settings
        self.repo = repo or settings.github_repo
        self.base = f"{settings.github_api_url}repos/{self.repo}/actions/"
        self.http = HttpClient(settings, client=client, headers=github_headers(settings))

    @property
    def requests(self) -> int:
        return self.http.requests

    @property
    def rate(self) -> RateLimit | None:
        return self.http.rate

    def close(self) -> None:
        self.http.close()

    def _send(self, method: str, url: str, what: str, **kw) -> httpx.Response:
        """The answer, or :class:`Refused` (a 4xx: nothing was done), or
        :class:`~release.adapters.http.Unavailable` (no usable answer; see ``may_have_acted``)."""
        resp = self.http.request(method, url, failure=f"GitHub did not answer {what}", **kw)
        if resp.status_code in (401, 403) or (resp.status_code == 404 and not what.startswith("GET runs/")):
            raise AccessRefused(f"GitHub refused {what} ({_said(resp)}): "
                                + WHY[resp.status_code].format(repo=self.repo) + ".", resp.status_code)
        if resp.status_code >= 400:
            said = github_message(resp).splitlines()
            said = f": {said[-1][:200]}" if said else ""
            raise Refused(f"GitHub refused {what} (HTTP {resp.status_code}{said}).", resp.status_code)
        return resp

    def check_access(self) -> None:
        """One request that the token works and sees the repository (AccessRefused if not)."""
        self._send("GET", f"{self.s.github_api_url}repos/{self.repo}", f"GET repos/{self.repo}")

    def _json(self, resp: httpx.Response, what: str) -> dict:
        try:
            data = resp.json() if resp.content else {}
        except ValueError:
            raise ExternalError(f"GitHub answered {what} with garbage.") from None
        if not isinstance(data, dict):
            raise ExternalError(f"GitHub answered {what} with garbage.")
        return data

    def _all_pages(self, path: str, key: str, params: dict | None = None) -> list[dict]:
        """Every item of a listing: 100 per page, following ``Link: rel="next"``."""
        what = f"GET {path}"
        url: str | None = self.base + path
        query: dict | None = {**(params or {}), "per_page": PER_PAGE}
        items: list[dict] = []
        seen: set[str] = set()
        while url and len(seen) < MAX_PAGES:
            resp = self._send("GET", url, what, params=query)
            seen.add(str(resp.url))
            batch = self._json(resp, what).get(key)
            if not isinstance(batch, list):
                raise ExternalError(f"GitHub answered {what} with garbage (no {key} list).")
            items.extend(batch)
            url = resp.links.get("next", {}).get("url")
            query = None  # the next URL carries the query
            if url in seen:
                break
        return items

    def dispatch(self, inputs: dict, ref: str) -> dict | None:
        """workflow_dispatch of the build workflow at ``ref`` (the branch being built: the
        workflow file and the checkout both come from it), asking GitHub for the run it made
        (``return_run_details``): ``{"id", "html_url"}`` when it answers 200 with them, None when
        it answers 204 (a GitHub that does not offer them: the run is then found by its title).
        Sent once: a 5xx or a timeout after it was sent raises Unavailable with
        ``may_have_acted`` (the run may exist)."""
        path = f"workflows/{self.s.github_workflow_file}/dispatches"
        resp = self._send("POST", self.base + path, f"POST {path}",
                          json={"ref": ref, "inputs": inputs, "return_run_details": True})
        if resp.status_code != 200 or not resp.content:
            return None
        data = self._json(resp, f"POST {path}")
        run_id = data.get("workflow_run_id")
        if not isinstance(run_id, int) or isinstance(run_id, bool):
            return None  # not what GitHub gives: fall back to finding the run by its title
        return {"id": run_id, "html_url": data.get("html_url")}

    def find_runs(self, request_ids: set[str], since: datetime) -> dict[str, dict]:
        """request id -> its run, for the dispatch runs created since ``since`` (naive UTC)
        whose name carries one of ``request_ids``: one listing, every page."""
        created = (since - timedelta(minutes=5)).replace(microsecond=0).isoformat() + "Z"
        runs = self._all_pages(f"workflows/{self.s.github_workflow_file}/runs", "workflow_runs",
                               {"event": "workflow_dispatch", "created": f">={created}"})
        found: dict[str, dict] = {}
        for run in runs:
            title = run.get("display_title") or run.get("name") or ""
            for rid in request_ids:
                if rid in title and rid not in found:
                    found[rid] = run
        return found

    def run(self, run_id: str) -> dict:
        path = f"runs/{run_id}"
        return self._json(self._send("GET", self.base + path, f"GET {path}"), f"GET {path}")

    def jobs(self, run_id: str) -> list[dict]:
        """Every job of a run's latest attempt (every page)."""
        return self._all_pages(f"runs/{run_id}/jobs", "jobs", {"filter": "latest"})

    # -- reporting builds back to a pull request (commit statuses, automerge) ---------------

    def _repo_url(self, path: str) -> str:
        return f"{self.s.github_api_url}repos/{self.repo}/{path}"

    def post_status(self, sha: str, state: str, description: str, *, context: str,
                    target_url: str | None = None) -> None:
        """POST /repos/{repo}/statuses/{sha}: a commit status (shown on every pull request
        whose head is ``sha``)."""
        body = {"state": state, "description": description[:140], "context": context}
        if target_url:
            body["target_url"] = target_url
        self._send("POST", self._repo_url(f"statuses/{sha}"), f"POST statuses/{sha[:12]}", json=body)

    def find_pull(self, head: str, base: str) -> dict | None:
        """The open pull request from ``head`` (a branch of the repository) into ``base``."""
        owner = self.repo.split("/", 1)[0]
        resp = self._send("GET", self._repo_url("pulls"), "GET pulls",
                          params={"state": "open", "head": f"{owner}:{head}", "base": base, "per_page": PER_PAGE})
        try:
            pulls = resp.json()
        except ValueError:
            raise ExternalError("GitHub answered GET pulls with garbage.") from None
        own = [p for p in pulls if isinstance(p, dict) and str(((p.get("head") or {}).get("repo") or {}).get(
            "full_name") or "").lower() == self.repo.lower()] if isinstance(pulls, list) else []
        return own[0] if own else None  # a fork's pull request is never merged

    def comment_issue(self, number: int, body: str) -> None:
        """POST /repos/{repo}/issues/{number}/comments (a pull request's conversation too)."""
        self._send("POST", self._repo_url(f"issues/{number}/comments"), f"POST issues/{number}/comments",
                   json={"body": body})

    def merge_pull(self, number: int, sha: str, method: str = "merge") -> dict:
        """PUT /repos/{repo}/pulls/{number}/merge, only while the head is still ``sha``."""
        what = f"PUT pulls/{number}/merge"
        return self._json(self._send("PUT", self._repo_url(f"pulls/{number}/merge"), what,
                                     json={"sha": sha, "merge_method": method}), what)
