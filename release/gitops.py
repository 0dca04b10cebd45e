"""Low-level git plumbing for the pin bump and branch creation (GitPython).

Commits are built in a temporary index file (``GIT_INDEX_FILE``) from the parent's tree,
so the user's checkout, index and working tree are never touched; refs move with
compare-and-swap (``update-ref NEW OLD``) so a concurrent change is detected, not lost.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from config.errors import ExternalError, RefusedError

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
    """Create (objects only, no branch moves) a commit on top of ``parent`` with ``changes``
    applied (None deletes a path). ``replace_prefix`` first removes every file under that
    folder. Returns the new commit SHA."""
    return make_commits(
        repo, [(parent, changes, message)], author_name, author_email, replace_prefix=replace_prefix
    )[0]


def make_commits(
    repo,
    specs: list[tuple[str | None, dict[str, str | bytes | None], str]],
    author_name: str,
    author_email: str,
    *,
    replace_prefix: str | None = None,
) -> list[str]:
    """Create several commits (parent, changes, message) in one ``git fast-import`` run: one
    pack, no working tree, no index, no branch moved (temporary refs under refs/torchbot/
    are removed before returning). Returns the commit SHAs in order."""
    import time

    import git

    ident = f"{_clean(author_name)} <{_clean(author_email)}> {int(time.time())} +0000"
    out = bytearray()
    token = f"{os.getpid()}-{time.monotonic_ns()}"
    temp_refs = []
    for n, (parent, changes, message) in enumerate(specs, start=1):
        ref = f"refs/torchbot/tmp/{token}/{n}"
        temp_refs.append(ref)
        msg = message.encode("utf-8")
        out += f"commit {ref}\nmark :{n}\nauthor {ident}\ncommitter {ident}\n".encode()
        out += b"data %d\n" % len(msg) + msg + b"\n"
        if parent:
            out += f"from {parent}\n".encode()
        if replace_prefix and parent:
            out += f"D {replace_prefix}\n".encode()
        for path, content in changes.items():
            if "\n" in path or path.startswith('"'):
                raise ValueError(f"unsupported path {path!r}")
            if content is None:
                out += f"D {path}\n".encode("utf-8", errors="surrogateescape")
                continue
            data = content.encode("utf-8", errors="surrogateescape") if isinstance(content, str) else content
            out += f"M 100644 inline {path}\n".encode("utf-8", errors="surrogateescape")
            out += b"data %d\n" % len(data) + data + b"\n"
        out += b"\n"
    out += b"done\n"
    fd, marks = tempfile.mkstemp(prefix="torchbot-marks-")
    os.close(fd)
    try:
        with tempfile.TemporaryFile() as fh:
            fh.write(out)
            fh.seek(0)
            try:
                repo.git.fast_import("--quiet", "--done", f"--export-marks={marks}", istream=fh)
            except git.GitCommandError as err:
                raise ExternalError(f"git could not write the commits: {_first_line(err.stderr)}") from None
        shas = {}
        for line in Path(marks).read_text().splitlines():
            mark, sha = line.split()
            shas[int(mark[1:])] = sha
        return [shas[n] for n in range(1, len(specs) + 1)]
    finally:
        os.unlink(marks)
        with tempfile.TemporaryFile() as fh:
            fh.write("".join(f"delete {r}\n" for r in temp_refs).encode())
            fh.seek(0)
            try:
                repo.git.update_ref("--stdin", istream=fh)
            except git.GitCommandError:  # pragma: no cover - refs were never created
                pass


def _clean(value: str) -> str:
    return "".join(ch for ch in value if ch not in "<>\n")


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
