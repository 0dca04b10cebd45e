"""Low-level git plumbing for the pin bump and branch creation (GitPython).

Commits are built in a temporary index file (``GIT_INDEX_FILE``) from the parent's tree,
so the user's checkout, index and working tree are never touched; refs move with
compare-and-swap (``update-ref NEW OLD``) so a concurrent change is detected, not lost.
"""

from __future__ import annotations

import os
import tempfile
from io import BytesIO
from pathlib import Path

from bot.errors import ExternalError, RefusedError

ZERO = "0" * 40


def open_repo(path: str | os.PathLike):
    import git

    try:
        return git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise RefusedError(f"{path} is not a git repository.") from None


def local_branches(repo) -> dict[str, str]:
    """Local branch name -> tip SHA."""
    out = repo.git.for_each_ref("--format=%(refname:short) %(objectname)", "refs/heads/")
    result = {}
    for line in out.splitlines():
        name, _, sha = line.rpartition(" ")
        if name:
            result[name] = sha
    return result


def read_files(repo, rev: str, prefix: str, extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Text of the files under ``prefix`` (one level) and of ``extra`` paths at ``rev``."""
    listing = repo.git.ls_tree(rev, "--", prefix + "/", *extra)
    out: dict[str, str] = {}
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        mode, kind, sha = meta.split()
        if kind != "blob":
            continue
        data = repo.odb.stream(bytes.fromhex(sha)).read()
        out[path] = data.decode("utf-8", errors="surrogateescape")
    return out


def _store(repo, data: bytes) -> str:
    from gitdb.base import IStream

    sha = repo.odb.store(IStream(b"blob", len(data), BytesIO(data))).hexsha
    return sha.decode() if isinstance(sha, bytes) else sha


def make_commit(
    repo,
    parent: str | None,
    changes: dict[str, str | bytes | None],
    message: str,
    author_name: str,
    author_email: str,
    *,
    replace_prefix: str | None = None,
) -> str:
    """Create (objects only, no ref moves) a commit on top of ``parent`` with ``changes``
    applied (None deletes a path). ``replace_prefix`` first removes every file under that
    folder. Returns the new commit SHA."""
    fd, index = tempfile.mkstemp(prefix="torchbot-index-")
    os.close(fd)
    os.unlink(index)
    env = {"GIT_INDEX_FILE": index}
    try:
        if parent:
            repo.git.read_tree(parent, env=env)
        else:
            repo.git.read_tree("--empty", env=env)
        lines = []
        if replace_prefix and parent:
            for path in repo.git.ls_files("--", replace_prefix + "/", env=env).splitlines():
                if path not in changes:
                    lines.append(f"0 {ZERO}\t{path}\n")
        for path, content in changes.items():
            if content is None:
                lines.append(f"0 {ZERO}\t{path}\n")
                continue
            data = content.encode("utf-8", errors="surrogateescape") if isinstance(content, str) else content
            lines.append(f"100644 {_store(repo, data)}\t{path}\n")
        with tempfile.TemporaryFile() as fh:
            fh.write("".join(lines).encode("utf-8", errors="surrogateescape"))
            fh.seek(0)
            repo.git.update_index("--index-info", istream=fh, env=env)
        tree = repo.git.write_tree(env=env)
        ident = {
            "GIT_AUTHOR_NAME": author_name,
            "GIT_AUTHOR_EMAIL": author_email,
            "GIT_COMMITTER_NAME": author_name,
            "GIT_COMMITTER_EMAIL": author_email,
        }
        args = [tree] + (["-p", parent] if parent else []) + ["-m", message]
        return repo.git.commit_tree(*args, env=ident)
    finally:
        if os.path.exists(index):
            os.unlink(index)


def move_refs(repo, moves: dict[str, tuple[str, str]]) -> None:
    """Move branches atomically: {branch: (new, expected_old)}; old ZERO means create.
    All or nothing (one ``update-ref --stdin`` transaction)."""
    import git

    if not moves:
        return
    lines = "start\n" + "".join(
        f"update refs/heads/{b} {new} {old}\n" for b, (new, old) in moves.items()
    ) + "prepare\ncommit\n"
    with tempfile.TemporaryFile() as fh:
        fh.write(lines.encode())
        fh.seek(0)
        try:
            repo.git.update_ref("--stdin", istream=fh)
        except git.GitCommandError as err:
            raise ExternalError(
                "A branch moved while torchbot was working, so nothing was changed: "
                + _first_line(err.stderr)
            ) from None


def push(repo, remote: str, refspecs: list[str]) -> None:
    """Atomic push of explicit ``sha:refs/heads/x`` specs; raises ExternalError if rejected."""
    import git

    try:
        repo.git.push("--atomic", "--porcelain", remote, *refspecs)
    except git.GitCommandError as err:
        detail = _first_line(err.stderr) or _first_line(err.stdout)
        raise ExternalError(
            f"The push to '{remote}' was rejected ({detail}); the remote moved or refused it. "
            "Local branches are as they were before the run."
        ) from None


def delete_remote_refs(repo, remote: str, refs: list[str]) -> None:
    import git

    try:
        repo.git.push(remote, *[":" + r for r in refs])
    except git.GitCommandError:
        pass


def _first_line(text) -> str:
    text = (text or "").strip()
    for line in text.splitlines():
        line = line.strip().strip("'").strip()
        if line and not line.startswith("stderr:") or line.startswith("stderr:") and line[7:].strip():
            return line.replace("stderr:", "").strip().strip("'")
    return text
