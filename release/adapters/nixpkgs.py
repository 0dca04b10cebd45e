"""Adapter for nixpkgs facts over HTTP (httpx): the head of a channel, whether a commit
exists, the torch version and the CUDA package sets at a revision, and what changed between
two revisions (the GitHub compare API; commits touching a path).

Base URLs come from settings (``channels_url``, ``github_api_url``) so tests point them at
127.0.0.1. Every call has a timeout and goes through the shared retry policy
(``release.adapters.http``: backoff with jitter, ``Retry-After`` and ``x-ratelimit-reset``
honoured, bounded total time); anything that is not a clear answer raises
:class:`ExternalError` (nothing has been changed by then).

GitHub requests carry GitHub's headers (``X-GitHub-Api-Version``, the token; the token goes to
the GitHub API only, never to the channel endpoint) and ask for no more than is read: a ref is
resolved with the ``application/vnd.github.sha`` media type (the bare sha, not the commit and
its files), a file with ``application/vnd.github.raw+json``. A ref GitHub does not know is
answered 404, or 422 ``No commit found for SHA: ...`` (the commits API): both mean "no such
commit" here.
"""

from __future__ import annotations

import re

import httpx

from config.errors import ExternalError, RefusedError, UnknownThere
from config.naming import REV_RE, short
from config.settings import Settings
from release.adapters.http import GITHUB_JSON, HttpClient, github_headers, no_such_commit

# Files that define python3Packages.torch, newest layout first.
TORCH_FILES = (
    "pkgs/development/python-modules/torch/source/default.nix",
    "pkgs/development/python-modules/torch/default.nix",
)
# The folder of python3Packages.torch (every layout above): its history is where torch moved.
TORCH_DIR = "pkgs/development/python-modules/torch"
# Files that define the cudaPackages_X_Y sets, newest layout first.
CUDA_SET_FILES = (
    "pkgs/top-level/cuda-packages.nix",
    "pkgs/top-level/all-packages.nix",
)
_CUDA_DEFAULT_RE = re.compile(r"^\s*cudaPackages\s*=\s*(?:recurseIntoAttrs\s+)?(cudaPackages_\d+(?:_\d+)?)\s*;", re.M)
_TORCH_VERSION_RE = re.compile(r'pname\s*=\s*"torch";.*?\bversion\s*=\s*"(\d+\.\d+(?:\.\d+)?[^"]*)"', re.S)
_VERSION_RE = re.compile(r'\bversion\s*=\s*"(\d+\.\d+(?:\.\d+)?[^"]*)"')


class _NotFound(Exception):
    pass


class NixpkgsClient:
    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.settings = settings
        self.repo = settings.nixpkgs_repo
        self.http = HttpClient(settings, headers={"User-Agent": "torchbot"}, follow_redirects=True, client=client)
        self._files: dict[tuple[str, str], str | None] = {}

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> NixpkgsClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------------
    def _get(self, url: str, what: str, *, accept: str | None = None) -> httpx.Response:
        """GET ``url``; with ``accept`` a GitHub API request (GitHub's headers, the token)."""
        resp = self.http.request("GET", url, headers=github_headers(self.settings, accept) if accept else None,
                                 failure=f"Could not get {what}", then="nothing was changed")
        if no_such_commit(resp) if accept else resp.status_code == 404:
            raise _NotFound(url)
        if resp.status_code >= 400:
            raise ExternalError(f"Could not get {what}: the server answered HTTP {resp.status_code}.")
        return resp

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
            raise ExternalError(
                f"The channel endpoint returned something that is not a commit id for {channel}; nothing was changed."
            )
        return rev

    def resolve(self, ref: str) -> str:
        """A ref (branch, tag or SHA) of nixpkgs resolved through the GitHub commits API, asking
        for the sha alone."""
        what = f"nixpkgs commit {ref}"
        try:
            resp = self._get(self._api(f"repos/{self.repo}/commits/{ref}"), what, accept="application/vnd.github.sha")
        except _NotFound:
            raise RefusedError(f"nixpkgs has no commit {ref}; nothing was changed.") from None
        sha = resp.text.strip()
        if not REV_RE.match(sha):
            raise ExternalError(f"The GitHub API returned garbage for {what}; nothing was changed.")
        return sha

    def commit_date(self, rev: str) -> str | None:
        """When a nixpkgs commit was committed (ISO 8601, the GitHub commits API), or None."""
        data = self._json(f"repos/{self.repo}/commits/{rev}", f"nixpkgs commit {short(rev)}")
        try:
            commit = data["commit"]
            return (commit.get("committer") or commit.get("author") or {}).get("date")
        except (KeyError, TypeError, AttributeError):
            raise ExternalError(f"The GitHub API returned garbage for nixpkgs commit {short(rev)}.") from None

    def _json(self, path: str, what: str):
        try:
            return self._get(self._api(path), what, accept=GITHUB_JSON).json()
        except _NotFound:
            raise UnknownThere(f"GitHub knows no {what}.") from None
        except ValueError:
            raise ExternalError(f"The GitHub API returned garbage for {what}.") from None

    def compare(self, old: str, new: str, *, per_page: int = 100, max_pages: int = 10) -> dict:
        """The commits between two nixpkgs revisions (GitHub compare API, paged):
        ``{"total", "shas" (oldest first, at most per_page * max_pages), "complete", "html_url"}``."""
        shas: list[str] = []
        total, url = 0, None
        what = f"nixpkgs comparison {short(old)}...{short(new)}"
        for page in range(1, max_pages + 1):
            data = self._json(f"repos/{self.repo}/compare/{old}...{new}?per_page={per_page}&page={page}", what)
            try:
                total, url = int(data["total_commits"]), data.get("html_url")
                batch = [c["sha"] for c in data.get("commits") or []]
            except (KeyError, TypeError, ValueError, AttributeError):
                raise ExternalError(f"The GitHub API returned garbage for {what}.") from None
            shas.extend(batch)
            if len(shas) >= total or len(batch) < per_page:
                break
        return {"total": total, "shas": shas, "complete": len(shas) >= total, "html_url": url}

    def path_commits(self, head: str, path: str, in_range: set[str], *, complete: bool = True,
                     per_page: int = 100, max_pages: int = 3) -> list[dict]:
        """The commits reachable from ``head`` that touch ``path`` (GitHub commits API with
        ``path``, newest first), kept when in ``in_range``: ``[{"sha", "title", "url"}]``.
        Paging stops at a page with none in range when ``in_range`` is the whole range."""
        out: list[dict] = []
        what = f"nixpkgs commits touching {path}"
        for page in range(1, max_pages + 1):
            data = self._json(f"repos/{self.repo}/commits?sha={head}&path={path}&per_page={per_page}&page={page}",
                              what)
            if not isinstance(data, list):
                raise ExternalError(f"The GitHub API returned garbage for {what}.")
            kept = 0
            for c in data:
                try:
                    sha, message = c["sha"], c["commit"]["message"]
                except (KeyError, TypeError):
                    raise ExternalError(f"The GitHub API returned garbage for {what}.") from None
                if sha in in_range:
                    kept += 1
                    out.append({"sha": sha, "title": (message or "").splitlines()[0] if message else "",
                                "url": c.get("html_url")})
            if len(data) < per_page or (complete and not kept):
                break
        return out

    def torch_changes(self, head: str, *, max_pages: int = 10):
        """The commits reachable from ``head`` (a commit or a nixpkgs branch) that touch torch's
        folder, newest first, as ``{"sha", "parent" (first parent or None), "title"}`` (GitHub's
        commits API with ``path``, 100 per page, following ``Link: rel="next"``); a generator, so
        a caller that finds what it wants early asks for no further page."""
        what = f"nixpkgs commits touching {TORCH_DIR}"
        url: str | None = self._api(f"repos/{self.repo}/commits?sha={head}&path={TORCH_DIR}&per_page=100")
        for _ in range(max_pages):
            if url is None:
                return
            try:
                resp = self._get(url, what, accept="application/vnd.github+json")
                data = resp.json()
            except _NotFound:
                raise UnknownThere(f"GitHub knows no {what} from {short(head)}.") from None
            except ValueError:
                raise ExternalError(f"The GitHub API returned garbage for {what}.") from None
            if not isinstance(data, list):
                raise ExternalError(f"The GitHub API returned garbage for {what}.")
            for c in data:
                try:
                    parents = [p["sha"] for p in c.get("parents") or []]
                    message = c["commit"]["message"] or ""
                    yield {"sha": c["sha"], "parent": parents[0] if parents else None,
                           "title": message.splitlines()[0] if message else ""}
                except (KeyError, TypeError, AttributeError):
                    raise ExternalError(f"The GitHub API returned garbage for {what}.") from None
            url = resp.links.get("next", {}).get("url")

    def is_newer(self, old: str, new: str) -> bool:
        """Whether ``new`` comes after ``old`` in nixpkgs' history (the compare API says "ahead")."""
        if old == new:
            return False
        data = self._json(f"repos/{self.repo}/compare/{old}...{new}?per_page=1",
                          f"nixpkgs comparison {short(old)}...{short(new)}")
        status = data.get("status") if isinstance(data, dict) else None
        if status is None:
            raise ExternalError(f"The GitHub API returned garbage for nixpkgs comparison {short(old)}...{short(new)}.")
        return status == "ahead"

    def cuda_default(self, rev: str) -> str | None:
        """The set nixpkgs' plain ``cudaPackages`` points at (``cudaPackages_12_8``), or None."""
        for path in CUDA_SET_FILES:
            text = self.file(rev, path)
            m = _CUDA_DEFAULT_RE.search(text or "")
            if m:
                return m.group(1)
        return None

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
        raise ExternalError(
            f"nixpkgs {short(rev)} has no file defining python3Packages.torch ({', '.join(TORCH_FILES)})."
        )

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
            raise ExternalError(
                f"nixpkgs {short(rev)} has none of the files defining CUDA package sets ({', '.join(CUDA_SET_FILES)})."
            )
        return False

    def cuda_sets(self, rev: str) -> list[str]:
        """Every ``cudaPackages_X[_Y]`` set defined at ``rev`` (for messages), newest first."""
        found: set[str] = set()
        for path in CUDA_SET_FILES:
            text = self.file(rev, path)
            if text:
                found.update(re.findall(r"\b(cudaPackages_\d+(?:_\d+)?)\s*=", text))
        return sorted(found, key=lambda a: tuple(int(x) for x in a.split("_")[1:]), reverse=True)
