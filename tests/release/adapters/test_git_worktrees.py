"""Build worktrees on one repository, made and removed at once by many builds (threads of one
torchbot, and other torchbot processes): git does not guard its ``worktrees/`` directory, so
torchbot does; every build gets its worktree."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from release.adapters.git import run_git
from release.adapters.worktrees import worktree

ROOT = Path(__file__).resolve().parents[3]


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "t"]):
        run_git(repo, *args)
    (repo / "README.md").write_text("hello\n")
    run_git(repo, "add", "README.md")
    run_git(repo, "commit", "-q", "-m", "one")
    return repo, run_git(repo, "rev-parse", "HEAD").strip()


def _churn(repo: Path, commit: str, rounds: int, errors: list) -> None:
    for _ in range(rounds):
        try:
            with worktree(repo, commit) as wt:
                assert (wt / "README.md").read_text() == "hello\n"
        except Exception as err:  # noqa: BLE001  (collected: the test names every failure)
            errors.append(repr(err))


def test_many_builds_make_and_remove_worktrees_of_one_repository_at_once(tmp_path):
    repo, commit = _repo(tmp_path)
    errors: list[str] = []
    threads = [threading.Thread(target=_churn, args=(repo, commit, 12, errors)) for _ in range(6)]
    helper = subprocess.Popen(  # another torchbot process on the same repository
        [sys.executable, "-c", "import sys; from pathlib import Path;"
         " from tests.release.adapters.test_git_worktrees import _churn;"
         " e = []; _churn(Path(sys.argv[1]), sys.argv[2], 24, e); print('\\n'.join(e)); sys.exit(1 if e else 0)",
         str(repo), commit], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out, _ = helper.communicate(timeout=300)
    assert errors == [] and helper.returncode == 0, (errors, out)
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # all removed again
