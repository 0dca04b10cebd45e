"""Builds of a branch's variants.

Pure part (no I/O): which variants a build covers (globs, --changed-only against the last
successful recipe blob, --resume), the companion -> pytorch ordering, the pin of a recipe.
Adapter part: the local backend, which runs ``Settings.build_command`` (a template with
``{package}``) for each variant in a temporary ``git worktree`` of the branch, at most N at
once, one log file per build, with a timeout and a final check of the result link; every
state change is written to the state DB from one thread.
"""

from __future__ import annotations

import fnmatch
import os
import queue
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from config.errors import ExternalError, RefusedError, UsageError

RECIPE_DIR = ".flox/pkgs"
KINDS = ("pytorch", "torchvision", "torchaudio")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_PIN_RE = re.compile(r"nixpkgs/archive/([0-9a-f]{7,40})")
_IMPORT_RE = re.compile(r"import\s+\./((?:pytorch)[A-Za-z0-9._+-]*)\.nix")

# ---------------------------------------------------------------------------------------
# Pure part


@dataclass(frozen=True)
class BuildItem:
    package: str
    blob: str
    pin: str | None = None
    after: str | None = None  # the pytorch variant a companion waits for (when in this build)

    @property
    def kind(self) -> str:
        return self.package.split("-", 1)[0]


@dataclass
class BuildPlan:
    repo: Path
    branch: str
    commit: str
    items: list[BuildItem]
    unchanged: list[str] = field(default_factory=list)
    backend: str = "local"

    def to_dict(self) -> dict:
        return {
            "branch": self.branch,
            "commit": self.commit,
            "backend": self.backend,
            "build": [
                {"package": i.package, "recipe_blob": i.blob, "pin": i.pin, "after": i.after} for i in self.items
            ],
            "unchanged": list(self.unchanged),
        }

    def text(self) -> str:
        lines = [f"Build {len(self.items)} variant(s) of {self.branch} at {self.commit[:12]} ({self.backend})."]
        for i in self.items:
            lines.append(f"  {i.package}" + (f"  (after {i.after})" if i.after else ""))
        if self.unchanged:
            lines.append(f"{len(self.unchanged)} unchanged since their last successful build: skipped.")
        return "\n".join(lines)


def recipe_pin(text: str) -> str | None:
    """The nixpkgs commit a recipe fetches, if it names one."""
    m = _PIN_RE.search(text)
    return m.group(1) if m else None


def companion_of(package: str, text: str, packages: Iterable[str]) -> str | None:
    """The pytorch variant a torchvision/torchaudio recipe builds against: the recipe's
    ``import ./pytorch-...nix``, else the same name with the pytorch prefix."""
    kind = package.split("-", 1)[0]
    if kind == "pytorch":
        return None
    m = _IMPORT_RE.search(text)
    if m:
        return m.group(1)
    candidate = "pytorch-" + package.split("-", 1)[1]
    return candidate if candidate in set(packages) else None


def select_packages(packages: Iterable[str], globs: Iterable[str] | None) -> list[str]:
    pkgs = sorted(packages)
    globs = [g for g in (globs or []) if g]
    if not globs:
        return pkgs
    chosen = [p for p in pkgs if any(fnmatch.fnmatchcase(p, g) for g in globs)]
    return chosen


def order_items(items: list[BuildItem]) -> list[BuildItem]:
    """pytorch variants first, then companions: a stable order that respects ``after``."""
    return sorted(items, key=lambda i: (i.after is not None, i.package))


def plan_items(
    recipes: dict[str, str],
    texts: dict[str, str],
    selected: list[str],
    *,
    last_success_blobs: dict[str, str] | None = None,
) -> tuple[list[BuildItem], list[str]]:
    """The items to build for ``selected`` packages. With ``last_success_blobs`` (changed-only)
    a package is built when its blob differs from its last success, or when the pytorch
    variant it imports is being built. Returns (items, unchanged)."""
    deps = {p: companion_of(p, texts.get(p, ""), recipes) for p in selected}
    chosen = set(selected)
    if last_success_blobs is not None:
        chosen = {p for p in selected if last_success_blobs.get(p) != recipes[p]}
        chosen |= {p for p in selected if deps[p] and deps[p] in chosen}
    items = [
        BuildItem(p, recipes[p], recipe_pin(texts.get(p, "")), deps[p] if deps[p] in chosen else None)
        for p in selected
        if p in chosen
    ]
    unchanged = [p for p in selected if p not in chosen]
    return order_items(items), unchanged


# ---------------------------------------------------------------------------------------
# git adapter


def git(repo: Path, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, input=input
    )
    if proc.returncode != 0:
        raise ExternalError(f"git {' '.join(args[:2])} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def resolve_branch(repo: Path, branch: str, remote: str = "origin", fetch: bool = False) -> str:
    """The commit a branch name means: the local branch (what torchbot's bumps commit to)
    when present, else the remote-tracking one."""
    if not _SAFE.match(branch):
        raise UsageError(f"'{branch}' is not a branch name torchbot accepts.")
    if fetch:
        subprocess.run(["git", "-C", str(repo), "fetch", "--quiet", remote], capture_output=True)
    for ref in (f"refs/heads/{branch}", f"refs/remotes/{remote}/{branch}"):
        proc = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", ref + "^{commit}"],
            capture_output=True, text=True,
        )
        if proc.returncode == 0:
            return proc.stdout.strip()
    raise UsageError(f"Branch '{branch}' does not exist in {repo}.")


def list_recipes(repo: Path, commit: str) -> dict[str, str]:
    """package -> blob sha of its recipe at ``commit``."""
    out = git(repo, "ls-tree", commit, RECIPE_DIR + "/")
    recipes: dict[str, str] = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        mode, typ, sha = meta.split()
        name = path.rsplit("/", 1)[-1]
        if typ == "blob" and name.endswith(".nix"):
            pkg = name[: -len(".nix")]
            if _SAFE.match(pkg):
                recipes[pkg] = sha
    return recipes


def read_blobs(repo: Path, shas: Iterable[str]) -> dict[str, str]:
    """Blob contents in one ``git cat-file --batch`` call."""
    shas = list(dict.fromkeys(shas))
    if not shas:
        return {}
    proc = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input=("\n".join(shas) + "\n").encode(), capture_output=True,
    )
    if proc.returncode != 0:
        raise ExternalError(f"git cat-file failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    data = proc.stdout
    out: dict[str, str] = {}
    pos = 0
    for sha in shas:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].decode().split()
        pos = nl + 1
        if len(header) < 3 or header[1] == "missing":
            continue
        size = int(header[2])
        out[sha] = data[pos : pos + size].decode(errors="replace")
        pos += size + 1
    return out


@contextmanager
def worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A temporary detached worktree of ``commit``, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="torchbot-wt-"))
    path = tmp / "wt"
    git(repo, "worktree", "add", "--detach", "--quiet", str(path), commit)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(path)], capture_output=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)
        subprocess.run(["rm", "-rf", str(tmp)], capture_output=True)


def repo_path(ctx, repo: str | Path | None) -> Path:
    path = Path(repo) if repo else ctx.settings.repo_path
    if path is None:
        raise UsageError("No repository: pass --repo PATH or set TORCHBOT_REPO_PATH.")
    path = Path(path).expanduser().resolve()
    if not (path / ".git").exists() and not (path / "HEAD").exists():
        raise UsageError(f"{path} is not a git repository.")
    return path


def prepare(
    ctx,
    branch: str,
    globs: Iterable[str] | None = None,
    *,
    repo: str | Path | None = None,
    changed_only: bool = False,
    resume: bool = False,
    backend: str = "local",
    fetch: bool = False,
) -> BuildPlan:
    """What a ``release build`` would do; reads git and the state DB, changes nothing."""
    from release.state import state_for

    path = repo_path(ctx, repo)
    commit = resolve_branch(path, branch, ctx.settings.repo_remote, fetch=fetch)
    recipes = list_recipes(path, commit)
    if not recipes:
        raise UsageError(f"Branch '{branch}' has no recipes under {RECIPE_DIR}/.")
    selected = select_packages(recipes, globs)
    if not selected:
        raise UsageError(f"No variant of {branch} matches {' '.join(globs or [])}.")
    st = state_for(ctx)
    st.mark_interrupted()
    busy = [b for b in st.builds(branch) if b.state in ("queued", "running") and b.backend == "local"]
    if busy:
        raise RefusedError(
            f"{branch} is being built right now ({len(busy)} build(s) by {busy[0].owner}); "
            "wait for it, or see `torchbot release status`."
        )
    if resume:
        interrupted = {b.package for b in st.builds(branch) if b.state == "interrupted"}
        selected = [p for p in selected if p in interrupted]
    texts_by_blob = read_blobs(path, (recipes[p] for p in recipes))
    texts = {p: texts_by_blob.get(recipes[p], "") for p in recipes}
    last = None
    if changed_only:
        last = {p: b.recipe_blob for p, b in st.last_success(branch).items() if b.recipe_blob}
    items, unchanged = plan_items(recipes, texts, selected, last_success_blobs=last)
    fallback_pin = _catalog_pin(ctx, branch)
    if fallback_pin:
        items = [i if i.pin else BuildItem(i.package, i.blob, fallback_pin, i.after) for i in items]
    return BuildPlan(path, branch, commit, items, unchanged, backend)


def _catalog_pin(ctx, branch: str) -> str | None:
    try:
        b = ctx.catalog.branches.get(branch)
    except Exception:  # a catalog that cannot load must not stop a build
        return None
    return b.pin if b else None


# ---------------------------------------------------------------------------------------
# Local backend


@dataclass
class Outcome:
    state: str
    message: str = ""
    out_path: str | None = None


def _run_one(command: str, cwd: Path, log_path: Path, timeout: float, result_link: Path,
             check: str | None) -> Outcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        log.write(f"$ {command}\n")
        log.flush()
        try:
            proc = subprocess.Popen(
                command, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        except OSError as err:
            log.write(f"torchbot: could not start the build: {err}\n")
            return Outcome("failed", f"could not start: {err}")
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            log.write(f"\ntorchbot: timed out after {timeout:g} s\n")
            return Outcome("failed", f"timed out after {timeout:g} s")
        if rc != 0:
            log.write(f"\ntorchbot: build exited with status {rc}\n")
            return Outcome("failed", f"build exited with status {rc}")
        if not result_link.exists():
            log.write(f"\ntorchbot: no result at {result_link.name}\n")
            return Outcome("failed", f"the build left no {result_link.name}")
        out = os.path.realpath(result_link)
        if check:
            log.write(f"$ {check}\n")
            log.flush()
            chk = subprocess.run(check, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                 timeout=min(timeout, 600))
            if chk.returncode != 0:
                log.write(f"\ntorchbot: result check failed ({chk.returncode})\n")
                return Outcome("failed", "the result check failed", out)
        log.write(f"\ntorchbot: ok {out}\n")
        return Outcome("succeeded", "", out)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _fmt(template: str, package: str, ctx) -> str:
    return template.format(package=shlex.quote(package), org=shlex.quote(ctx.settings.flox_org))


def run_local(ctx, plan: BuildPlan, jobs: int | None = None) -> list[dict]:
    """Build ``plan`` with the local backend; returns the build rows as dicts."""
    from release.state import _RUNNING, Build, owner_id, state_for, utcnow

    st = state_for(ctx)
    s = ctx.settings
    jobs = max(1, int(jobs or s.build_jobs or 1))
    if not plan.items:
        return []
    log_dir = Path(s.log_dir).expanduser().resolve() / plan.branch
    run_key = uuid.uuid4().hex
    owner = owner_id()
    ids: dict[str, int] = {}
    with st.session() as ses:
        rows = [
            Build(package=i.package, branch=plan.branch, state="queued", backend="local", recipe_blob=i.blob,
                  pin=i.pin, commit=plan.commit, owner=owner, run_key=run_key)
            for i in plan.items
        ]
        ses.add_all(rows)
        ses.flush()
        for r in rows:
            ids[r.package] = r.id
            r.log = str(log_dir / f"{r.package}-{r.id}.log")
    for i in ids.values():
        _RUNNING[i] = True
    done: dict[str, str] = {}
    events: queue.Queue = queue.Queue()
    waiting = list(plan.items)
    inflight = 0
    check_tpl = getattr(s, "build_check_command", None)
    link_tpl = getattr(s, "build_result_link", "result-{package}")
    try:
        with worktree(plan.repo, plan.commit) as wt, ThreadPoolExecutor(max_workers=jobs) as pool:
            def work(item: BuildItem) -> None:
                try:
                    out = _run_one(
                        _fmt(s.build_command, item.package, ctx), wt,
                        log_dir / f"{item.package}-{ids[item.package]}.log", s.build_timeout,
                        wt / link_tpl.format(package=item.package),
                        _fmt(check_tpl, item.package, ctx) if check_tpl else None,
                    )
                except Exception as err:  # a broken build must not stop the others
                    out = Outcome("failed", f"internal error: {type(err).__name__}: {err}")
                events.put((item.package, out))

            finished: list[tuple[str, Outcome]] = []  # written with the next starts, one transaction
            while waiting or inflight:
                started = []
                for item in list(waiting):
                    if inflight >= jobs:
                        break
                    if item.after and item.after not in done:
                        continue
                    waiting.remove(item)
                    if item.after and done[item.after] != "succeeded":
                        _skip(st, ids[item.package], log_dir / f"{item.package}-{ids[item.package]}.log",
                              f"not built: its pytorch variant {item.after} {done[item.after]}")
                        done[item.package] = "failed"
                        continue
                    started.append(item)
                    inflight += 1
                if started or finished:
                    _record(st, ids, finished, started)
                    finished = []
                for item in started:
                    pool.submit(work, item)
                if not inflight:
                    continue
                finished.append(events.get())
                while True:
                    try:
                        finished.append(events.get_nowait())
                    except queue.Empty:
                        break
                for pkg, out in finished:
                    done[pkg] = out.state
                    inflight -= 1
            if finished:
                _record(st, ids, finished, [])
                finished = []
    finally:
        for i in ids.values():
            _RUNNING.pop(i, None)
        with st.session() as ses:
            for b in ses.query(Build).filter(Build.run_key == run_key, Build.state.in_(("queued", "running"))):
                b.state, b.finished = "interrupted", utcnow()
                b.message = "the build run stopped before this build ended"
    with st.session() as ses:
        return [b.to_dict() for b in ses.query(Build).filter(Build.run_key == run_key).order_by(Build.id)]


def _record(st, ids: dict[str, int], finished: list, started: list) -> None:
    from release.state import Build, utcnow

    now = utcnow()
    with st.session() as ses:
        for pkg, out in finished:
            b = ses.get(Build, ids[pkg])
            b.state, b.finished, b.message, b.out_path = out.state, now, out.message or None, out.out_path
        for item in started:
            b = ses.get(Build, ids[item.package])
            b.state, b.started = "running", now


def _skip(st, build_id: int, log_path: Path, message: str) -> None:
    from release.state import Build, utcnow

    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(f"torchbot: {message}\n")
    with st.session() as ses:
        b = ses.get(Build, build_id)
        b.state, b.finished, b.message = "failed", utcnow(), message


def build(ctx, plan: BuildPlan, jobs: int | None = None) -> list[dict]:
    """Run a plan with its backend."""
    if plan.backend == "github":
        from release.github_actions import dispatch_build

        return dispatch_build(ctx, plan)
    if plan.backend != "local":
        raise UsageError(f"Unknown build backend '{plan.backend}' (local or github).")
    return run_local(ctx, plan, jobs)


def status(ctx, branch: str | None = None) -> list[dict]:
    from release.state import state_for

    st = state_for(ctx)
    st.mark_interrupted()
    return [b.to_dict() for b in st.builds(branch)]
