"""A fake GitHub Actions API on 127.0.0.1 (threaded http.server) for the github build
backend, paging and rate-limiting the way GitHub documents it.

- ``POST .../workflows/{file}/dispatches`` (204) creates a run whose name carries the
  inputs' request id, with one job per entry of the ``pytorch`` and ``companions`` JSON inputs
  (lists of ``{"package", "platform", "runs_on"}``; plain names are accepted too); variants in
  ``fail`` conclude "failure". ``dispatches`` keeps each (workflow file, payload).
- Listings (``workflows/{file}/runs`` with ``event`` and ``created=>=ISO`` filters, newest
  first; ``runs/{id}/jobs``) page: ``per_page`` defaults to 30 and is capped at 100, ``page``
  starts at 1, and a ``Link`` header carries ``next``/``last`` (and ``prev``/``first``) URLs
  when there is more than one page.
- Every answer carries ``x-ratelimit-limit/remaining/reset/used/resource``. Past ``rate_limit``
  requests in a ``window`` (seconds), requests answer ``limit_status`` (403, as GitHub's
  primary limit; or 429) with ``x-ratelimit-remaining: 0`` until the window resets.
  ``throttle(n, status=429, retry_after=1)`` makes the next n requests answer that status with
  ``Retry-After`` (GitHub's secondary limits); ``secondary_limit(n)`` answers 403 with GitHub's
  secondary-rate-limit message and neither ``Retry-After`` nor ``x-ratelimit-*`` headers (GitHub
  documents that too: then wait at least a minute).
- Failures after the work was done: ``answer_after(n, status=502)`` processes the next n
  requests (a dispatch creates its run) and then answers ``status`` instead of the real answer,
  or (``status=None``) closes the connection without answering, as a gateway that timed out
  after the request reached GitHub does.
- Runs go through GitHub's statuses. A run is ``requested`` right after its dispatch until
  the first read of it; ``hold_runs(status, job_status=None)`` keeps every run dispatched from
  then on in ``status`` (``pending``: waiting for a concurrency group; ``waiting``: for an
  environment's approval; ``requested``, ``queued``) with no jobs listed, or with every job in
  ``job_status`` (``waiting``, ``pending``, ``queued``), until ``release_runs()``;
  ``startup_failure=True`` makes every run end at once, ``completed``/``startup_failure``, with
  no job (a broken workflow file). ``delete_run(id)`` deletes a run: it answers 404 from then
  on, as GitHub does for a run deleted in its UI.
- Jobs progress in one of two ways. Step mode (default): the whole run advances one step,
  queued -> in_progress -> completed, each time the last page of its jobs is served. Clock
  mode (``durations``: package -> seconds, a dict or a callable): each job queues for
  ``start_delay`` then runs its duration, at most ``max_parallel`` at once (None: no cap, as
  GitHub without ``max-parallel``); ``no_job``: variants the run never makes a job for;
  companions start when every pytorch job has ended (their
  job has ``needs: pytorch``), and are listed only from then on, as GitHub expands a matrix
  when its job starts.
- ``log`` keeps every request (monotonic time, method, path, query, status); ``requests`` every
  (method, path). ``pause(predicate)`` holds a matching request until released (to stop a
  client in the middle of a poll). A wrong bearer token answers 401 (GitHub's ``Bad
  credentials``). ``upstream``: every path outside the repository's Actions API is forwarded
  there (a FakeNixpkgs ``api_url``) with its headers, so one GitHub API base serves both.
- Shapes are GitHub's: every run and job starts from the example of its operation in GitHub's
  OpenAPI description (``tests/support/github_spec``) with what the test drives set on it, so
  every field the spec requires is there; ``jobs[].started_at`` is always a string (the
  job's creation time until it starts, as GitHub gives). The dispatch body is checked as
  GitHub does (422 for a missing ``ref``, ``inputs`` that is not an object of strings, or
  more than 25 inputs); with ``return_run_details: true`` it answers 200 with the run's id
  and URLs (``run_details=False``: 204 always, a GitHub that does not offer them).
- Every exchange it answers itself is handed to ``tests/support/github_conformance`` and
  checked against the spec (request and answer); a test fails when one is off the spec.
- Pull requests (``/repos/{repo}/pulls``) are served here, not forwarded: ``pulls``
  (tests/support/fakes_github_pulls.py; ``git_dir``: the bare origin their branches live in),
  merges included. Commit statuses (``/repos/{repo}/statuses/{sha}``, ``commits/{ref}/status(es)``)
  too: ``statuses`` (tests/support/fakes_github_statuses.py). With ``git_dir``, a dispatch at a ref
  the repository does not have is refused 422 ("No ref found for: …"), as GitHub does.
- With ``runner`` (tests/support/fake_runners.Runners) each dispatched run's jobs really run the
  rendered workflow's steps, with the ``flox``/``nix`` shims that log what runs where; a job is
  completed once its runner finished, and fails when a step did.
- Issues (the dashboard issue): ``GET/POST .../issues``, ``GET/PATCH .../issues/{n}`` with GitHub's
  issue object (its required fields), 422 for a missing title or a body over 65,536 characters;
  ``issues`` holds them and ``tick(n, key, by=login)`` ticks a dashboard box as that person would
  (an edit in the issue's history); ``GET .../issues`` filters ``creator`` as GitHub does. ``add_pull(head,
  base, user=, fork=)`` opens a pull request as a person would (from a fork: ``head.repo.full_name`` is
  the fork's). Whoever a request's token is: ``GET /user`` answers ``login`` (torchbot's own; issues and
  pull requests it creates carry it as ``user.login``). ``GET .../collaborators/{user}/permission``
  answers ``permissions[user]`` (``admin``, ``write``, ``read``; ``none`` for anyone else).
- GraphQL (``POST /graphql``, outside the REST description, so checked here instead): the one query
  torchbot sends, an issue's ``author`` and ``userContentEdits`` (newest first, each ``diff`` the body
  that edit left, as GitHub gives it); anything else answers GraphQL's ``errors``.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlparse

from tests.support import github_conformance as conformance
from tests.support import github_shapes as shapes
from tests.support import github_spec as spec
from tests.support import http_stub

MAX_PER_PAGE, DEFAULT_PER_PAGE = http_stub.MAX_PER_PAGE, http_stub.DEFAULT_PER_PAGE
MAX_INPUTS = 25  # GitHub's limit on a workflow_dispatch's inputs
RUN_T = "/repos/{owner}/{repo}/actions/runs/{run_id}"
JOBS_T = "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
DISPATCH_T = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"
DOCS = "https://docs.github.com/rest"


@dataclass
class Logged:
    t: float  # time.monotonic() when the request arrived
    method: str
    path: str
    query: dict
    status: int = 0


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGitHub:
    def __init__(self, repo: str = "acme/build-pytorch", token: str = "ghp-test", fail: set[str] | None = None, *,
                 durations: dict[str, float] | Callable[[str], float] | None = None, start_delay: float = 0.0,
                 max_parallel: int | None = None, rate_limit: int = 5000, window: float = 3600.0,
                 limit_status: int = 403, upstream: str | None = None, no_job: set[str] | None = None,
                 startup_failure: bool = False, run_details: bool = True, git_dir=None,
                 login: str = "torchbot[bot]", permissions: dict[str, str] | None = None, runner=None):
        self.repo, self.token, self.fail = repo, token, set(fail or ())
        self.runner = runner  # tests/support/fake_runners.Runners: jobs really run (with the shims)
        self.durations, self.start_delay, self.max_parallel = durations, start_delay, max_parallel
        self.rate_limit, self.window, self.limit_status = rate_limit, window, limit_status
        self.upstream = upstream
        self.no_job = set(no_job or ())
        self.startup_failure = startup_failure
        self.run_details = run_details
        self._hold: tuple[str, str | None] | None = None  # (run status, job status) of runs dispatched now
        self._after: list[int | None] = []  # answer_after: statuses (None: no answer) for processed requests
        self.lock = threading.Lock()
        self.dispatches: list[tuple[str, dict]] = []
        self.requests: list[tuple[str, str]] = []
        self.log: list[Logged] = []
        self.runs: dict[int, dict] = {}
        self.issues: dict[int, dict] = {}  # number -> issue (GitHub's issue object)
        self.login = login  # the token's account (GET /user)
        self.permissions = {"maintainer": "admin", login: "write", **(permissions or {})}
        self.history: dict[int, list[tuple[str, str, str]]] = {}  # issue -> (editor, editedAt, body), oldest first
        self.graphql: list[dict] = []  # every GraphQL request body
        self._window_start: float | None = None
        self._used = 0
        self._throttle: list[tuple[int, float | None, bool]] = []
        self._pauses: list[tuple[Callable[[str, str, dict], bool], threading.Event, threading.Event]] = []
        from tests.support.fakes_github_pulls import Pulls

        self.pulls = Pulls(self, git_dir)  # pull requests (tests/support/fakes_github_pulls.py)
        from tests.support.fakes_github_statuses import Statuses

        self.statuses = Statuses(self, git_dir)  # commit statuses (tests/support/fakes_github_statuses.py)
        self.server = http_stub.serve(self)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        for _, _, release in self._pauses:
            release.set()
        self.server.shutdown()
        self.server.server_close()

    # -- test controls --------------------------------------------------------------------

    def throttle(self, n: int, status: int = 429, retry_after: float | None = 1) -> None:
        """The next ``n`` requests answer ``status`` with ``Retry-After: retry_after`` (none when
        None: a plain server error). Nothing is processed."""
        with self.lock:
            self._throttle.extend([(status, retry_after, False)] * n)

    def secondary_limit(self, n: int, status: int = 403) -> None:
        """The next ``n`` requests hit a secondary rate limit answered without any rate-limit
        header (no ``Retry-After``, no ``x-ratelimit-*``). Nothing is processed."""
        with self.lock:
            self._throttle.extend([(status, None, True)] * n)

    def answer_after(self, n: int, status: int | None = 502) -> None:
        """The next ``n`` requests are processed (a dispatch creates its run), then answered
        ``status`` instead, or with no answer at all when ``status`` is None."""
        with self.lock:
            self._after.extend([status] * n)

    def hold_runs(self, status: str = "pending", job_status: str | None = None) -> None:
        """Runs dispatched from now on stay in ``status`` (jobs: none, or all ``job_status``)."""
        with self.lock:
            self._hold = (status, job_status)

    def release_runs(self) -> None:
        """Held runs start now: queued, then their jobs as usual."""
        with self.lock:
            self._hold = None
            now = time.monotonic()
            for run in self.runs.values():
                if run.pop("held", None) is not None:
                    run["t0"] = now  # its jobs queue and run from now

    def delete_run(self, run_id: int) -> None:
        with self.lock:
            self.runs.pop(run_id, None)

    def pause(self, predicate: Callable[[str, str, dict], bool]) -> tuple[threading.Event, threading.Event]:
        """Hold the first request matching ``predicate(method, path, query)``: returns (reached,
        release); the request is answered once ``release`` is set."""
        reached, release = threading.Event(), threading.Event()
        with self.lock:
            self._pauses.append((predicate, reached, release))
        return reached, release

    def job_requests(self) -> list[Logged]:
        return [r for r in self.log if r.method == "GET" and r.path.endswith("/jobs")]

    # -- HTTP -----------------------------------------------------------------------------

    def _send(self, req, status, payload=None, headers: dict | None = None, exchange=None):
        data = payload if isinstance(payload, bytes) else b"" if payload is None else json.dumps(payload).encode()
        headers = dict(headers or {})
        if data and "Content-Type" not in headers:
            headers["Content-Type"] = "application/json; charset=utf-8"
        if exchange is not None:  # checked before it is sent: the client never sees an unchecked answer
            exchange.status, exchange.response_body = status, data
            exchange.response_headers = {k.lower(): v for k, v in headers.items()}
            conformance.record(exchange)
        req.send_response(status)
        req.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            req.send_header(k, v)
        req.end_headers()
        req.wfile.write(data)

    def _rate_headers(self, now: float) -> dict[str, str]:
        reset = (self._window_start or now) + self.window
        return {"x-ratelimit-limit": str(self.rate_limit),
                "x-ratelimit-remaining": str(max(0, self.rate_limit - self._used)),
                "x-ratelimit-reset": str(math.ceil(time.time() + (reset - now))),
                "x-ratelimit-used": str(self._used), "x-ratelimit-resource": "core"}

    def _handle(self, req, method: str) -> None:
        url = urlparse(req.path)
        path, query = url.path, {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(req.headers.get("Content-Length") or 0)
        raw = req.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None  # GitHub: 400 "Problems parsing JSON"
        exchange = conformance.Exchange(
            "FakeGitHub", method, path, url.query, {k.lower(): v for k, v in req.headers.items()}, raw, 0)
        entry = Logged(time.monotonic(), method, path, query)
        with self.lock:
            self.requests.append((method, path))
            self.log.append(entry)
            held = [(reached, release) for pred, reached, release in self._pauses
                    if not reached.is_set() and pred(method, path, query)]
        for reached, release in held[:1]:
            reached.set()
            release.wait(60)
        with self.lock:
            status, payload, headers = self._answer(req, method, path, query, body)
            if status < 400 and self._after:  # processed; the answer is lost on the way back
                lost = self._after.pop(0)
                if lost is None:
                    entry.status = -1
                    req.close_connection = True
                    if not getattr(req, "forwarded", False):  # the request is still checked
                        exchange.off_spec = "no answer (connection closed)"
                        conformance.record(exchange)
                    return
                status, payload, headers = lost, {"message": "Server Error"}, self._rate_headers(time.monotonic())
            entry.status = status
        if getattr(req, "forwarded", False) or path == "/graphql":
            exchange = None  # the upstream stand-in checked it; GraphQL is checked by _graphql
        self._send(req, status, payload, headers, exchange)

    def _answer(self, req, method: str, path: str, query: dict, body: dict) -> tuple[int, object, dict]:
        now = time.monotonic()
        if req.headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}, {
                **self._rate_headers(now), "x-ratelimit-limit": "60", "x-ratelimit-remaining": "59"}
        if self._window_start is None or now >= self._window_start + self.window:
            self._window_start, self._used = now, 0
        if self._throttle:
            status, after, secondary = self._throttle.pop(0)
            if secondary:
                return status, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                                           "before you try again."}, {}
            if after is None:
                return status, {"message": "Server Error"}, self._rate_headers(now)
            return status, {"message": "You have exceeded a secondary rate limit."}, {
                "Retry-After": f"{after:g}", **self._rate_headers(now)}
        if self._used >= self.rate_limit:
            return self.limit_status, {"message": "API rate limit exceeded."}, self._rate_headers(now)
        self._used += 1
        status, payload, extra = self._route(req, method, path, query, body)
        return status, payload, {**self._rate_headers(now), **extra}

    # -- issues and pull requests (the dashboard issue) -------------------------------------------

    def _issue(self, repo: str, number: int, title: str, body: str | None, user: str = "torchbot[bot]") -> dict:
        issue = shapes.issue(repo, number, title=title, body=body, user=user)  # GitHub's issue object
        base = f"https://api.github.test/repos/{repo}/issues/{number}"
        issue.update({"url": base, "repository_url": f"https://api.github.test/repos/{repo}",
                      "html_url": f"https://github.test/{repo}/issues/{number}"})
        return issue

    def add_pull(self, head: str, base: str, *, user: str | None = None, fork: str | None = None,
                 title: str | None = None) -> dict:
        """An open pull request ``head`` -> ``base`` of the fake's repository, opened as a person would:
        by ``user`` (torchbot's own login when None), from the fork ``fork`` (``owner/name``) when given."""
        status, pr, _ = self.pulls.route(None, "POST", [], {}, {"title": title or f"Bump {base}", "head": head,
                                                                "base": base})
        assert status == 201, pr
        if user is not None:
            pr["user"] = shapes._user(user)
        if fork is not None:
            owner, name = fork.split("/", 1)
            pr["head"]["label"] = f"{owner}:{head}"
            pr["head"]["user"]["login"] = owner
            pr["head"]["repo"].update({"name": name, "full_name": fork, "fork": True,
                                       "html_url": f"https://github.com/{fork}"})
            pr["head"]["repo"]["owner"] = {**pr["head"]["repo"]["owner"], "login": owner}
        return pr

    def add_issue(self, title: str, body: str, user: str) -> dict:
        """An issue opened by ``user`` (someone else than torchbot, say)."""
        repo = self.repo
        n = max([*self.pulls.prs, *self.issues], default=0) + 1
        self.issues[n] = self._issue(repo, n, title, body, user=user)
        self.history[n] = [(user, _iso(time.time()), body)]
        return self.issues[n]

    def edit_body(self, number: int, body: str, by: str) -> None:
        """``by`` edits the body of issue ``number`` (kept in its edit history)."""
        self.issues[number]["body"] = body
        self.history.setdefault(number, []).append((by, _iso(time.time()), body))

    def tick(self, number: int, key: str, by: str = "maintainer") -> None:
        """``by`` ticks the box of ``key`` in issue ``number``."""
        issue = self.issues[number]
        box = f"- [ ] <!-- torchbot:act:{key} -->"
        assert box in issue["body"], f"no box {key} in issue #{number}"
        self.edit_body(number, issue["body"].replace(box, box.replace("[ ]", "[x]")), by)

    def _issues_route(self, repo: str, method: str, rest: list[str], query: dict, body: dict
                      ) -> tuple[int, object, dict]:
        if rest == ["pulls"] and method == "GET":  # another repository of the owner: none open
            return 200, [], {}
        if rest == ["issues"] and method == "GET":
            state = query.get("state", "open")
            items = [i for i in reversed(self.issues.values()) if i["repository_url"].endswith("/repos/" + repo)
                     and (state == "all" or i["state"] == state)
                     and (not query.get("creator") or i["user"]["login"].lower() == query["creator"].lower())]
            return 200, items[: min(int(query.get("per_page", DEFAULT_PER_PAGE)), MAX_PER_PAGE)], {}
        if rest == ["issues"] and method == "POST":
            if not isinstance(body.get("title"), str) or not body["title"]:
                return 422, shapes.validation_failed({"resource": "Issue", "field": "title",
                                                      "code": "missing_field"}), {}
            if len(body.get("body") or "") > 65536:
                return 422, shapes.validation_failed({"resource": "Issue", "field": "body", "code": "custom",
                                                      "message": "body is too long (maximum is 65536 characters)"}), {}
            n = max([*self.pulls.prs, *self.issues], default=0) + 1  # issues and PRs share numbers
            self.issues[n] = self._issue(repo, n, body["title"], body.get("body"), user=self.login)
            self.history[n] = [(self.login, _iso(time.time()), body.get("body") or "")]
            return 201, self.issues[n], {}
        if len(rest) == 2 and rest[0] == "issues" and rest[1].isdigit():
            issue = self.issues.get(int(rest[1]))
            if issue is None or not issue["repository_url"].endswith("/repos/" + repo):
                return 404, {"message": "Not Found"}, {}
            if method == "GET":
                return 200, issue, {}
            if method == "PATCH":
                if len(body.get("body") or "") > 65536:
                    too_long = "body is too long (maximum is 65536 characters)"
                    return 422, shapes.validation_failed({"resource": "Issue", "field": "body", "code": "custom",
                                                          "message": too_long}), {}
                unknown = set(body) - {"title", "body", "state", "state_reason", "labels", "assignees", "milestone"}
                if unknown:
                    return 422, shapes.validation_failed(), {}
                issue.update(body)
                issue["updated_at"] = _iso(time.time())
                if "body" in body:
                    self.history.setdefault(issue["number"], []).append((self.login, issue["updated_at"], body["body"]))
                return 200, issue, {}
        return 404, {"message": "Not Found"}, {}

    def _route(self, req, method: str, path: str, query: dict, body: dict) -> tuple[int, object, dict]:
        owner = self.repo.split("/")[0]
        parts = path.strip("/").split("/")
        other = len(parts) >= 4 and f"{owner}/{parts[2]}" != self.repo
        if len(parts) >= 4 and parts[:2] == ["repos", owner] and (
                parts[3] == "issues" or (other and parts[3:] == ["pulls"] and method == "GET")):
            # issues of any repository of the owner; pull requests of the others (none open)
            return self._issues_route(f"{owner}/{parts[2]}", method, parts[3:], query, body)
        if method == "GET" and path == "/user":
            return 200, {**spec.example("get", "/user"), "login": self.login, "type": "Bot" if self.login.endswith(
                "[bot]") else "User"}, {}
        if method == "POST" and path == "/graphql":
            return self._graphql(body)
        if method == "GET" and len(parts) == 6 and parts[3] == "collaborators" and parts[5] == "permission":
            level = self.permissions.get(parts[4], "none")
            answer = spec.example("get", "/repos/{owner}/{repo}/collaborators/{username}/permission")
            answer.update(permission=level, role_name=level)
            answer["user"] = {**answer["user"], "login": parts[4], "role_name": level}
            return 200, answer, {}
        prefix = f"/repos/{self.repo}/actions/"
        if method == "GET" and path == f"/repos/{self.repo}":  # the token still reaches the repository
            return 200, shapes.repository(self.repo), {}
        pulls = f"/repos/{self.repo}/pulls"
        if path == pulls or path.startswith(pulls + "/"):
            return self.pulls.route(req, method, path[len(pulls):].strip("/").split("/") if path != pulls else [],
                                    query, body)
        statuses = self.statuses.route(method, path[len(f"/repos/{self.repo}/"):].split("/"), body) \
            if path.startswith(f"/repos/{self.repo}/") else None
        if statuses is not None:
            return statuses
        if not path.startswith(prefix) and self.upstream:
            return self._forward(req, method, body)
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(prefix):].split("/")
        if body is None:
            return 400, {"message": "Problems parsing JSON", "documentation_url": DOCS, "status": "400"}, {}
        if method == "POST" and rest[0] == "workflows" and rest[2:] == ["dispatches"]:
            if self.pulls.git_dir is not None and self.pulls._sha(str(body.get("ref"))) is None:
                return 422, shapes.error(422, f"No ref found for: {body.get('ref')}"), {}  # GitHub builds what it has
            invalid = _invalid_dispatch(body)
            if invalid:
                return 422, {"message": f"Invalid request.\n\n{invalid}", "documentation_url": DOCS,
                             "status": "422"}, {}
            run = self._dispatch(rest[1], body)
            if body.get("return_run_details") is True and self.run_details:
                return 200, {"workflow_run_id": run["id"], "run_url": self._api_url(req, f"runs/{run['id']}"),
                             "html_url": f"https://github.com/{self.repo}/actions/runs/{run['id']}"}, {}
            return 204, None, {}
        if method == "GET" and rest[0] == "workflows" and rest[2:] == ["runs"]:
            runs = [r for r in reversed(self.runs.values()) if r["workflow"] == rest[1]]
            if query.get("event"):
                runs = [r for r in runs if query["event"] == "workflow_dispatch"]
            created = query.get("created", "")
            if created.startswith(">="):
                since = datetime.fromisoformat(created[2:].replace("Z", "+00:00")).timestamp()
                runs = [r for r in runs if r["created"] >= since]
            page, links = self._page(req, path, query, len(runs))
            return 200, {"total_count": len(runs), "workflow_runs": [self._run(r) for r in runs[page]]}, links
        if method == "GET" and rest[0] == "runs" and len(rest) >= 2 and rest[1].isdigit() and int(rest[1]) in self.runs:
            run = self.runs[int(rest[1])]
            if rest[2:] == ["jobs"]:
                listed = self._listed(run)
                page, links = self._page(req, path, query, len(listed))
                jobs = self._jobs(run, listed[page])
                last_page = 'rel="next"' not in links.get("Link", "")
                if last_page and self.durations is None and not run.get("held") and not run.get("broken"):
                    run["step"] += 1  # step mode: a complete read of the jobs advances the run
                return 200, {"total_count": len(listed), "jobs": jobs}, links
            if not rest[2:]:
                return 200, self._run(run), {}
        return 404, {"message": "Not Found"}, {}

    def _graphql(self, body) -> tuple[int, object, dict]:
        """The issue-history query (see the module docstring), as GitHub's GraphQL answers it."""
        self.graphql.append(body if isinstance(body, dict) else {})
        query = body.get("query") if isinstance(body, dict) else None
        variables = body.get("variables") if isinstance(body, dict) else None
        if not isinstance(query, str) or "userContentEdits" not in query or not isinstance(variables, dict) \
                or not isinstance(variables.get("number"), int) or not isinstance(variables.get("owner"), str) \
                or not isinstance(variables.get("name"), str):
            return 200, {"errors": [{"message": "Parse error or unknown query", "type": "INVALID"}]}, {}
        repo = f"{variables['owner']}/{variables['name']}"
        issue = self.issues.get(variables["number"])
        if issue is None or not issue["repository_url"].endswith("/repos/" + repo):
            return 200, {"data": {"repository": {"issue": None}}, "errors": [
                {"type": "NOT_FOUND", "path": ["repository", "issue"],
                 "message": f"Could not resolve to an issue with the number of {variables['number']}."}]}, {}
        edits = self.history.get(issue["number"], [])
        nodes = [{"editedAt": at, "editor": {"login": who}, "diff": text} for who, at, text in reversed(edits)]
        if len(edits) < 2:
            nodes = []  # GitHub keeps no history for an issue never edited
        return 200, {"data": {"repository": {"issue": {"author": {"login": issue["user"]["login"]},
                                                        "userContentEdits": {"nodes": nodes[:100]}}}}}, {}

    def _forward(self, req, method: str, body: dict) -> tuple[int, bytes, dict]:
        """Anything but Actions goes to ``upstream`` (another fake: nixpkgs commits, pulls), with
        the request's headers (that fake checks the exchange against the spec)."""
        req.forwarded = True
        data = json.dumps(body).encode() if method in ("POST", "PATCH", "PUT") else None
        headers = {k: v for k, v in req.headers.items() if k.lower() not in ("host", "content-length")}
        fwd = urllib.request.Request(self.upstream.rstrip("/") + req.path, data=data, method=method, headers=headers)
        keep = ("content-type", "link", *conformance.RATE_HEADERS)
        try:
            with urllib.request.urlopen(fwd, timeout=10) as resp:
                return resp.status, resp.read(), {k: v for k, v in resp.headers.items() if k.lower() in keep}
        except urllib.error.HTTPError as err:
            return err.code, err.read(), {k: v for k, v in err.headers.items() if k.lower() in keep}

    def _api_url(self, req, rest: str) -> str:
        host = req.headers.get("Host") or self.url.split("//", 1)[1].rstrip("/")
        return f"http://{host}/repos/{self.repo}/actions/{rest}"

    def _page(self, req, path: str, query: dict, total: int) -> tuple[slice, dict]:
        """One page and its Link header, as GitHub pages (``http_stub.page``)."""
        return http_stub.page(req, self.url, path, query, total)

    # -- runs and jobs --------------------------------------------------------------------

    def _duration(self, pkg: str) -> float:
        d = self.durations
        return float(d(pkg) if callable(d) else d.get(pkg, 0.0))

    def _dispatch(self, workflow: str, body: dict) -> dict:
        self.dispatches.append((workflow, body))
        inputs = body.get("inputs", {})
        rid = 1000 + len(self.runs)
        torch = [e["package"] if isinstance(e, dict) else e for e in json.loads(inputs.get("pytorch", "[]"))]
        comps = [e["package"] if isinstance(e, dict) else e for e in json.loads(inputs.get("companions", "[]"))]
        run = {"id": rid, "step": 0, "packages": torch + comps, "torch": torch, "companions": comps,
               "workflow": workflow, "ref": body.get("ref"), "created": time.time(), "t0": time.monotonic(),
               "sha": f"{rid:040x}",
               "name": f"torchbot {inputs.get('branch')} {inputs.get('request_id')}", "requested": True}
        if self._hold is not None:
            run["held"] = self._hold
        if self.startup_failure:
            run["broken"] = True
        if self.durations is not None:
            run["times"] = self._schedule(run)
        if self.runner is not None:
            run["exec"] = self.runner.start(run, inputs, self.fail)
        self.runs[rid] = run
        return run

    def _schedule(self, run: dict) -> dict[str, tuple[float, float]]:
        """package -> (start, end) in seconds after dispatch: queue, then run, at most
        max_parallel at once; companions after every pytorch job."""
        slots = [0.0] * (self.max_parallel or len(run["packages"]) or 1)
        times: dict[str, tuple[float, float]] = {}
        ready = self.start_delay
        for group in (run["torch"], run["companions"]):
            for pkg in group:
                slots.sort()
                start = max(ready, slots[0])
                slots[0] = start + self._duration(pkg)
                times[pkg] = (start, slots[0])
            ready = max([ready] + [times[p][1] for p in group])
        return times

    def _state(self, run: dict, pkg: str) -> tuple[str, float | None, float | None]:
        """(status, started epoch, completed epoch) of one job now; with a runner, a job is
        completed only once the runner finished it."""
        status, began, ended = self._timed_state(run, pkg)
        if status == "completed" and "exec" in run and not run["exec"].done(pkg):
            return "in_progress", began, None
        return status, began, ended

    def _failed(self, run: dict, pkg: str) -> bool:
        return pkg in self.fail or ("exec" in run and run["exec"].ok(pkg) is False)

    def _timed_state(self, run: dict, pkg: str) -> tuple[str, float | None, float | None]:
        if run.get("held"):
            return run["held"][1] or "queued", None, None
        if self.durations is None:
            status = ("queued", "in_progress", "completed")[min(run["step"], 2)]
            return status, (run["created"] if run["step"] >= 1 else None), (
                run["created"] + 600 if status == "completed" else None)
        start, end = run["times"][pkg]
        age = time.monotonic() - run["t0"]
        began, ended = run["created"] + start, run["created"] + end
        if age >= end:
            return "completed", began, ended
        if age >= start:
            return "in_progress", began, None
        return "queued", None, None

    def _listed(self, run: dict) -> list[str]:
        """The packages whose jobs GitHub lists now (companions once their matrix started)."""
        if run.get("broken") or (run.get("held") and run["held"][1] is None):
            return []
        listed = run["packages"]
        if self.durations is not None and run["companions"]:
            torch_done = all(self._state(run, p)[0] == "completed" for p in run["torch"])
            listed = run["torch"] + (run["companions"] if torch_done else [])
        return [p for p in listed if p not in self.no_job]

    def _jobs(self, run: dict, pkgs: list[str]) -> list[dict]:
        out = []
        index = run.setdefault("index", {p: i for i, p in enumerate(run["packages"])})
        for pkg in pkgs:
            idx = index[pkg]
            status, began, ended = self._state(run, pkg)
            job_id = run["id"] * 1000 + idx
            job = spec.example("get", JOBS_T)["jobs"][0]  # GitHub's example job, then this one's facts
            api = f"https://api.github.com/repos/{self.repo}"
            job.update({
                "id": job_id, "node_id": f"CR_{job_id}", "run_id": run["id"],
                "run_url": f"{api}/actions/runs/{run['id']}",
                "url": f"{api}/actions/jobs/{job_id}", "head_branch": run["ref"], "head_sha": run["sha"],
                "workflow_name": "torchbot build", "name": pkg, "status": status, "steps": [],
                "conclusion": ("failure" if self._failed(run, pkg) else "success") if status == "completed" else None,
                "created_at": _iso(run["created"]),
                "started_at": _iso(began if began else run["created"]),  # a string even before it starts
                "completed_at": _iso(ended) if ended else None,
                "check_run_url": f"{api}/check-runs/{job_id}",
                "html_url": f"https://github.com/{self.repo}/actions/runs/{run['id']}/job/{job_id}"})
            out.append(job)
        return out

    def _run(self, run: dict) -> dict:
        states = [self._state(run, p)[0] for p in run["packages"] if p not in self.no_job]
        concl = None
        if run.get("broken"):
            status, concl = "completed", "startup_failure"
        elif run.pop("requested", False):
            status = "requested"  # GitHub's first status of a run, before it is queued
        elif run.get("held"):
            status = run["held"][0]
        elif all(s == "completed" for s in states):
            status = "completed"
        elif all(s == "queued" for s in states):
            status = "queued"
        else:
            status = "in_progress"
        if status == "completed" and concl is None:
            concl = "failure" if any(self._failed(run, p) for p in run["packages"]) else "success"
        shaped = spec.example("get", RUN_T)  # GitHub's example run, then this one's facts
        api = f"https://api.github.com/repos/{self.repo}"
        shaped.update({
            "id": run["id"], "node_id": f"WFR_{run['id']}", "name": "torchbot build", "display_title": run["name"],
            "run_number": run["id"] - 999, "run_attempt": 1, "head_branch": run["ref"], "head_sha": run["sha"],
            "path": f".github/workflows/{run['workflow']}", "status": status, "conclusion": concl,
            "event": "workflow_dispatch", "created_at": _iso(run["created"]), "updated_at": _iso(time.time()),
            "run_started_at": _iso(run["created"]), "url": f"{api}/actions/runs/{run['id']}",
            "html_url": f"https://github.com/{self.repo}/actions/runs/{run['id']}",
            "jobs_url": f"{api}/actions/runs/{run['id']}/jobs", "pull_requests": []})
        return shaped


def _invalid_dispatch(body) -> str | None:
    """What GitHub finds wrong with a workflow_dispatch body (it answers 422), or None."""
    if not isinstance(body, dict):
        return "The body is not a JSON object."
    if not isinstance(body.get("ref"), str) or not body["ref"]:
        return "\"ref\" wasn't supplied."
    inputs = body.get("inputs", {})
    if not isinstance(inputs, dict):
        return "For 'properties/inputs', it is not an object."
    if len(inputs) > MAX_INPUTS:
        return f"For 'properties/inputs', {len(inputs)} properties is more than the maximum of {MAX_INPUTS}."
    wrong = [k for k, v in inputs.items() if not isinstance(v, str)]
    if wrong:
        return f"For 'properties/{wrong[0]}', {json.dumps(inputs[wrong[0]])} is not a string."
    if "return_run_details" in body and not isinstance(body["return_run_details"], bool):
        return "For 'properties/return_run_details', it is not a boolean."
    return None
