"""GitHub Actions runners for the fake GitHub (tests/support/fakes_github.py ``runner=``): each
matrix job of a dispatched run is executed as GitHub would, from the rendered build workflow
(release/templates/build-workflow.yml), on a machine of the platform its ``runs_on`` labels name
(``Settings.github_runners``), with the ``flox`` and ``nix`` shims (tests/support/shim_tools.py)
first on PATH, so what runs where is logged.

Per job: a fresh runner (its own store, ``RUNNER_TEMP``, ``GITHUB_ENV``); the checkout is the
dispatch ref's commit in ``git_dir`` (the shims read recipes from it); steps run in order, ``uses``
steps skipped, ``if:`` evaluated (the expressions the template uses: ``inputs.*``, ``!``, ``&&``,
``!=``/``==`` against string literals), ``env:`` filled from ``inputs``, ``matrix`` and ``secrets``,
each ``run:`` with ``bash -e`` (GitHub's default shell); lines written to ``GITHUB_ENV`` reach
the later steps. The pytorch matrix runs first, then the companions (``needs: pytorch``), at most
``workers`` jobs at once. A job's result is whether every step exited 0; the fake reports a job
completed only once its runner finished.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ruamel.yaml import YAML

SHIMS = Path(__file__).parent / "shims"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def shim_env(log: Path, host: str, platform: str, store: Path, **extra: str) -> dict[str, str]:
    """The environment of a machine whose flox and nix are the shims."""
    env = {**os.environ, "PATH": f"{SHIMS}{os.pathsep}{os.environ.get('PATH', '')}", "SHIM_LOG": str(log),
           "SHIM_HOST": host, "SHIM_PLATFORM": platform, "SHIM_STORE": str(store)}
    env.update(extra)
    return env


def read_log(log: Path) -> list[dict]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


class _Execution:
    def __init__(self) -> None:
        self.results: dict[str, bool] = {}
        self.lock = threading.Lock()

    def done(self, pkg: str) -> bool:
        with self.lock:
            return pkg in self.results

    def ok(self, pkg: str) -> bool | None:
        with self.lock:
            return self.results.get(pkg)


class Runners:
    def __init__(self, git_dir: Path, workflow: str, runners: dict[str, list[str]], work: Path, log: Path, *,
                 secrets: dict[str, str] | None = None, workers: int = 2, catalog_refuses: str | None = None):
        self.git_dir, self.work, self.log = Path(git_dir), Path(work), Path(log)
        self.wf = YAML(typ="safe").load(workflow)
        self.platform_of = {tuple(labels): p for p, labels in runners.items()}
        self.secrets = dict(secrets or {})
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.catalog_refuses = catalog_refuses
        self._n = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def start(self, run: dict, inputs: dict, fail: set[str] = frozenset()) -> _Execution:
        ex = _Execution()
        sha = subprocess.run(["git", f"--git-dir={self.git_dir}", "rev-parse", f"refs/heads/{run['ref']}"],
                             capture_output=True, text=True, check=True).stdout.strip()
        threading.Thread(target=self._run, args=(ex, sha, inputs, fail), daemon=True).start()
        return ex

    def _run(self, ex: _Execution, sha: str, inputs: dict, fail: set[str]) -> None:
        for job_id in ("pytorch", "companions"):
            entries = json.loads(inputs.get(job_id) or "[]")
            jobs = [self.pool.submit(self._job, job_id, e, sha, inputs, e["package"] in fail) for e in entries]
            for e, j in zip(entries, jobs, strict=True):
                try:
                    ok = j.result()
                except Exception:  # noqa: BLE001  a broken stand-in fails its job, as a runner crash does
                    ok = False
                with ex.lock:
                    ex.results[e["package"]] = ok

    def _job(self, job_id: str, entry: dict, sha: str, inputs: dict, failing: bool) -> bool:
        if failing:
            return False
        platform = self.platform_of.get(tuple(entry.get("runs_on") or ()))
        if platform is None:  # no runner has these labels: GitHub would leave it queued; here it fails
            return False
        with self._lock:
            self._n += 1
            n = self._n
        home = Path(tempfile.mkdtemp(prefix=f"job{n}-", dir=self.work))
        (home / "tmp").mkdir()
        genv = home / "github_env"
        genv.touch()
        env = shim_env(self.log, "runner", platform, home / "store", SHIM_GIT_DIR=str(self.git_dir), SHIM_SHA=sha,
                       RUNNER_TEMP=str(home / "tmp"), GITHUB_ENV=str(genv), RUNNER_NAME=f"{platform}-{n}",
                       SHIM_BRANCH=str(inputs.get("branch") or ""), SHIM_TARGET=str(entry.get("platform") or ""),
                       SHIM_PUBLISH=str(inputs.get("publish") or "false"))
        if self.catalog_refuses:
            env["SHIM_CATALOG_REFUSES"] = self.catalog_refuses
        ctx = {"inputs": {k: _typed(v) for k, v in inputs.items()}, "matrix": entry, "secrets": self.secrets}
        for step in self.wf["jobs"][job_id]["steps"]:
            if "uses" in step:
                continue
            if "if" in step and not _truthy(_eval(step["if"], ctx)):
                continue
            step_env = {k: _fill(str(v), ctx) for k, v in (step.get("env") or {}).items()}
            for line in genv.read_text().splitlines():
                name, _, value = line.partition("=")
                step_env[name] = value
            proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=home, env={**env, **step_env},
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                return False
        return True


def _typed(value):
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def _lookup(path: str, ctx: dict):
    head, _, rest = path.partition(".")
    value = ctx.get(head, {})
    for part in rest.split(".") if rest else []:
        value = value.get(part, "") if isinstance(value, dict) else ""
    return value


def _eval(expr: str, ctx: dict):
    """The expression language as far as the template uses it."""
    m = _EXPR.fullmatch(expr.strip())
    body = m.group(1) if m else expr
    py = re.sub(r"\b(inputs|matrix|secrets)\.[A-Za-z_][A-Za-z0-9_.]*",
                lambda t: repr(_lookup(t.group(0), ctx)), body)
    py = py.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py)
    return eval(py, {"__builtins__": {}}, {"true": True, "false": False})


def _truthy(value) -> bool:
    return bool(value) and value != "false"


def _fill(text: str, ctx: dict) -> str:
    def one(m):
        v = _eval(m.group(0), ctx)
        return ("true" if v else "false") if isinstance(v, bool) else str(v)

    return _EXPR.sub(one, text)
