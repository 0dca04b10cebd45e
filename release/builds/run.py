"""Preparing and dispatching builds.

``prepare`` reads git (through the git adapter) and the state DB and returns a
:class:`~release.builds.plan.BuildPlan`: it first resolves build runs a stopped torchbot left
behind (``release.builds.recover``), and lists variants another build holds as skipped
("already building since …"); a GitHub build still running at the same commit (a killed
torchbot's) is adopted, not dispatched twice. ``build`` runs a plan with its backend: local
(``release.builds.local``) or GitHub Actions (``release.builds.github``). ``status`` lists
build states.

May import: config, release.context, release.state, release.adapters, release.builds.plan,
release.builds.local, release.builds.recover.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import select

from config.errors import RefusedError, UsageError
from config.progress import Progress
from release.adapters.flox import local_builder
from release.adapters.git import RECIPE_DIR, list_recipes, read_blobs, resolve_branch
from release.adapters.git import run_git as git  # noqa: F401  (callers use builds.run.git)
from release.builds.local import busy_reason, format_command, run_local  # noqa: F401  (re-exported)
from release.builds.plan import (
    BuildItem,
    BuildPlan,
    hold_back,
    longest_first,
    place_github,
    place_local,
    plan_items,
    select_packages,
    with_targets,
)
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


def local_tool(settings) -> str:
    """How local builds run on this host, as torchbot says it at start (flox, else nix-build)."""
    return local_builder(settings.build_command).describe()


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
    head: str | None = None,
) -> BuildPlan:
    """What a ``release build`` would do; reads git and the state DB, changes nothing. The
    github backend builds what the remote has (``github_commit``): ``head`` (a bump PR's head
    branch) or the branch's remote head."""
    from release.state import state_for

    path = repo_path(ctx, repo)
    github = companion_github(ctx, path, backend)
    if backend == "github":
        commit = github_commit(path, branch, head, ctx.settings.repo_remote)
    elif head:
        raise UsageError("--head (a pull request's branch) is for the github backend; a local build "
                         "builds the local branch.")
    else:
        commit = resolve_branch(path, branch, ctx.settings.repo_remote, fetch=fetch)
    recipes = list_recipes(path, commit)
    if not recipes:
        raise UsageError(f"Branch '{branch}' has no recipes under {RECIPE_DIR}/.")
    selected = select_packages(recipes, globs)
    if not selected:
        raise UsageError(f"No variant of {branch} matches {' '.join(globs or [])}.")
    from release.builds.recover import reconcile

    st = state_for(ctx)
    reconcile(ctx)
    tool = None
    if backend == "local":
        builder = local_builder(ctx.settings.build_command)
        if builder.command is None:
            raise UsageError(builder.describe() + ".")
        tool = builder.describe()
    if resume:
        interrupted = {b.package for b in st.builds(branch) if b.state == "interrupted"}
        selected = [p for p in selected if p in interrupted]
    texts_by_blob = read_blobs(path, (recipes[p] for p in recipes))
    texts = {p: texts_by_blob.get(recipes[p], "") for p in recipes}
    last, rule, successes = None, None, {}
    if changed_only:
        successes = st.last_success(branch, github)
        last, rule = changed_since_success(path, commit, recipes, successes, selected,
                                           cache=ctx.settings.build_cache, texts=texts)
    items, unchanged = plan_items(recipes, texts, selected, last_success_blobs=last)
    carried = _carried(st, branch, head, commit, unchanged, successes, github) if backend == "github" else {}
    fallback_pin = _catalog_pin(ctx, branch)
    if fallback_pin:
        items = [i if i.pin else BuildItem(i.package, i.blob, fallback_pin, i.after) for i in items]
    items = with_targets(items, texts, recipe_catalog())
    items, order = longest_first(items, build_seconds(st, [i.package for i in items]))
    if backend == "github":
        s = ctx.settings
        items, skipped = place_github(items, s.github_runners, s.github_big_parallel_runners)
        running = _running(st, branch, commit, items)
        items, adopted = hold_back(items, {p: why for p, (why, _) in running.items()})
        skipped += adopted
    else:
        items, skipped = place_local(items, build_platforms(ctx.settings))
        items, held = hold_back(items, _held(st, branch, github))
        skipped += held
    plan = BuildPlan(path, branch, commit, items, unchanged, backend, skipped, tool, rule=rule, order=order,
                     head=head if head and head != branch else None, github=github,
                     cache=checked_cache(ctx.settings) if backend == "github" and items else None)
    plan.carried = carried
    if backend == "github":
        plan.adopted = {p: key for p, (_, key) in running.items() if p in {s.package for s in adopted}}
    return plan


def _carried(st, branch: str, head: str | None, commit: str, unchanged: list[str], successes: dict,
             github: str | None = None) -> dict[str, str]:
    """package -> the earlier head of the bump PR ``head`` whose success it carries: the
    unchanged variants whose last success was at an earlier head of the same pull request (a
    rebase, a comment-only commit). Counted as built at ``commit`` by the PR's status."""
    from release.state import carried

    if not head or head == branch or not unchanged:
        return {}
    earlier = carried.earlier_successes(st, branch, head, commit, github)
    return {p: earlier[p] for p in unchanged
            if p in earlier and p in successes and successes[p].commit == earlier[p]}


def companion_github(ctx, path: Path, backend: str) -> str | None:
    """The GitHub repository a build of ``path`` is recorded under and dispatched to: None for the
    first configured repository (TORCHBOT_GITHUB_REPO), else what its remote names on github.com
    (a companion build-torchvision, whose package names build-pytorch's ``main`` shares). The
    github backend refuses, in one line, a companion with no GitHub repository."""
    from config.policy import github_name
    from release.adapters.remote import remote_url

    first = ctx.settings.repo_paths[0] if ctx.settings.repo_paths else ctx.settings.repo_path
    if first is None or _same_path(path, first):
        return None
    name = github_name(ctx.settings, first=False, remote_url=remote_url(path, ctx.settings.repo_remote))
    if name and name.lower() == (ctx.settings.github_repo or "").lower():
        return None
    if name is None and backend == "github":
        raise UsageError(f"{path.name} has no GitHub repository (its remote '{ctx.settings.repo_remote}' is not "
                         "on github.com), so GitHub cannot build it: build it locally (--backend local).")
    return name


def _same_path(a: Path, b) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def build_seconds(st, packages: list[str]) -> dict[str, float]:
    """package -> how long its last succeeded build took (any branch: a variant's name is its
    hardware and versions), from the recorded builds' start and end."""
    from release.state import Build

    if not packages:
        return {}
    out: dict[str, float] = {}
    with st.session() as ses:
        rows = ses.execute(select(Build.package, Build.started, Build.finished).where(
            Build.package.in_(packages), Build.state == "succeeded", Build.started.is_not(None),
            Build.finished.is_not(None)).order_by(Build.id))
        for package, started, finished in rows:
            out[package] = max(0.0, (finished - started).total_seconds())
    return out


def changed_since_success(path: Path, commit: str, recipes: dict[str, str], last: dict, selected: list[str],
                          cache: str | None = None, texts: dict[str, str] | None = None) -> tuple[dict[str, str], str]:
    """What ``plan_items`` compares (package -> the blob it counts as last built: the current one
    when the variant did not change, by ``release.builds.changes``), and the rule that decided.
    Each recipe is evaluated for the platform it builds on (``texts``: the recipes' text, which
    the reader reads it from)."""
    from release.builds.changes import Last, compare
    from release.recipes.platforms import recipe_catalog, recipe_target

    prior = {p: Last(b.commit, b.recipe_blob) for p, b in last.items() if p in selected and p in recipes}
    catalog = recipe_catalog() if texts else None
    systems = {p: recipe_target(p, texts.get(p, ""), catalog).platform for p in prior} if texts else None
    found = compare(path, commit, prior, cache=cache, systems=systems)
    return {p: recipes[p] if p in found.same else "" for p in prior}, found.rule


def checked_cache(settings) -> str | None:
    """The build cache as the plan says it, after asking it whether it answers (a cache that
    does not is one line, and nothing is dispatched); None when none is configured."""
    if not settings.build_cache:
        return None
    from release.adapters.nixcache import check, shown

    check(settings.build_cache)
    return shown(settings.build_cache)


def github_commit(path: Path, branch: str, head: str | None, remote: str) -> str:
    """The commit a GitHub build of ``branch`` runs at: the remote's head of ``head`` (a bump
    PR's branch) or of ``branch``. Refused, in one line, when the remote has no such branch or
    when the local branch has a commit the remote lacks: GitHub would build other code."""
    from release.adapters import remote as remotes

    ref = head or branch
    resolve_branch(path, branch, remote)  # a name torchbot accepts, that this clone knows
    if head and not remotes.valid_branch(head):
        raise UsageError(f"'{head}' is not a branch name torchbot accepts.")
    there = remotes.remote_head(path, remote, ref)
    if there is None:
        raise RefusedError(f"'{remote}' has no branch '{ref}', so GitHub cannot build it: push first, "
                           "or build locally (--backend local).")
    remotes.fetch_commit(path, remote, ref, there)
    here = remotes.local_commit(path, branch) if ref == branch else None
    if here and here != there and not remotes.is_ancestor(path, here, there):
        raise RefusedError(f"{branch} is at {here[:12]} here, a commit '{remote}' does not have (it has "
                           f"{there[:12]}); GitHub would build other code: push first, or build locally "
                           "(--backend local).")
    return there


def _running(st, branch: str, commit: str, items) -> dict[str, tuple[str, str]]:
    """package -> (why it is not dispatched again, the run's request id): a GitHub build of the same recipe at the same
    commit still queued or running in a run that is not closed (one a killed torchbot dispatched:
    it is adopted, its run followed by the poll-builds job, never dispatched twice)."""
    from release.state import ACTIVE, Build, GithubRun

    blobs = {i.package: i.blob for i in items}
    with st.session() as ses:
        rows = ses.execute(select(Build.package, Build.recipe_blob, GithubRun.request_id, GithubRun.html_url)
                           .join(GithubRun, GithubRun.request_id == Build.run_key)
                           .where(Build.branch == branch, Build.commit == commit, Build.backend == "github",
                                  Build.state.in_(ACTIVE), GithubRun.finished.is_(None))).all()
    return {pkg: (f"already building at {commit[:12]} (GitHub run {url or key}): adopted, not dispatched again", key)
            for pkg, blob, key, url in rows if pkg in blobs and blob == blobs[pkg]}


def _held(st, branch: str, github: str | None = None) -> dict[str, str]:
    """package -> why it cannot be built now: the variant locks of the branch in its repository
    (``github``: None for the first; a companion's ``main`` shares names with the first's)."""
    from release.state import BuildLock
    from release.state.tables import same_repo

    with st.session() as ses:
        return {lk.package: busy_reason(lk) for lk in ses.scalars(
            select(BuildLock).where(BuildLock.branch == branch, same_repo(BuildLock.repo, github)))}


def _catalog_pin(ctx, branch: str) -> str | None:
    try:
        b = ctx.catalog.branches.get(branch)
    except Exception:  # noqa: BLE001  (a catalog that cannot load must not stop a build)
        return None
    return b.pin if b else None




def build(ctx, plan: BuildPlan, jobs: int | None = None, *, progress: Progress | None = None,
          notice: dict | None = None) -> list[dict]:
    """Run a plan with its backend; the variants it skips are listed after the builds.
    ``progress`` hears of every build as it starts and ends (both backends); ``notice`` is where
    the front end reports the run, kept with it (a local run, or the GitHub runs) for a
    restarted torchbot to update."""
    if plan.backend == "github":
        from release.builds.github import dispatch_build

        rows = dispatch_build(ctx, plan, progress=_github_rows(progress, len(plan.items)), notice=notice)
        if progress is not None:
            progress.end()
        if plan.adopted:  # a killed torchbot's runs: followed to their end here, as if dispatched now
            rows += _follow_adopted(ctx, plan)
            skipped = [s for s in plan.skipped if s.package not in plan.adopted]
            return rows + [{"package": s.package, "branch": plan.branch, "backend": plan.backend,
                            "state": "skipped", "platform": s.platform, "message": s.reason} for s in skipped]
    elif plan.backend != "local":
        raise UsageError(f"Unknown build backend '{plan.backend}' (local or github).")
    else:
        rows = run_local(ctx, plan, jobs, progress=progress, notice=notice)
    return rows + [{"package": s.package, "branch": plan.branch, "backend": plan.backend, "state": "skipped",
                    "platform": s.platform, "message": s.reason} for s in plan.skipped]


def _follow_adopted(ctx, plan: BuildPlan) -> list[dict]:
    from release.adapters.github import Actions
    from release.builds import pr_status
    from release.builds.github import follow
    from release.state import Build, state_for

    keys = sorted(set(plan.adopted.values()))
    gh = Actions(ctx.settings)
    try:
        follow(ctx, keys, gh)
        pr_status.report(ctx, gh, keys)  # the PR's status and automerge, as the dispatching run would have
    finally:
        gh.close()
    with state_for(ctx).session() as s:
        return [b.to_dict() for b in s.query(Build).filter(Build.run_key.in_(keys),
                                                           Build.package.in_(list(plan.adopted))).order_by(Build.id)]


def _github_rows(progress: Progress | None, total: int):
    """The GitHub backend reports build rows as they change; as progress events: a row that
    runs started, a row that ended finished (its log is the job's page)."""
    if progress is None:
        return None
    progress.begin(total)

    def on_row(row: dict) -> None:
        state, log = row.get("state"), row.get("log") or ""
        url = log if log.startswith("http") else None
        if state == "running":
            progress.started(row["package"])
        elif state in ("succeeded", "failed", "interrupted"):
            progress.finished(row["package"], state, row.get("message") or "", url=url, log=None if url else log)

    return on_row


def status(ctx, branch: str | None = None) -> list[dict]:
    from release.builds.recover import reconcile
    from release.state import state_for

    reconcile(ctx)
    return [b.to_dict() for b in state_for(ctx).builds(branch)]
