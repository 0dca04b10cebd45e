"""What may be published: only what was built and passed at the commit that is on the branch.

The branch's commit is its head on the remote (``TORCHBOT_REPO_REMOTE``: what GitHub and
every user have); a repository without that remote uses its local branch. A succeeded build
counts for that commit when its recipe file there is the one it built (the same blob), so a
variant built at a bump pull request's head is published once the PR merges, without being
built again; a variant whose recipe changed since is held until it is built again. A build
the GitHub workflow published itself (a build of the branch's own head, ``publish: true``) is
only recorded. What the catalog already has (a publish record for the variant, branch and
pin) is skipped.

May import: config, release.state, release.adapters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.errors import ExternalError
from release.adapters import remote as remotes
from release.adapters.git import list_recipes


@dataclass
class BranchHead:
    branch: str
    commit: str | None  # None: the branch is not on the remote (nothing of it may be published)
    recipes: dict[str, str]  # package -> recipe blob at ``commit``
    where: str  # "origin" or "local"


def branch_head(path: Path, branch: str, remote: str) -> BranchHead:
    """The commit publishing takes ``branch`` from, and its recipes."""
    try:
        sha = remotes.remote_head(path, remote, branch)
        where = remote
        if sha is not None:
            remotes.fetch_commit(path, remote, branch, sha)
    except ExternalError:  # no such remote (a repository that was never pushed): the local branch
        sha, where = remotes.local_commit(path, branch), "local"
    return BranchHead(branch, sha, list_recipes(path, sha) if sha else {}, where)


def workflow_published(st, builds: list) -> set[int]:
    """Ids of the GitHub builds whose workflow published them (dispatched at the branch itself)."""
    from release.state import GithubRun

    keys = {b.run_key for b in builds if b.backend == "github" and b.run_key}
    if not keys:
        return set()
    with st.session() as s:
        refs = {r.request_id: (r.ref, r.branch) for r in s.query(GithubRun).filter(GithubRun.request_id.in_(keys))}
    return {b.id for b in builds if b.run_key in refs and refs[b.run_key][0] == refs[b.run_key][1]}


def split(builds: list, heads: dict[str, BranchHead], published_by_workflow: set[int]) -> tuple[list, list]:
    """(builds that may be published, (build, why not) held back) (pure)."""
    ok, held = [], []
    for b in builds:
        head = heads.get(b.branch)
        if b.id in published_by_workflow:
            ok.append(b)
        elif head is None:
            ok.append(b)  # no repository to check against: publishing itself asks for one
        elif head.commit is None:
            held.append((b, f"{b.branch} is not on {head.where}: push it first"))
        elif head.recipes.get(b.package) != b.recipe_blob:
            held.append((b, f"its recipe on {b.branch} ({head.commit[:12]}) is not the one built"
                            + (f" at {b.commit[:12]}" if b.commit else "") + ": build it again"))
        else:
            ok.append(b)
    return ok, held
