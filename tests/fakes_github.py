"""A fake GitHub Actions API on 127.0.0.1 (threaded http.server) for the github build
backend: workflow_dispatch creates a run whose name carries the inputs' request id, with
one job per variant in the ``pytorch`` and ``companions`` JSON inputs. Every GET of a run's
jobs advances the run one step: queued -> in_progress -> completed; variants in
``fail`` conclude "failure". The matrix inputs are lists of ``{"package", "platform",
"runs_on"}`` entries (plain names are accepted too). ``dispatches`` keeps each dispatch
(workflow file, payload: ``ref`` and ``inputs``);
``requests`` every (method, path). A wrong bearer token answers 401.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


class FakeGitHub:
    def __init__(self, repo: str = "acme/build-pytorch", token: str = "ghp-test", fail: set[str] | None = None):
        self.repo, self.token, self.fail = repo, token, set(fail or ())
        self.lock = threading.Lock()
        self.dispatches: list[tuple[str, dict]] = []
        self.requests: list[tuple[str, str]] = []
        self.runs: dict[int, dict] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                fake._handle(self, "GET")

            def do_POST(self):
                fake._handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def _send(self, req, status, payload=None):
        data = b"" if payload is None else json.dumps(payload).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def _job(self, run: dict, pkg: str, idx: int) -> dict:
        step = run["step"]
        status = ("queued", "in_progress", "completed")[min(step, 2)]
        job = {"id": run["id"] * 100 + idx, "name": pkg, "status": status, "conclusion": None,
               "started_at": "2026-01-01T00:00:00Z" if step >= 1 else None, "completed_at": None,
               "html_url": f"https://github.com/{self.repo}/actions/runs/{run['id']}/job/{run['id'] * 100 + idx}"}
        if status == "completed":
            job["conclusion"] = "failure" if pkg in self.fail else "success"
            job["completed_at"] = "2026-01-01T00:10:00Z"
        return job

    def _handle(self, req, method: str) -> None:
        path = urlparse(req.path).path
        length = int(req.headers.get("Content-Length") or 0)
        body = json.loads(req.rfile.read(length)) if length else {}
        with self.lock:
            self.requests.append((method, path))
            if req.headers.get("Authorization") != f"Bearer {self.token}":
                return self._send(req, 401, {"message": "Bad credentials"})
            prefix = f"/repos/{self.repo}/actions/"
            if not path.startswith(prefix):
                return self._send(req, 404, {"message": "Not Found"})
            rest = path[len(prefix):].split("/")
            if method == "POST" and rest[0] == "workflows" and rest[2:] == ["dispatches"]:
                self.dispatches.append((rest[1], body))
                inputs = body.get("inputs", {})
                rid = 1000 + len(self.runs)
                entries = json.loads(inputs.get("pytorch", "[]")) + json.loads(inputs.get("companions", "[]"))
                pkgs = [e["package"] if isinstance(e, dict) else e for e in entries]
                self.runs[rid] = {"id": rid, "step": 0, "packages": pkgs, "workflow": rest[1], "ref": body.get("ref"),
                                  "entries": entries,
                                  "name": f"torchbot {inputs.get('branch')} {inputs.get('request_id')}"}
                return self._send(req, 204)
            if method == "GET" and rest[0] == "workflows" and rest[2:] == ["runs"]:
                runs = [self._run(r) for r in reversed(self.runs.values()) if r["workflow"] == rest[1]]
                return self._send(req, 200, {"total_count": len(runs), "workflow_runs": runs})
            if method == "GET" and rest[0] == "runs" and len(rest) >= 2 and int(rest[1]) in self.runs:
                run = self.runs[int(rest[1])]
                if rest[2:] == ["jobs"]:
                    jobs = [self._job(run, p, i) for i, p in enumerate(run["packages"])]
                    run["step"] += 1
                    return self._send(req, 200, {"total_count": len(jobs), "jobs": jobs})
                return self._send(req, 200, self._run(run))
            return self._send(req, 404, {"message": "Not Found"})

    def _run(self, run: dict) -> dict:
        step = run["step"]
        status = ("queued", "in_progress", "completed")[min(step, 2)]
        concl = None
        if status == "completed":
            concl = "failure" if self.fail & set(run["packages"]) else "success"
        return {"id": run["id"], "name": "torchbot build", "display_title": run["name"], "status": status,
                "conclusion": concl, "event": "workflow_dispatch",
                "html_url": f"https://github.com/{self.repo}/actions/runs/{run['id']}"}
