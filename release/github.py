"""GitHub adapter (httpx): open a pull request on the managed repository."""

from __future__ import annotations

import time

import httpx

from config.errors import ExternalError
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
