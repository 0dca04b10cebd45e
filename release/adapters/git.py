"""The git adapter: the one module that talks to git (GitPython + git plumbing).

Used by every part of release/ that reads or writes the managed repositories: the reader
(objects, no checkout), pin bumps, branch creation and init; builds' worktrees are in
``release.adapters.worktrees``.

Commits are built in a temporary index file (``GIT_INDEX_FILE``) from the parent's tree,
so the user's checkout, index and working tree are never touched; refs move with
compare-and-swap (``update-ref NEW OLD``) so a concurrent change is detected, not lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from config.errors import ExternalError, NotFoundError, RefusedError, UsageError

ZERO = "0" * 40
RECIPE_DIR = ".flox/pkgs"
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def not_a_repository(path: str | os.PathLike, stderr: str = "") -> RefusedError:
    """The refusal for a path git will not use: git's ownership check ("dubious ownership": the
    repository belongs to another user, e.g. mounted into a container) named as such, anything
    else as no repository."""
    if "dubious ownership" in stderr:
        return RefusedError(
            f"git refuses {path}: it is owned by another user (git's safe.directory ownership check); "
            f"run `git config --global --add safe.directory {path}` as the user torchbot runs as, or fix the owner."
        )
    return RefusedError(f"{path} is not a git repository.")


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
        _mode, kind, sha = meta.split()
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
            with contextlib.suppress(git.GitCommandError):  # refs that were never created
                repo.git.update_ref("--stdin", istream=fh)


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
    """Atomic push of explicit ``sha:refs/heads/x`` specs (a child that dies with torchbot);
    raises ExternalError if rejected. ``release.adapters.gitpush.push_or_adopt`` also adopts an
    earlier run's push."""
    from release.adapters.gitpush import push as _push

    _push(repo, remote, refspecs)


def delete_remote_refs(repo, remote: str, refs: list[str]) -> None:
    import git

    with suppress(git.GitCommandError):
        repo.git.push(remote, *[":" + r for r in refs])


def _first_line(text) -> str:
    text = (text or "").strip()
    for raw in text.splitlines():
        line = raw.strip().strip("'").strip()
        if (line and not line.startswith("stderr:")) or (line.startswith("stderr:") and line[7:].strip()):
            return line.replace("stderr:", "").strip().strip("'")
    return text


# --- commits from a branch tip plus changes (init, branch create) ---


def _tree(repo, rev: str) -> str:
    return repo.git.rev_parse(f"{rev}^{{tree}}")


def commit_changes(
    repo_path: str | os.PathLike,
    branch: str,
    changes: dict[str, str | bytes | None],
    message: str,
    author_name: str,
    author_email: str,
    parent_branch: str | None = None,
    *,
    replace_prefix: str | None = None,
) -> str | None:
    """Make ONE commit on ``branch`` from its tip plus ``changes`` (None deletes a path).
    A branch that does not exist is created from ``parent_branch``'s tip (or as a root
    commit when no parent is given). ``replace_prefix`` first removes every file under that
    folder (files in ``changes`` are then written back). Returns the new commit SHA, or
    None when the branch already has exactly that content."""
    repo = open_repo(repo_path)
    heads = local_branches(repo)
    tip = heads.get(branch)
    if tip is None:
        if parent_branch is not None and parent_branch not in heads:
            raise NotFoundError(f"No branch '{parent_branch}' to start '{branch}' from in {repo_path}.")
        base = heads.get(parent_branch) if parent_branch else None
    else:
        base = tip
    if base is not None and tip is not None:
        changes = _effective(repo, base, changes, replace_prefix)
        if not changes and replace_prefix is None:
            return None
    sha = make_commit(
        repo, base, changes, message, author_name, author_email, replace_prefix=replace_prefix if base else None
    )
    if tip is not None and _tree(repo, sha) == _tree(repo, tip):
        return None  # nothing changed; the unreferenced commit object is left to gc
    move_refs(repo, {branch: (sha, tip or ZERO)})
    return sha


def _effective(repo, base: str, changes: dict, replace_prefix: str | None) -> dict:
    """Drop changes that would write what the base already holds (cheap blob-id compare)."""
    if replace_prefix is not None or not changes:
        return changes
    paths = list(changes)
    listing = repo.git.ls_tree(base, "--", *paths) if len(paths) < 200 else repo.git.ls_tree("-r", base)
    current: dict[str, str] = {}
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            current[path] = parts[2]
    out = {}
    for path, content in changes.items():
        if content is None:
            if path in current:
                out[path] = None
            continue
        data = content.encode("utf-8", errors="surrogateescape") if isinstance(content, str) else content
        if current.get(path) != blob_id(data):
            out[path] = content
    return out


def blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# --- the git CLI directly (builds: branch resolution, recipe listing, blobs, worktrees) ---


def run_git(repo: Path, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], check=False, capture_output=True, text=True, input=input
    )
    if proc.returncode != 0:
        if "dubious ownership" in proc.stderr:
            raise not_a_repository(repo, proc.stderr)
        raise ExternalError(f"git {' '.join(args[:2])} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def resolve_branch(repo: Path, branch: str, remote: str = "origin", fetch: bool = False) -> str:
    """The commit a branch name means: the local branch (what torchbot's bumps commit to)
    when present, else the remote-tracking one."""
    if not _SAFE.match(branch):
        raise UsageError(f"'{branch}' is not a branch name torchbot accepts.")
    if fetch:
        # best effort: an unreachable remote leaves the refs this clone already has to be read
        subprocess.run(["git", "-C", str(repo), "fetch", "--quiet", remote], check=False, capture_output=True)
    for ref in (f"refs/heads/{branch}", f"refs/remotes/{remote}/{branch}"):
        proc = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", ref + "^{commit}"],
            check=False, capture_output=True, text=True,
        )
        if proc.returncode == 0:
            return proc.stdout.strip()
    raise NotFoundError(f"Branch '{branch}' does not exist in {repo}.")


def list_recipes(repo: Path, commit: str) -> dict[str, str]:
    """package -> blob sha of its recipe at ``commit``."""
    out = run_git(repo, "ls-tree", commit, RECIPE_DIR + "/")
    recipes: dict[str, str] = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        _mode, typ, sha = meta.split()
        name = path.rsplit("/", 1)[-1]
        if typ == "blob" and name.endswith(".nix"):
            pkg = name[: -len(".nix")]
            if _SAFE.match(pkg):
                recipes[pkg] = sha
    return recipes


def read_blobs(repo: Path, shas: Iterable[str]) -> dict[str, str]:
    """Blob contents in one ``git cat-file --batch`` call (undecodable bytes replaced)."""
    out = read_paths(repo, list(shas))
    return {k: v.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for k, v in out.items() if v is not None}


def read_paths(repo: Path, names: list[str]) -> dict[str, str | None]:
    """Exact text of ``rev:path`` object names (one ``git cat-file --batch``); None when absent.
    Bytes that are not UTF-8 survive a round trip (surrogateescape)."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    proc = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        check=False,
        input=("\n".join(names) + "\n").encode(),
        capture_output=True,
    )
    if proc.returncode != 0:
        raise ExternalError(f"git cat-file failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    data = proc.stdout
    out: dict[str, str | None] = {}
    pos = 0
    for name in names:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].decode(errors="replace").split()
        pos = nl + 1
        if len(header) < 3 or header[-1] == "missing" or header[1] != "blob":
            out[name] = None
            if len(header) >= 3 and header[1] != "blob":
                pos += int(header[2]) + 1
            continue
        size = int(header[2])
        out[name] = data[pos : pos + size].decode("utf-8", errors="surrogateescape")
        pos += size + 1
    return out


def track_pushed(repo, remote: str, tips: dict[str, str]) -> None:
    """Keep the remote-tracking refs in step with what was just pushed (cosmetic: the push itself
    succeeded, so a ref that cannot be written is left for the next fetch)."""
    import git

    for branch, sha in tips.items():
        with contextlib.suppress(git.GitCommandError):
            repo.git.update_ref(f"refs/remotes/{remote}/{branch}", sha)
