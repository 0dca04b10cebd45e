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
``cuda_default`` (rev -> ``cudaPackages_X_Y``) adds the plain ``cudaPackages`` alias; ``dates`` (sha ->
ISO date) is each commit's committer date in the commits API.

It also serves each known commit's source tarball at ``.tarball_url`` + ``<rev>.tar.gz``: a
small real ``.tar.gz`` (``nixpkgs-<rev>/default.nix``, deterministic bytes, different per
rev) that ``nix-prefetch-url --unpack`` hashes like the real one; ``tarballs = False``
answers 404 for them (an unreachable tarball)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

TORCH_FILE = "pkgs/development/python-modules/torch/source/default.nix"
CUDA_FILE = "pkgs/top-level/all-packages.nix"
MAX_PER_PAGE = 100  # GitHub's cap on per_page


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
    def __init__(self):
        self.channels: dict[str, str] = {}
        self.commits: set[str] = set()
        self.branches: dict[str, str] = {}  # nixpkgs branch name -> sha (commits API)
        self.torch: dict[str, str] = {}
        self.cuda_sets: dict[str, set[str]] = {}
        self.mode = "ok"
        self.pulls: list[dict] = []
        self.requests: list[str] = []
        self.pull_status = 201
        self.tarballs = True
        self.history: list[dict] = []
        self.cuda_default: dict[str, str] = {}
        self.dates: dict[str, str] = {}  # sha -> committer date (ISO); unset: 2025-01-01T00:00:00Z
        self.tarball_gets: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, ctype="application/json", headers=None):
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                fake.requests.append("GET " + self.path)
                if fake.mode == "down":
                    return self._send(503, "unavailable", "text/plain")
                if fake.mode == "garbage":
                    return self._send(200, "<html>oops</html>", "text/html")
                url = urlparse(self.path)
                parts = url.path.strip("/").split("/")
                if parts[0] == "archive" and len(parts) == 2 and parts[1].endswith(".tar.gz"):
                    rev = parts[1][: -len(".tar.gz")]
                    fake.tarball_gets.append(rev)
                    if fake.tarballs and rev in fake.commits:
                        return self._send(200, tarball_bytes(rev), "application/x-gzip")
                    return self._send(404, "Not Found", "text/plain")
                if parts[0] == "channels" and len(parts) == 3 and parts[2] == "git-revision":
                    rev = fake.channels.get(parts[1])
                    return self._send(200, rev, "text/plain") if rev is not None else self._send(404, "no")
                if parts[:4] == ["api", "repos", "NixOS", "nixpkgs"] and len(parts) >= 5:
                    query = {k: v[0] for k, v in parse_qs(url.query).items()}
                    per_page = min(MAX_PER_PAGE, max(1, int(query.get("per_page", 30))))  # GitHub caps it at 100
                    page = max(1, int(query.get("page", 1)))
                    window = slice((page - 1) * per_page, page * per_page)
                    if parts[4] == "compare" and "..." in parts[5]:
                        old, new = parts[5].split("...", 1)
                        order = [c["sha"] for c in fake.history]
                        if old not in order or new not in order:
                            return self._send(404, json.dumps({"message": "Not Found"}))
                        i, j = order.index(old), order.index(new)
                        between = fake.history[i + 1: j + 1]
                        status = "identical" if i == j else "ahead" if j > i else "behind"
                        return self._send(200, json.dumps({
                            "status": status, "ahead_by": max(0, j - i), "behind_by": max(0, i - j),
                            "html_url": f"https://github.com/NixOS/nixpkgs/compare/{old}...{new}",
                            "total_commits": len(between),
                            "commits": [fake._api_commit(c) for c in between[window]]}))
                    if parts[4] == "commits" and len(parts) == 5:
                        head, path = query.get("sha", ""), query.get("path", "")
                        head = fake.branches.get(head, head)
                        order = [c["sha"] for c in fake.history]
                        if head not in order:
                            return self._send(404, json.dumps({"message": "No commit found"}))
                        touching = [c for c in reversed(fake.history[: order.index(head) + 1])
                                    if any(f == path or f.startswith(path.rstrip("/") + "/") for f in c["files"])]
                        links = fake._links(self, url.path, query, len(touching), per_page, page)
                        return self._send(200, json.dumps([fake._api_commit(c) for c in touching[window]]),
                                          headers=links)
                    if parts[4] == "commits":
                        sha = fake.branches.get(parts[5], parts[5])
                        if sha in fake.commits:
                            when = {"name": "nixpkgs", "email": "n@example.org",
                                    "date": fake.dates.get(sha, "2025-01-01T00:00:00Z")}
                            return self._send(200, json.dumps({"sha": sha, "commit": {
                                "message": "x", "author": when, "committer": when}}))
                        return self._send(404, json.dumps({"message": "No commit found"}))
                    if parts[4] == "contents":
                        path = "/".join(parts[5:])
                        ref = parse_qs(url.query).get("ref", [""])[0]
                        if ref not in fake.commits:
                            return self._send(404, json.dumps({"message": "No commit found for the ref"}))
                        torch = fake._inherited(fake.torch, ref)
                        if path == TORCH_FILE and torch is not None:
                            body = (
                                "{ buildPythonPackage, ... }:\nbuildPythonPackage rec {\n"
                                f'  pname = "torch";\n  version = "{torch}";\n  pyproject = true;\n}}\n'
                            )
                            return self._send(200, body, "text/plain")
                        if path == CUDA_FILE:
                            sets = sorted(fake._inherited(fake.cuda_sets, ref) or set())
                            alias = fake._inherited(fake.cuda_default, ref)
                            body = (
                                "{\n"
                                + (f"  cudaPackages = {alias};\n" if alias else "")
                                + "".join(
                                    f'  {s} = callPackage ./cuda-packages.nix '
                                    f'{{ cudaMajorMinorVersion = "{s[13:].replace("_", ".")}"; }};\n'
                                    for s in sets
                                )
                                + "}\n"
                            )
                            return self._send(200, body, "text/plain")
                        return self._send(404, json.dumps({"message": "Not Found"}))
                return self._send(404, json.dumps({"message": "Not Found"}))

            def do_POST(self):
                fake.requests.append("POST " + self.path)
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                if fake.mode == "down":
                    return self._send(503, "unavailable", "text/plain")
                parts = urlparse(self.path).path.strip("/").split("/")
                if parts[0] == "api" and parts[1] == "repos" and parts[-1] == "pulls":
                    if fake.pull_status != 201:
                        return self._send(fake.pull_status, json.dumps({"message": "Validation Failed"}))
                    fake.pulls.append({"repo": "/".join(parts[2:4]), **payload})
                    n = len(fake.pulls)
                    return self._send(201, json.dumps({"number": n, "html_url": f"https://github.test/pr/{n}"}))
                return self._send(404, json.dumps({"message": "Not Found"}))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

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

    def _api_commit(self, c: dict) -> dict:
        order = [h["sha"] for h in self.history]
        i = order.index(c["sha"])
        parent = order[i - 1] if i else None
        parents = [{"sha": parent, "url": f"{self.api_url}repos/NixOS/nixpkgs/commits/{parent}"}] if parent else []
        return {"sha": c["sha"], "html_url": f"https://github.com/NixOS/nixpkgs/commit/{c['sha']}",
                "commit": {"message": c["title"] + "\n\nbody text"}, "parents": parents}

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

    def _links(self, req, path: str, query: dict, total: int, per_page: int, page: int) -> dict:
        """GitHub's ``Link`` header (next/last, prev/first) for a paged listing."""
        last = max(1, -(-total // per_page))
        host = req.headers.get("Host") or self.base.split("//", 1)[1].rstrip("/")

        def link(n: int) -> str:
            return f"http://{host}{path}?{urlencode({**query, 'per_page': per_page, 'page': n})}"

        rels = []
        if page < last:
            rels += [f'<{link(page + 1)}>; rel="next"', f'<{link(last)}>; rel="last"']
        if page > 1:
            rels += [f'<{link(page - 1)}>; rel="prev"', f'<{link(1)}>; rel="first"']
        return {"Link": ", ".join(rels)} if rels else {}

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
