"""Adapter for nixpkgs facts over HTTP (httpx): the head of a channel, whether a commit
exists, the torch version and the CUDA package sets at a revision.

Base URLs come from settings (``channels_url``, ``github_api_url``) so tests point them at
127.0.0.1. Every call has a timeout and retries with exponential backoff; anything that is
not a clear answer raises :class:`ExternalError` (nothing has been changed by then).
"""

from __future__ import annotations

import logging
import re
import time

import httpx

from config.errors import ExternalError, RefusedError
from config.settings import Settings
from config.naming import REV_RE, short

log = logging.getLogger(__name__)

# Files that define python3Packages.torch, newest layout first.
TORCH_FILES = (
    "pkgs/development/python-modules/torch/source/default.nix",
    "pkgs/development/python-modules/torch/default.nix",
)
# Files that define the cudaPackages_X_Y sets, newest layout first.
CUDA_SET_FILES = (
    "pkgs/top-level/cuda-packages.nix",
    "pkgs/top-level/all-packages.nix",
)
_TORCH_VERSION_RE = re.compile(r'pname\s*=\s*"torch";.*?\bversion\s*=\s*"(\d+\.\d+(?:\.\d+)?[^"]*)"', re.S)
_VERSION_RE = re.compile(r'\bversion\s*=\s*"(\d+\.\d+(?:\.\d+)?[^"]*)"')


class _NotFound(Exception):
    pass


class NixpkgsClient:
    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.settings = settings
        self.repo = settings.nixpkgs_repo
        self.retries = max(1, int(settings.http_retries))
        headers = {"User-Agent": "torchbot"}
        token = settings.github_token
        if token is not None:
            headers["Authorization"] = f"Bearer {token.get_secret_value()}"
        self._client = client or httpx.Client(timeout=settings.http_timeout, headers=headers, follow_redirects=True)
        self._files: dict[tuple[str, str], str | None] = {}
        self.backoff = 0.2

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "NixpkgsClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------------
    def _get(self, url: str, what: str, *, accept: str | None = None) -> httpx.Response:
        last = ""
        for attempt in range(self.retries):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                resp = self._client.get(url, headers={"Accept": accept} if accept else None)
            except httpx.HTTPError as err:
                last = f"{type(err).__name__}"
                log.debug("GET %s failed: %s", url, err)
                continue
            if resp.status_code == 404:
                raise _NotFound(url)
            if resp.status_code >= 500 or resp.status_code == 429:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise ExternalError(f"Could not get {what}: the server answered HTTP {resp.status_code}.")
            return resp
        raise ExternalError(f"Could not get {what} after {self.retries} attempts ({last}); nothing was changed.")

    def _api(self, path: str) -> str:
        return self.settings.github_api_url + path.lstrip("/")

    # -- facts ----------------------------------------------------------------------------
    def channel_head(self, channel: str) -> str:
        """The nixpkgs commit a channel points at (``<channels_url>/<channel>/git-revision``)."""
        if not re.fullmatch(r"[A-Za-z0-9._-]+", channel or ""):
            raise ExternalError(f"'{channel}' is not a channel name.")
        what = f"the head of channel {channel}"
        try:
            resp = self._get(self.settings.channels_url + f"{channel}/git-revision", what)
        except _NotFound:
            # not a channel the endpoint knows: try the nixpkgs branch of that name on GitHub
            try:
                return self.resolve(channel)
            except RefusedError:
                raise ExternalError(
                    f"Channel '{channel}' does not exist at {self.settings.channels_url} nor as a nixpkgs branch."
                ) from None
        rev = resp.text.strip()
        if not REV_RE.match(rev):
            raise ExternalError(f"The channel endpoint returned something that is not a commit id for {channel}; nothing was changed.")
        return rev

    def resolve(self, ref: str) -> str:
        """A ref (branch, tag or SHA) of nixpkgs resolved through the GitHub commits API."""
        what = f"nixpkgs commit {ref}"
        try:
            resp = self._get(self._api(f"repos/{self.repo}/commits/{ref}"), what, accept="application/vnd.github+json")
        except _NotFound:
            raise RefusedError(f"nixpkgs has no commit {ref}; nothing was changed.") from None
        try:
            sha = resp.json()["sha"]
        except (ValueError, KeyError, TypeError):
            raise ExternalError(f"The GitHub API returned garbage for {what}; nothing was changed.") from None
        if not isinstance(sha, str) or not REV_RE.match(sha):
            raise ExternalError(f"The GitHub API returned garbage for {what}; nothing was changed.")
        return sha

    def file(self, rev: str, path: str) -> str | None:
        """A file of nixpkgs at ``rev`` (GitHub contents API, raw), or None when absent."""
        key = (rev, path)
        if key not in self._files:
            try:
                resp = self._get(
                    self._api(f"repos/{self.repo}/contents/{path}?ref={rev}"),
                    f"{path} at nixpkgs {short(rev)}",
                    accept="application/vnd.github.raw+json",
                )
                self._files[key] = resp.text
            except _NotFound:
                self._files[key] = None
        return self._files[key]

    def torch_version(self, rev: str) -> str:
        for path in TORCH_FILES:
            text = self.file(rev, path)
            if text is None:
                continue
            m = _TORCH_VERSION_RE.search(text) or _VERSION_RE.search(text)
            if m:
                return m.group(1)
            raise ExternalError(f"Could not read the torch version from {path} at nixpkgs {short(rev)}.")
        raise ExternalError(f"nixpkgs {short(rev)} has no file defining python3Packages.torch ({', '.join(TORCH_FILES)}).")

    def has_cuda_set(self, rev: str, attr: str) -> bool:
        pattern = re.compile(rf"\b{re.escape(attr)}\s*=")
        seen = False
        for path in CUDA_SET_FILES:
            text = self.file(rev, path)
            if text is None:
                continue
            seen = True
            if pattern.search(text):
                return True
        if not seen:
            raise ExternalError(f"nixpkgs {short(rev)} has none of the files defining CUDA package sets ({', '.join(CUDA_SET_FILES)}).")
        return False

    def cuda_sets(self, rev: str) -> list[str]:
        """Every ``cudaPackages_X[_Y]`` set defined at ``rev`` (for messages), newest first."""
        found: set[str] = set()
        for path in CUDA_SET_FILES:
            text = self.file(rev, path)
            if text:
                found.update(re.findall(r"\b(cudaPackages_\d+(?:_\d+)?)\s*=", text))
        return sorted(found, key=lambda a: tuple(int(x) for x in a.split("_")[1:]), reverse=True)
