"""The GitHub adapter (REST over httpx): pull requests on the managed repository, and the
few GitHub Actions endpoints the github build backend uses (dispatch, runs, jobs).

May import: config.
"""

from __future__ import annotations

import time

import httpx

from config.errors import ExternalError, UsageError
from config.settings import Settings


class GitHub:
    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.settings = settings
        headers = {"User-Agent": "torchbot", "Accept": "application/vnd.github+json"}
        if settings.github_token is not None:
            headers["Authorization"] = f"Bearer {settings.github_token.get_secret_value()}"
        self._client = client or httpx.Client(timeout=settings.http_timeout, headers=headers)
        self.retries = max(1, int(settings.http_retries))

    def close(self) -> None:
        self._client.close()

    def open_pr(self, *, head: str, base: str, title: str, body: str, repo: str | None = None) -> dict:
        """POST /repos/{repo}/pulls; returns {"number", "url"}."""
        repo = repo or self.settings.github_repo
        url = f"{self.settings.github_api_url}repos/{repo}/pulls"
        payload = {"title": title, "head": head, "base": base, "body": body}
        last = ""
        for attempt in range(self.retries):
            if attempt:
                time.sleep(0.2 * 2 ** (attempt - 1))
            try:
                resp = self._client.post(url, json=payload)
            except httpx.HTTPError as err:
                last = type(err).__name__
                continue
            if resp.status_code >= 500:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code not in (200, 201):
                raise ExternalError(f"GitHub refused the pull request {head} -> {base} (HTTP {resp.status_code}).")
            try:
                data = resp.json()
                return {"number": data.get("number"), "url": data.get("html_url") or data.get("url")}
            except (ValueError, AttributeError):
                raise ExternalError("GitHub answered the pull request with garbage.") from None
        raise ExternalError(f"Could not open the pull request {head} -> {base} ({last}).")


class Actions:
    """The few GitHub Actions endpoints torchbot uses."""

    def __init__(self, settings, client=None):
        import httpx

        if settings.github_token is None:
            raise UsageError("The github backend needs TORCHBOT_GITHUB_TOKEN.")
        self.s = settings
        self.repo = settings.github_repo
        self.base = f"{settings.github_api_url}repos/{self.repo}/actions/"
        self.http = client or httpx.Client(
            timeout=settings.http_timeout,
            headers={
                "Authorization": f"Bearer {settings.github_token.get_secret_value()}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "torchbot",
            },
        )

    def _call(self, method: str, path: str, **kw):
        import httpx

        last = ""
        for attempt in range(max(1, self.s.http_retries)):
            if attempt:
                time.sleep(0.2 * 2 ** (attempt - 1))
            try:
                resp = self.http.request(method, self.base + path, **kw)
            except httpx.HTTPError as err:
                last = type(err).__name__
                continue
            if resp.status_code >= 500 or resp.status_code == 429:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise ExternalError(f"GitHub refused {method} {path} (HTTP {resp.status_code}).")
            return resp.json() if resp.content else {}
        raise ExternalError(f"GitHub did not answer {method} {path} ({last}).")

    def dispatch(self, inputs: dict) -> None:
        self._call("POST", f"workflows/{self.s.github_workflow_file}/dispatches",
                   json={"ref": self.s.github_workflow_ref, "inputs": inputs})

    def find_run(self, request_id: str, attempts: int = 10) -> dict:
        for attempt in range(attempts):
            data = self._call("GET", f"workflows/{self.s.github_workflow_file}/runs",
                              params={"event": "workflow_dispatch", "per_page": 50})
            for run in data.get("workflow_runs", []):
                if request_id in (run.get("display_title") or run.get("name") or ""):
                    return run
            time.sleep(self.s.github_poll_seconds if attempt < attempts - 1 else 0)
        raise ExternalError("GitHub accepted the dispatch but its run did not appear; `release status` later.")

    def run(self, run_id: str) -> dict:
        return self._call("GET", f"runs/{run_id}")

    def jobs(self, run_id: str) -> list[dict]:
        return self._call("GET", f"runs/{run_id}/jobs", params={"per_page": 100}).get("jobs", [])
