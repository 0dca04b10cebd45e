"""A dashboard action (a ticked box) runs through the plan chat builds and its Confirm check:
when the branch tip its key names moved since the dashboard showed it, nothing is done and one
line says so; once the tip is the one shown again, the same action is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.errors import RefusedError
from release.dashboard.commands import dashboard, run_action
from release.state import state_for
from tests.support.fixtures_dashboard import dashboard_world
from tests.support.fixtures_pins import git


def _move(repo, branch: str) -> str:
    """A teammate's push to ``branch`` (same files, one more commit), fetched by the clone."""
    old = git(repo.path, "rev-parse", f"origin/{branch}").strip()
    new = git(repo.path, "commit-tree", f"{old}^{{tree}}", "-p", old, "-m", "a teammate's commit").strip()
    git(repo.path, "push", "-q", "origin", f"{new}:refs/heads/{branch}")
    git(repo.path, "fetch", "-q", "origin")
    if git(repo.path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).strip():
        git(repo.path, "update-ref", f"refs/heads/{branch}", new)
    return new


def _put_back(repo, branch: str, sha: str) -> None:
    git(repo.path, "push", "-q", "--force", "origin", f"{sha}:refs/heads/{branch}")
    git(repo.path, "fetch", "-q", "origin")
    if git(repo.path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).strip():
        git(repo.path, "update-ref", f"refs/heads/{branch}", sha)


def _action(ctx, now, kind: str, branch: str):
    model = dashboard(ctx, now=now).model
    return next(a for r in model.repositories for b in r.branches for a in b.actions
                if a.kind == kind and a.branch == branch)


def _builds(ctx) -> int:
    from release.state import Build

    with state_for(ctx).session() as s:
        return s.query(Build).count()


def test_a_retry_whose_branch_moved_is_refused_and_the_retry_of_the_new_tip_runs(tmp_path: Path):
    over = dict(schedule_build_backend="local", build_command="echo ok > result-{package}")
    with dashboard_world(tmp_path, **over) as w:
        shown = _action(w.ctx, w.now, "retry-builds", "main")
        before = _builds(w.ctx)
        old = git(w.pt.path, "rev-parse", "origin/main").strip()
        new = _move(w.pt, "main")
        with pytest.raises(RefusedError) as err:
            run_action(w.ctx, shown)
        assert f"main moved from {shown.key.rsplit(':', 1)[1][:7]} to {new[:7]}" in err.value.message
        assert "nothing was done" in err.value.message
        assert _builds(w.ctx) == before  # nothing was built

        _put_back(w.pt, "main", old)  # the teammate's commit undone: the tip is the one shown again
        assert run_action(w.ctx, shown).startswith("retried: ")
        assert _builds(w.ctx) > before


def test_a_rebase_whose_branch_moved_is_refused_and_nothing_is_pushed(tmp_path: Path):
    from tests.support.fixtures_dashboard import PR_BRANCH

    with dashboard_world(tmp_path) as w:
        shown = _action(w.ctx, w.now, "rebase-pr", PR_BRANCH)
        new = _move(w.pt, PR_BRANCH)
        heads = git(w.pt.origin, "for-each-ref", "--format=%(refname) %(objectname)")
        with pytest.raises(RefusedError) as err:
            run_action(w.ctx, shown)
        assert f"{PR_BRANCH} moved from" in err.value.message and new[:7] in err.value.message
        assert git(w.pt.origin, "for-each-ref", "--format=%(refname) %(objectname)") == heads  # nothing pushed
