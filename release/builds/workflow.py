"""The GitHub Actions build workflow: ``render_workflow`` fills
``release/templates/build-workflow.yml`` (a matrix job per variant, on the runner labels each
matrix entry carries, running ``flox build`` and pushing its outputs to the binary cache, and ``flox publish``
when the dispatch says ``publish: true``, substituting from the cache with ``substitute: true``;
the publish step's timeout is the build's, ``TORCHBOT_PUBLISH_TIMEOUT`` unset) with the actions pinned in
``release/templates/actions.toml`` and ``max-parallel`` from ``TORCHBOT_GITHUB_MAX_PARALLEL``
(unset: the line is left out, GitHub's default of no cap; ``TORCHBOT_BUILD_JOBS`` is for local
builds only); ``write_workflow`` puts it into the target repository:
into the working tree, or as a commit on a named branch without touching the checkout.

May import: config, release.context, release.adapters.
"""

from __future__ import annotations

import json
import math
import re
import string
import tomllib
from pathlib import Path

from config.checks import require_real_org
from config.errors import NotFoundError, UsageError
from release.adapters import git as gitops
from release.context import repo_path

TEMPLATES = Path(__file__).parents[1] / "templates"
TEMPLATE = TEMPLATES / "build-workflow.yml"
ACTIONS = TEMPLATES / "actions.toml"
_ORG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_MAX_PARALLEL_LINE = re.compile(r"^[ \t]*max-parallel: \$max_parallel\n", re.M)


def pinned_actions() -> dict[str, str]:
    """template name -> ``owner/repo@<full sha> # <tag>``."""
    out = {}
    for name, a in tomllib.loads(ACTIONS.read_text()).items():
        if not _SHA_RE.match(a["sha"]):
            raise UsageError(f"{ACTIONS.name}: {name} is not pinned to a full commit SHA.")
        out[name] = f"{a['repo']}@{a['sha']} # {a['tag']}"
    return out


def render_workflow(settings) -> str:
    if not _ORG_RE.match(settings.flox_org or ""):
        raise UsageError(f"TORCHBOT_FLOX_ORG '{settings.flox_org}' is not a FloxHub organisation name.")
    template = TEMPLATE.read_text()
    cap = settings.github_max_parallel
    if cap is None:  # GitHub's default: every matrix job at once
        template = _MAX_PARALLEL_LINE.sub("", template)
    return string.Template(template).safe_substitute(
        org=json.dumps(settings.flox_org),
        timeout_minutes=_minutes(settings.build_timeout + settings.publish_seconds()),
        build_minutes=_minutes(settings.build_timeout),
        publish_minutes=_minutes(settings.publish_seconds()),  # flox publish may build: the build's time
        max_parallel=int(cap) if cap is not None else "",
        **pinned_actions(),
    )


def _minutes(seconds: float) -> int:
    return math.ceil(min(seconds, 6 * 3600) / 60)  # GitHub's hosted runners end a job at 6 h


def workflow_path(settings) -> str:
    return f".github/workflows/{settings.github_workflow_file}"


def write_workflow(ctx, repo=None, commit: bool = False, branch: str | None = None) -> tuple[Path, str | None]:
    """Write the workflow. With ``commit``: one commit on ``branch`` (the branch the build
    dispatch runs from), made without touching the checkout, index or working tree; returns
    (path in the repository, new commit or None when the branch already holds it). Without:
    writes the file into the working tree and returns (file, None)."""
    path, text, rel = _prepared(ctx, repo, commit, branch)
    if not commit:
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target, None
    from release.adapters.gitrefs import make_local

    repo, heads = _branch_heads(ctx, path, branch)
    make_local(repo, {branch: heads[branch]}, ctx.settings.repo_remote)  # a fresh clone's origin/* branch
    s = ctx.settings
    sha = gitops.commit_changes(path, branch, {rel: text}, "torchbot: GitHub Actions build workflow",
                                s.git_author_name, s.git_author_email)
    return Path(rel), sha


def workflow_changes(ctx, repo=None, commit: bool = False, branch: str | None = None) -> list:
    """What ``write_workflow`` would change, nothing written: the workflow file now (in the
    working tree, or on ``branch`` with ``commit``) and after (``config.diffs.FileChange``)."""
    from config.diffs import FileChange, planned

    path, text, rel = _prepared(ctx, repo, commit, branch)
    if not commit:
        target = path / rel
        return [FileChange("working tree", rel, target.read_text() if target.is_file() else None, text)]
    _repo, heads = _branch_heads(ctx, path, branch)
    return planned([(branch, heads[branch], {rel: text})], lambda names: gitops.read_paths(path, names))


def _branch_heads(ctx, path: Path, branch: str):
    """(repo, branch -> tip) with the local branches and the remote's (a fresh clone has one
    local branch); an unknown ``branch`` is bad input."""
    from release.adapters.gitrefs import all_branches

    repo = gitops.open_repo(path)
    heads = all_branches(repo, ctx.settings.repo_remote)
    if branch not in heads:
        raise NotFoundError(f"No branch '{branch}' in {path} (local or {ctx.settings.repo_remote}/*); "
                            "nothing was committed.")
    return repo, heads


def _prepared(ctx, repo, commit: bool, branch: str | None) -> tuple[Path, str, str]:
    """(repository path, the workflow's text, its path in the repository), after the checks
    both writing and previewing make: a real Flox org, and a branch when committing."""
    require_real_org(ctx.settings.flox_org, "writing the build workflow (its publish step names it)")
    if commit and not branch:
        raise UsageError("--commit needs --branch B: the branch the workflow is dispatched from (the one built).")
    return repo_path(ctx, repo), render_workflow(ctx.settings), workflow_path(ctx.settings)
