"""Running builds: the local backend and the dispatch to a backend.

``prepare`` reads git (through the git adapter) and the state DB and returns a
:class:`~release.builds.plan.BuildPlan`; ``run_local`` runs ``Settings.build_command`` (a
template with ``{package}``) for each variant in a temporary ``git worktree`` of the branch, at
most N at once, one log file per build, with a timeout and a final check of the result link
(the process adapter ``release.adapters.flox``); every state change is written to the state
DB from one thread. ``build`` picks the backend (local, or GitHub Actions in
``release.builds.github``).

May import: config, release.context, release.state, release.adapters, release.builds.plan.
"""

from __future__ import annotations

import queue
import shlex
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

from config.errors import RefusedError, UsageError
from release.adapters.flox import Outcome, run_build
from release.adapters.git import RECIPE_DIR, list_recipes, read_blobs, resolve_branch, worktree
from release.adapters.git import run_git as git  # noqa: F401  (callers use builds.run.git)
from release.builds.plan import (BuildItem, BuildPlan, place_github, place_local, plan_items, select_packages,
                                 with_targets)
from release.context import repo_path
from release.recipes.platforms import recipe_catalog

_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def host_platform() -> str:
    """This machine as a Nix platform (``x86_64-linux``, ``aarch64-darwin``)."""
    import platform
    import sys

    machine = platform.machine().lower()
    system = "darwin" if sys.platform == "darwin" else sys.platform.split("-")[0].rstrip("0123456789")
    return f"{_MACHINES.get(machine, machine)}-{system}"


def build_platforms(settings) -> list[str]:
    """The platforms the local backend builds: TORCHBOT_BUILD_PLATFORMS, else this host's."""
    return list(getattr(settings, "build_platforms", None) or [host_platform()])

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
    items = with_targets(items, texts, recipe_catalog())
    if backend == "github":
        s = ctx.settings
        items, skipped = place_github(items, s.github_runners, s.github_big_parallel_runners)
    else:
        items, skipped = place_local(items, build_platforms(ctx.settings))
    return BuildPlan(path, branch, commit, items, unchanged, backend, skipped)


def _catalog_pin(ctx, branch: str) -> str | None:
    try:
        b = ctx.catalog.branches.get(branch)
    except Exception:  # a catalog that cannot load must not stop a build
        return None
    return b.pin if b else None




def format_command(template: str, package: str, ctx) -> str:
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
                    out = run_build(
                        format_command(s.build_command, item.package, ctx), wt,
                        log_dir / f"{item.package}-{ids[item.package]}.log", s.build_timeout,
                        wt / link_tpl.format(package=item.package),
                        format_command(check_tpl, item.package, ctx) if check_tpl else None,
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
    """Run a plan with its backend; the variants it skips are listed after the builds."""
    if plan.backend == "github":
        from release.builds.github import dispatch_build

        rows = dispatch_build(ctx, plan)
    elif plan.backend != "local":
        raise UsageError(f"Unknown build backend '{plan.backend}' (local or github).")
    else:
        rows = run_local(ctx, plan, jobs)
    return rows + [{"package": s.package, "branch": plan.branch, "backend": plan.backend, "state": "skipped",
                    "platform": s.platform, "message": s.reason} for s in plan.skipped]


def status(ctx, branch: str | None = None) -> list[dict]:
    from release.state import state_for

    st = state_for(ctx)
    st.mark_interrupted()
    return [b.to_dict() for b in st.builds(branch)]
