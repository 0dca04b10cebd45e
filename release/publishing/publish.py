"""Publishing succeeded builds to the Flox catalog.

For each variant whose latest build succeeded, that has no publish record for its
(branch, pin), and whose recipe on the branch (its remote head) is the one built
(``release.publishing.eligible``), run ``Settings.publish_command`` (``flox publish -o {org}
{package}``) in a worktree of the branch's commit. A success writes, in ONE transaction, the
publish record and the announcement outbox rows (the release thread's parent on the first
publish of a release, one reply per variant, the summary once all are published). A failure
records nothing, so the next run retries it. That command runs only for local builds: GitHub
builds are never published by the torchbot host. GitHub builds of the branch's own head were
published by their workflow (``publish: true``); they are only recorded. GitHub builds of a
bump pull request's head were not: once the PR merged, they are published from the branch by
the workflow on their platform's runners, substituting the PR head's outputs from the build
cache (``release.publishing.on_github``).

Once across processes: before its command runs, a variant is claimed in the state DB
(``State.claim``, key ``publish:[<repository>:]<branch>:<package>:<pin>``, held for the publish timeout plus a
minute); a variant another process is publishing is skipped (``state: skipped``), and one it
published meanwhile is not run again. The claim is given up when the command ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import subprocess
import uuid
from collections import defaultdict
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from config.checks import require_real_org
from config.errors import TorchbotError, UsageError
from config.progress import Progress
from release.adapters.git import list_recipes, read_blobs
from release.adapters.worktrees import worktree
from release.builds.plan import recipe_pin
from release.builds.run import companion_github, format_command
from release.context import repo_path
from release.publishing import eligible
from release.state import Build, Outbox, Publish, Release, owner_id, state_for
from release.state.tables import same_repo

log = logging.getLogger("torchbot.publish")

_PY = re.compile(r"-python(3)(\d+)-")
_CUDA = re.compile(r"-cuda(\d+)_(\d+)-")
_TORCH = re.compile(r"pytorch-(\d+\.\d+(?:\.\d+)?)")


def pending(ctx, branch: str | None = None, repo=None) -> list[Build]:
    """The succeeded builds to publish now (``release.publishing.eligible``), of ``repo`` or of
    every configured repository (``repositories``)."""
    return [b for r in repositories(ctx, repo) for b in _candidates(ctx, branch, r)[0]]


def held(ctx, branch: str | None = None, repo=None) -> list[tuple[Build, str]]:
    """Succeeded, unpublished builds that may not be published yet, and why (as ``pending``)."""
    return [h for r in repositories(ctx, repo) for h in _candidates(ctx, branch, r)[1]]


def repositories(ctx, repo=None) -> list:
    """What a publish covers: ``repo``, else every configured repository (TORCHBOT_REPO_PATH:
    build-pytorch, then build-torchvision), else ``[None]`` (no repository: what the GitHub
    workflow published is still recorded)."""
    if repo:
        return [repo]
    return list(ctx.settings.repositories()) if ctx.settings.repo_path else [None]


def published_keys(st) -> set[tuple]:
    """(repository, package, branch, pin) of every publish record (``Build.repo``'s convention)."""
    with st.session() as s:
        return {(p.repo, p.package, p.branch, p.pin) for p in s.scalars(select(Publish))}


def _candidates(ctx, branch: str | None, repo) -> tuple[list[Build], list[tuple[Build, str]], dict, set[int]]:
    st = state_for(ctx)
    github = _github_of(ctx, repo)
    latest = [b for b in st.builds(branch) if b.state == "succeeded" and b.repo == github]
    done = published_keys(st)
    todo = [b for b in latest if (b.repo, b.package, b.branch, b.pin) not in done]
    by_workflow = eligible.workflow_published(st, todo)
    heads: dict[str, eligible.BranchHead] = {}
    if todo and (repo or ctx.settings.repo_path):
        path = repo_path(ctx, repo)
        for name in sorted({b.branch for b in todo if b.id not in by_workflow}):
            heads[name] = eligible.branch_head(path, name, ctx.settings.repo_remote)
    ok, kept = eligible.split(todo, heads, by_workflow)
    return ok, kept, heads, by_workflow


def _github_of(ctx, repo) -> str | None:
    """The repository whose builds these are (``Build.repo``): None for the first configured one,
    so a companion's builds of a branch and package build-pytorch also has are never judged
    against, or published from, build-pytorch's branch."""
    if not (repo or ctx.settings.repo_path):
        return None
    return companion_github(ctx, repo_path(ctx, repo), "local")


def release_info(ctx, branch: str, packages: list[str]) -> dict:
    """PyTorch / CUDA / Python of a release, from the catalog when it knows the branch, else
    from the branch and package names."""
    info: dict = {"pytorch": None, "python": None, "cuda": []}
    try:
        b = ctx.catalog.branches.get(branch)
    except TorchbotError:  # an unreadable repository: the names say enough
        b = None
    if b is not None:
        info.update(pytorch=b.pytorch, python=b.python, cuda=list(b.cuda_versions))
        return info
    m = _TORCH.search(branch)
    info["pytorch"] = m.group(1) if m else None
    pys = {f"{a}.{b}" for p in packages for a, b in _PY.findall(p)}
    info["python"] = ", ".join(sorted(pys)) or None
    info["cuda"] = sorted({f"{a}.{b}" for p in packages for a, b in _CUDA.findall(p)}, key=B_vt)
    return info


def B_vt(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def _release_packages(repo: Path | None, commit: str | None, pin: str | None, fallback: list[str]) -> list[str]:
    """The variants of the branch at ``commit`` that use ``pin`` (the release's size)."""
    if repo is None or not commit:
        return fallback
    try:
        recipes = list_recipes(repo, commit)
        texts = read_blobs(repo, recipes.values())
    except TorchbotError:
        return fallback
    pins = {p: recipe_pin(texts.get(sha, "")) for p, sha in recipes.items()}
    same = [p for p, v in pins.items() if v == pin or v is None]
    return same or fallback


def _run(command: str, cwd: Path | None, timeout: float) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            command,
            check=False,
            shell=True,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False, f"publish timed out after {timeout:g} s"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        return False, f"publish exited with status {proc.returncode}: {tail[0][:300]}"
    return True, ""


def _claim_key(b: Build) -> str:
    """``publish:[<repository>:]<branch>:<package>:<pin>``: a companion's repository (owner/name)
    keeps its variant apart from build-pytorch's of the same branch and name."""
    return f"publish:{b.repo + ':' if b.repo else ''}{b.branch}:{b.package}:{b.pin or 'unpinned'}"


def _published(st, b: Build) -> bool:
    with st.session() as s:
        return s.scalar(select(Publish.id).where(
            Publish.package == b.package, Publish.branch == b.branch, same_repo(Publish.repo, b.repo),
            Publish.pin.is_(None) if b.pin is None else Publish.pin == b.pin)) is not None


def _publish_one(ctx, b: Build, cwd: Path | None, who: str, totals: list[str]) -> tuple[bool | None, str]:
    """Claim the variant, run the publish command, record a success, give the claim up:
    (ok, message), or (None, why) when another process has it or published it already."""
    st = state_for(ctx)
    key = _claim_key(b)
    if not st.claim(key, who, ctx.settings.publish_seconds() + 60):
        held = st.claim_holder(key)
        return None, f"being published by another torchbot ({held.owner.rsplit(':', 1)[0] if held else 'gone'})"
    try:
        if _published(st, b):
            return None, "published meanwhile by another torchbot"
        ok, msg = _run(format_command(ctx.settings.publish_command, b.package, ctx), cwd,
                       ctx.settings.publish_seconds())
        if ok:
            record_publish(ctx, b, totals)  # before the claim is given up: nobody runs it again
        return ok, msg
    finally:
        st.unclaim(key, who)


def record_publish(ctx, build: Build, total_packages: list[str]) -> None:
    """The publish record and its outbox rows, in one transaction."""
    st = state_for(ctx)
    pin = build.pin or "unpinned"
    with contextlib.suppress(IntegrityError):  # another torchbot recorded this publish first: nothing to add
        _record(ctx, st, build, pin, total_packages)


def _record(ctx, st, build: Build, pin: str, total_packages: list[str]) -> None:
    with st.session() as s:
        s.add(Publish(package=build.package, branch=build.branch, pin=build.pin, build_id=build.id, repo=build.repo))
        mine = same_repo(Release.repo, build.repo)  # build-torchvision's release has its own thread
        rel = s.scalar(select(Release).where(Release.branch == build.branch, Release.pin == pin, mine))
        if rel is None:
            prev = s.scalar(
                select(Release).where(Release.branch == build.branch, Release.pin != pin, mine)
                .order_by(Release.id.desc())
            )
            rel = Release(branch=build.branch, pin=pin, previous_pin=prev.pin if prev else None, repo=build.repo,
                          total=len(total_packages), channel=ctx.settings.announce_channel,
                          info=json.dumps(release_info(ctx, build.branch, total_packages)))
            s.add(rel)
            s.flush()
            s.add(Outbox(release_id=rel.id, kind="parent", client_msg_id=uuid.uuid4().hex))
        s.add(Outbox(release_id=rel.id, kind="variant", package=build.package, client_msg_id=uuid.uuid4().hex))
        s.flush()
        published = s.scalar(
            select(func.count()).select_from(Publish).where(
                Publish.branch == build.branch, same_repo(Publish.repo, build.repo),
                Publish.pin.is_(None) if build.pin is None else Publish.pin == build.pin,
            )
        )
        has_summary = s.scalar(select(Outbox.id).where(Outbox.release_id == rel.id, Outbox.kind == "summary"))
        if published >= rel.total and not has_summary:
            s.add(Outbox(release_id=rel.id, kind="summary", client_msg_id=uuid.uuid4().hex))


def publish_pending(ctx, branch: str | None = None, *, repo=None, progress: Progress | None = None) -> list[dict]:
    """Publish what ``pending`` lists (``repo``'s, else every configured repository's), from the
    branch's commit (its remote head); ``progress`` hears of each variant as it starts and ends."""
    each = []
    for r in repositories(ctx, repo):
        todo, _, heads, by_workflow = _candidates(ctx, branch, r)
        if todo:
            each.append((r, todo, heads, by_workflow))
    if not each:
        return []
    require_real_org(ctx.settings.flox_org, "publishing (install commands and announcements name it)")
    progress = progress or Progress(verb="published")
    results: list[dict] = []
    who = f"{owner_id()}:{uuid.uuid4().hex[:8]}"  # this call (two in one process are two claimants)
    progress.begin(sum(len(e[1]) for e in each))
    for r, todo, heads, by_workflow in each:
        _publish_repo(ctx, r, todo, heads, by_workflow, results, progress, who)
    progress.end()
    return results


def _publish_repo(ctx, repo, todo: list[Build], heads: dict, by_workflow: set[int], results: list[dict],
                  progress: Progress, who: str) -> None:
    path: Path | None = None
    if repo or ctx.settings.repo_path:
        path = repo_path(ctx, repo)
    elif any(b.id not in by_workflow for b in todo):
        raise UsageError("Publishing needs the repository: pass --repo PATH or set TORCHBOT_REPO_PATH.")
    by_commit: dict[str | None, list[Build]] = defaultdict(list)
    for b in todo:
        head = heads.get(b.branch)
        by_commit[head.commit if head else b.commit].append(b)
    for commit, group in by_commit.items():
        _publish_group(ctx, path, commit, group, by_workflow, results, progress, who)


def _keep_outcome(ctx, b: Build, commit: str | None, ok: bool, msg: str) -> None:
    """A failed publish in the release record (what needs a human), cleared when it publishes."""
    from release.state.record import publish_failed, publish_succeeded

    st = state_for(ctx)
    try:
        if ok:
            publish_succeeded(st, b.branch, b.package, b.pin, b.repo)
        else:
            publish_failed(st, b.branch, b.package, b.pin, commit or b.commit, msg or "", b.repo)
    except SQLAlchemyError as err:
        log.warning("publish of %s (%s) not kept in the release record: %s", b.package, b.branch, err)


def _publish_group(ctx, path: Path | None, commit: str | None, group: list[Build], by_workflow: set[int],
                   results: list[dict], progress: Progress, who: str) -> None:
    """Publish the builds of one branch commit: record what the workflow published, claim and
    run the publish command for the rest in a worktree of ``commit``."""
    branch_builds = [b.package for b in state_for(ctx).builds(group[0].branch) if b.repo == group[0].repo]
    totals: dict[str | None, list[str]] = {}
    for b in group:
        if b.pin not in totals:
            totals[b.pin] = _release_packages(path, commit, b.pin, branch_builds)

    def finish(b: Build, ok: bool | None, msg: str, recorded: bool = False) -> None:
        if ok and not recorded:
            record_publish(ctx, b, totals[b.pin])
        state = "skipped" if ok is None else "published" if ok else "failed"
        if ok is not None:
            _keep_outcome(ctx, b, commit, ok, msg)
        results.append({"package": b.package, "branch": b.branch, "repo": b.repo, "pin": b.pin, "commit": commit,
                        "state": state, "message": msg or None})
        progress.finished(b.package, state, msg)

    for b in group:
        if b.id in by_workflow:
            finish(b, True, "published by the GitHub workflow")
    rest = [b for b in group if b.id not in by_workflow]
    if not rest:
        return

    on_github = [b for b in rest if b.backend == "github"]
    if on_github:
        _publish_on_github(ctx, path, commit, on_github, who, finish, progress)
    rest = [b for b in rest if b.backend != "github"]
    if not rest:
        return

    def run_all(cwd: Path | None) -> None:
        for b in rest:
            progress.started(b.package)
            ok, msg = _publish_one(ctx, b, cwd, who, totals[b.pin])
            if ok and b.commit and commit and b.commit != commit:
                msg = f"built at {b.commit[:12]}, published from {b.branch} at {commit[:12]} (same recipe)"
            finish(b, ok, msg, recorded=True)

    if path is not None and commit:
        with worktree(path, commit) as wt:
            run_all(wt)
    else:
        run_all(path)


def _publish_on_github(ctx, path: Path | None, commit: str | None, builds: list[Build], who: str, finish,
                       progress: Progress) -> None:
    """GitHub builds are published on GitHub (``release.publishing.on_github``), each variant
    claimed first as a local publish is."""
    from release.publishing import on_github

    if path is None or not commit:
        for b in builds:
            finish(b, None, "not published: publishing a GitHub build needs the repository (TORCHBOT_REPO_PATH)")
        return
    st = state_for(ctx)
    mine: list[Build] = []
    for b in builds:
        key = _claim_key(b)
        if not st.claim(key, who, ctx.settings.publish_seconds() + 60):
            holder = st.claim_holder(key)
            finish(b, None, "being published by another torchbot "
                   f"({holder.owner.rsplit(':', 1)[0] if holder else 'gone'})")
        elif _published(st, b):
            st.unclaim(key, who)
            finish(b, None, "published meanwhile by another torchbot")
        else:
            mine.append(b)
    try:
        if mine:
            on_github.publish(ctx, path, commit, mine, finish, progress.started)
    finally:
        for b in mine:
            st.unclaim(_claim_key(b), who)
