"""A real HTTP server on 127.0.0.1 standing in for the nixpkgs channel endpoint and the
GitHub API (commits, contents, pulls). Point ``channels_url`` at ``.channels_url`` and
``github_api_url`` at ``.api_url``.

State is plain data the test edits: ``channels`` (name -> rev or raw text), ``commits``
(known nixpkgs SHAs), ``branches`` (name -> SHA), ``torch`` (rev -> torch version), ``cuda_sets`` (rev -> set of
``cudaPackages_X_Y``), ``mode`` ("ok", "down": HTTP 503 everywhere, "garbage": HTML),
and ``pulls`` (PR payloads received).

``history`` is nixpkgs' first-parent history, oldest first: ``add_commit(sha, title,
files)`` appends one (and makes it known); the compare API (``/compare/A...B``, paged with
``per_page``/``page``) and the commits API with ``path`` (newest first, paged) answer from it.
``cuda_default`` (rev -> ``cudaPackages_X_Y``) adds the plain ``cudaPackages`` alias. A commit
of ``history`` without its own ``torch``/``cuda_sets``/``cuda_default`` entry has those of the
newest commit before it that has one (a file keeps its content until a commit changes it;
``add_commit(..., torch=, cuda_sets=)`` sets them); ``dates`` (sha -> ISO date) is each commit's
author and committer date in the commits API.

It also serves each known commit's source tarball at ``.tarball_url`` + ``<rev>.tar.gz``: a
small real ``.tar.gz`` (``nixpkgs-<rev>/default.nix``, deterministic bytes, different per
rev) that ``nix-prefetch-url --unpack`` hashes like the real one; ``tarballs = False``
answers 404 for them (an unreachable tarball).

The GitHub API part answers as GitHub does (tests/support/github_spec: GitHub's OpenAPI
description): every answer starts from the spec's example of its operation, with the test's
facts set on it, so every required field is there; ``per_page`` defaults to 30 and is capped
at 100, with a ``Link`` header (``next``/``last``/``prev``/``first``) on the commits listing and
the comparison; every answer carries the five ``x-ratelimit-*`` headers; a request with a token
other than ``token`` answers 401 ``Bad credentials`` (none: served unauthenticated, a limit of
60); a ref it does not know answers 422 ``No commit found for SHA: ...`` on
``commits/{ref}`` (as GitHub does; ``unknown_ref_status = 404`` for the other answer GitHub
documents); ``Accept: application/vnd.github.sha`` answers the bare sha,
``application/vnd.github.raw+json`` a file's text. Every API exchange is checked against the
spec by tests/support/github_conformance (``mode`` "down"/"garbage" answers excepted: a test
asked for a broken server)."""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import tarfile
import threading
import time
from urllib.parse import parse_qs, urlparse

from tests.support import github_conformance as conformance
from tests.support import github_shapes as shapes
from tests.support import github_spec as spec
from tests.support import http_stub

TORCH_FILE = "pkgs/development/python-modules/torch/source/default.nix"
CUDA_FILE = "pkgs/top-level/all-packages.nix"
REPO = "NixOS/nixpkgs"
MAX_PER_PAGE, DEFAULT_PER_PAGE = http_stub.MAX_PER_PAGE, http_stub.DEFAULT_PER_PAGE
DOCS = "https://docs.github.com/rest"
SHA_MEDIA = "application/vnd.github.sha"


def tarball_bytes(rev: str) -> bytes:
    """The fake nixpkgs source tarball of ``rev``: same bytes every time."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, text in ((f"nixpkgs-{rev}/default.nix", f'{{ ... }}: {{ rev = "{rev}"; }}\n'),
                           (f"nixpkgs-{rev}/.git-revision", rev + "\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


class FakeNixpkgs:
    def __init__(self, token: str = "ghp-test"):
        self.token = token
        self.channels: dict[str, str] = {}
        self.commits: set[str] = set()
        self.branches: dict[str, str] = {}  # nixpkgs branch name -> sha (commits API)
        self.torch: dict[str, str] = {}
        self.cuda_sets: dict[str, set[str]] = {}
        self.mode = "ok"
        self.pulls: list[dict] = []
        self.requests: list[str] = []
        self.pull_status = 201
        self.unknown_ref_status = 422  # GitHub's answer on commits/{ref} for a ref it does not know
        self.tarballs = True
        self.history: list[dict] = []
        self.cuda_default: dict[str, str] = {}
        self.dates: dict[str, str] = {}  # sha -> committer date (ISO); unset: 2025-01-01T00:00:00Z
        self.tarball_gets: list[str] = []
        self._used = 0
        self._lock = threading.Lock()
        self.server = http_stub.serve(self)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- HTTP -----------------------------------------------------------------------------

    @staticmethod
    def _write(req, status: int, data: bytes, headers: dict) -> None:
        req.send_response(status)
        req.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            req.send_header(k, v)
        req.end_headers()
        req.wfile.write(data)

    def _handle(self, req, method: str) -> None:
        self.requests.append(f"{method} {req.path}")
        length = int(req.headers.get("Content-Length") or 0)
        raw = req.rfile.read(length) if length else b""
        url = urlparse(req.path)
        parts = url.path.strip("/").split("/")
        if parts[0] != "api":
            if self.mode == "down":
                return self._write(req, 503, b"unavailable", {"Content-Type": "text/plain"})
            if self.mode == "garbage" and method == "GET":
                return self._write(req, 200, b"<html>oops</html>", {"Content-Type": "text/html"})
            status, data, ctype = self._other(method, parts)
            return self._write(req, status, data, {"Content-Type": ctype})
        exchange = conformance.Exchange("FakeNixpkgs", method, url.path[len("/api"):], url.query,
                                        {k.lower(): v for k, v in req.headers.items()}, raw, 0)
        if self.mode in ("down", "garbage"):  # a broken server, as the test asked: the request is still checked
            status, data, headers = ((503, b"unavailable", {"Content-Type": "text/plain"}) if self.mode == "down"
                                     else (200, b"<html>oops</html>", {"Content-Type": "text/html"}))
            exchange.off_spec = f"mode {self.mode}"
        else:
            status, payload, headers = self._api(req, method, url, parts[1:], raw)
            if isinstance(payload, (bytes, str)):
                data = payload.encode() if isinstance(payload, str) else payload
            else:
                data = b"" if payload is None else json.dumps(payload).encode()
                if data:
                    headers.setdefault("Content-Type", "application/json; charset=utf-8")
        exchange.status, exchange.response_body = status, data
        exchange.response_headers = {k.lower(): v for k, v in headers.items()}
        conformance.record(exchange)
        self._write(req, status, data, headers)

    def _other(self, method: str, parts: list[str]) -> tuple[int, bytes, str]:
        """The channel endpoint and the source tarballs (not GitHub's API)."""
        if method == "GET" and parts[0] == "archive" and len(parts) == 2 and parts[1].endswith(".tar.gz"):
            rev = parts[1][: -len(".tar.gz")]
            self.tarball_gets.append(rev)
            if self.tarballs and rev in self.commits:
                return 200, tarball_bytes(rev), "application/x-gzip"
            return 404, b"Not Found", "text/plain"
        if method == "GET" and parts[0] == "channels" and len(parts) == 3 and parts[2] == "git-revision":
            rev = self.channels.get(parts[1])
            return (200, rev.encode(), "text/plain") if rev is not None else (404, b"no", "application/json")
        return 404, b"Not Found", "text/plain"

    def _rate(self, authorized: bool) -> dict[str, str]:
        limit = 5000 if authorized else 60
        return {"x-ratelimit-limit": str(limit), "x-ratelimit-remaining": str(max(0, limit - self._used)),
                "x-ratelimit-reset": str(math.ceil(time.time()) + 3600), "x-ratelimit-used": str(self._used),
                "x-ratelimit-resource": "core"}

    def _api(self, req, method: str, url, parts: list[str], raw: bytes) -> tuple[int, object, dict]:
        auth = req.headers.get("Authorization")
        with self._lock:
            self._used += 1
            rate = self._rate(auth == f"Bearer {self.token}")  # a bad token is served as anonymous: 60
        if auth is not None and auth != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}, rate
        if parts[0] != "repos" or len(parts) < 4:
            return 404, _error("Not Found", 404), rate
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        accept = req.headers.get("Accept", "")
        rest = parts[3:]
        if method == "POST" and rest == ["pulls"]:  # pull requests: on any repository
            status, payload = self._create_pull("/".join(parts[1:3]), raw)
            return status, payload, rate
        if method == "GET" and rest == ["pulls"]:  # the listing: every PR created here stays open
            repo = "/".join(parts[1:3])
            rows = [self._shaped(repo, n, p) for n, p in enumerate(self.pulls, start=1) if p["repo"] == repo
                    and (not query.get("base") or p.get("base") == query["base"])]
            return 200, list(reversed(rows)) if query.get("state", "open") in ("open", "all") else [], rate
        if method != "GET" or "/".join(parts[1:3]) != REPO:
            return 404, _error("Not Found", 404), rate
        if rest[0] == "compare" and len(rest) == 2 and "..." in rest[1]:
            return self._compare(req, url.path, query, rest[1], rate)
        if rest == ["commits"]:
            return self._commits(req, url.path, query, rate)
        if rest[0] == "commits" and len(rest) == 2:
            return (*self._commit(rest[1], accept), rate)
        if rest[0] == "contents" and len(rest) > 1:
            status, payload, ctype = self._contents("/".join(rest[1:]), query.get("ref", ""), accept)
            return status, payload, {**rate, **({"Content-Type": ctype} if ctype else {})}
        return 404, _error("Not Found", 404), rate

    def _page(self, req, path: str, query: dict, total: int) -> tuple[slice, dict]:
        """One page and its Link header, as GitHub pages (``http_stub.page``)."""
        return http_stub.page(req, self.base, path, query, total)

    def _compare(self, req, path: str, query: dict, basehead: str, rate: dict) -> tuple[int, object, dict]:
        old, new = basehead.split("...", 1)
        order = [c["sha"] for c in self.history]
        if old not in order or new not in order:
            return 404, _error("Not Found", 404), rate
        i, j = order.index(old), order.index(new)
        between = self.history[i + 1: j + 1]  # first-parent history: one side is always empty
        window, links = self._page(req, path, query, len(between))
        shaped = spec.example("get", "/repos/{owner}/{repo}/compare/{basehead}")
        shaped.update({
            "url": f"https://api.github.com/repos/{REPO}/compare/{old}...{new}",
            "html_url": f"https://github.com/{REPO}/compare/{old}...{new}",
            "permalink_url": f"https://github.com/{REPO}/compare/{old}...{new}",
            "status": "identical" if i == j else "ahead" if j > i else "behind",
            "ahead_by": max(0, j - i), "behind_by": max(0, i - j),
            "total_commits": len(between), "commits": [self._api_commit(c) for c in between[window]],
            "base_commit": self._api_commit(self.history[order.index(old)]),
            "merge_base_commit": self._api_commit(self.history[order.index(old)]), "files": []})
        return 200, shaped, {**rate, **links}

    def _commits(self, req, path: str, query: dict, rate: dict) -> tuple[int, object, dict]:
        head, touched = query.get("sha", ""), query.get("path", "")
        head = self.branches.get(head, head)
        order = [c["sha"] for c in self.history]
        if head not in order:
            return 404, _error(f"No commit found for SHA: {head}", 404), rate
        touching = [c for c in reversed(self.history[: order.index(head) + 1])
                    if not touched or any(f == touched or f.startswith(touched.rstrip("/") + "/") for f in c["files"])]
        window, links = self._page(req, path, query, len(touching))
        return 200, [self._api_commit(c) for c in touching[window]], {**rate, **links}

    def _commit(self, ref: str, accept: str) -> tuple[int, object]:
        sha = self.branches.get(ref, ref)
        if sha not in self.commits:
            if self.unknown_ref_status == 404:
                return 404, _error("Not Found", 404)
            return 422, {"message": f"No commit found for SHA: {ref}", "documentation_url": DOCS, "status": "422"}
        if SHA_MEDIA in accept:
            return 200, sha.encode()
        known = next((c for c in self.history if c["sha"] == sha), {"sha": sha, "title": "x"})
        return 200, self._api_commit(known, full=True)

    def _contents(self, path: str, ref: str, accept: str) -> tuple[int, object, str | None]:
        if ref not in self.commits:
            return 404, _error(f"No commit found for the ref {ref}", 404), None
        text = self._file(path, ref)
        if text is None:
            return 404, _error("Not Found", 404), None
        if "raw" in accept:
            return 200, text, "text/plain; charset=utf-8"
        shaped = spec.example("get", "/repos/{owner}/{repo}/contents/{path}",
                              name="response-if-content-is-a-file")
        shaped.update({"name": path.rsplit("/", 1)[-1], "path": path, "size": len(text.encode()),
                       "content": base64.b64encode(text.encode()).decode(), "encoding": "base64"})
        return 200, shaped, None

    def _inherited(self, table: dict, ref: str):
        """``table[ref]``, else (a commit of ``history``) the value of the newest commit before it
        that has one: a file keeps its content until a commit changes it."""
        if ref in table:
            return table[ref]
        order = [c["sha"] for c in self.history]
        if ref not in order:
            return None
        for c in reversed(self.history[: order.index(ref)]):
            if c["sha"] in table:
                return table[c["sha"]]
        return None

    def _file(self, path: str, ref: str) -> str | None:
        torch = self._inherited(self.torch, ref)
        if path == TORCH_FILE and torch is not None:
            return ("{ buildPythonPackage, ... }:\nbuildPythonPackage rec {\n"
                    f'  pname = "torch";\n  version = "{torch}";\n  pyproject = true;\n}}\n')
        if path == CUDA_FILE:
            sets = sorted(self._inherited(self.cuda_sets, ref) or set())
            alias = self._inherited(self.cuda_default, ref)
            return ("{\n" + (f"  cudaPackages = {alias};\n" if alias else "")
                    + "".join(f"  {s} = callPackage ./cuda-packages.nix "
                              f'{{ cudaMajorMinorVersion = "{s[13:].replace("_", ".")}"; }};\n' for s in sets)
                    + "}\n")
        return None

    def _create_pull(self, repo: str, raw: bytes) -> tuple[int, object]:
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            return 400, _error("Problems parsing JSON", 400)
        missing = [k for k in ("head", "base") if not isinstance(payload.get(k), str)]
        if missing or self.pull_status != 201:
            errors = [{"resource": "PullRequest", "field": k, "code": "missing_field"} for k in missing]
            return 422, {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS, "status": "422"}
        self.pulls.append({"repo": repo, **payload})
        return 201, self._shaped(repo, len(self.pulls), self.pulls[-1])

    @staticmethod
    def _shaped(repo: str, n: int, payload: dict) -> dict:
        shaped = shapes.pull_request(repo, n, title=payload.get("title", ""), body=payload.get("body"),
                                     head=payload["head"].split(":")[-1], head_sha="0" * 40, base=payload["base"],
                                     base_sha="1" * 40, draft=bool(payload.get("draft")))
        shaped["html_url"] = f"https://github.test/pr/{n}"
        return shaped

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def channels_url(self) -> str:
        return self.base + "channels/"

    @property
    def api_url(self) -> str:
        return self.base + "api/"

    @property
    def tarball_url(self) -> str:
        return self.base + "archive/"

    def _api_commit(self, c: dict, full: bool = False) -> dict:
        """A commit as GitHub lists it (the spec's example, this commit's facts); ``full``: as
        ``commits/{ref}`` gives it (with stats and files: none here)."""
        if full:
            shaped = spec.example("get", "/repos/{owner}/{repo}/commits/{ref}")
            shaped["files"] = []
        else:
            shaped = spec.example("get", "/repos/{owner}/{repo}/commits")[0]
        sha = c["sha"]
        order = [h["sha"] for h in self.history]
        parent = order[order.index(sha) - 1] if sha in order and order.index(sha) else None
        shaped["parents"] = [{"sha": parent, "url": f"https://api.github.com/repos/{REPO}/commits/{parent}",
                              "html_url": f"https://github.com/{REPO}/commit/{parent}"}] if parent else []
        shaped.update({"sha": sha, "node_id": f"C_{sha[:12]}", "html_url": f"https://github.com/{REPO}/commit/{sha}",
                       "url": f"https://api.github.com/repos/{REPO}/commits/{sha}",
                       "comments_url": f"https://api.github.com/repos/{REPO}/commits/{sha}/comments"})
        shaped["commit"]["message"] = c["title"] + "\n\nbody text"
        when = self.dates.get(sha, "2025-01-01T00:00:00Z")
        shaped["commit"]["author"]["date"] = shaped["commit"]["committer"]["date"] = when
        return shaped

    def add_commit(self, sha: str, title: str = "misc: update", files=("README.md",), *, torch: str | None = None,
                   cuda_sets=None) -> None:
        """Append a commit to ``history``; ``torch``: the version its torch file says from then on
        (the file is then among ``files``), ``cuda_sets``: the CUDA sets defined from then on."""
        self.commits.add(sha)
        if torch is not None:
            self.torch[sha] = torch
            files = (*files, TORCH_FILE) if TORCH_FILE not in files else files
        if cuda_sets is not None:
            self.cuda_sets[sha] = set(cuda_sets)
        self.history.append({"sha": sha, "title": title, "files": list(files)})

    def add_rev(self, rev: str, torch: str, cuda_sets=()) -> None:
        self.commits.add(rev)
        self.torch[rev] = torch
        self.cuda_sets[rev] = set(cuda_sets)

    def __enter__(self) -> FakeNixpkgs:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _error(message: str, status: int) -> dict:
    """GitHub's error body (``basic-error``)."""
    return {"message": message, "documentation_url": DOCS, "status": str(status)}
