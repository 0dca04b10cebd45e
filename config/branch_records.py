"""The record of branches ``torchbot release branch create`` made, kept by repository.

A created branch belongs to the repository it was created in, so it is recorded under that
repository's git directory (the common one, shared by its work trees) in one TOML file
(``TORCHBOT_LOCAL_BRANCHES``, default in the platform's data directory, never the working
directory)::

    [repository."/srv/build-pytorch/.git".branch."pytorch-2.9-python312"]
    pytorch = "2.9.1"
    ...

Where that repository is read, its recorded branches join the catalog the reader builds it with
(what the recipes cannot say: purpose, summary, cuDNN, driver floor); nowhere else, so a branch
made in a throwaway clone is never offered for another repository or the embedded catalog.

The file is checked with pydantic (imported only when there is a file to read): every mistake is
one line naming the file, the repository, the branch and the key. Imports nothing of torchbot
but config.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from config.errors import CatalogError, ConfigError, RefusedError
from config.paths import branches_file

if TYPE_CHECKING:
    from config.catalog import Branch, Catalog

VARIABLE = "TORCHBOT_LOCAL_BRANCHES"
VERSION_RE = r"^\d+\.\d+(\.\d+)?$"
PIN_RE = r"^([0-9a-f]{40}|none)$"  # a nixpkgs commit, or "none" for a branch without a pin of its own
_MERGED: dict[tuple, Catalog] = {}


def repository_key(git_dir: str | os.PathLike) -> str:
    """A repository's identity: its common git directory, resolved (work trees share it)."""
    gd = Path(git_dir).resolve()
    try:
        common = (gd / "commondir").read_text().strip()
    except OSError:
        return str(gd)
    return str((gd / common).resolve())


def git_dir_of(path: str | os.PathLike) -> Path:
    """The git directory of a work tree (``.git`` directory or ``gitdir:`` file) or a bare repository."""
    p = Path(path).expanduser().resolve()
    dot = p / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text().strip()
        if text.startswith("gitdir:"):
            return (p / text.removeprefix("gitdir:").strip()).resolve()
    if (p / "HEAD").is_file() and (p / "objects").is_dir():
        return p
    raise RefusedError(f"{p} is not a git repository.")


# ---------------------------------------------------------------------------------------
# The file's shape, checked with pydantic


def _model():
    from pydantic import BaseModel, ConfigDict, Field

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class CudaGroup(Strict):
        version: str = Field(pattern=r"^\d+\.\d+$")
        archs: list[str]
        pin: str | None = Field(None, pattern=PIN_RE)

    class TorchSource(Strict):
        version: str = Field(pattern=VERSION_RE)
        hash: str = Field(pattern=r"^sha256-[A-Za-z0-9+/]{43}=$")

    class BranchRecord(Strict):
        pytorch: str = Field(pattern=VERSION_RE)
        python: str = Field(pattern=r"^3\.\d{1,2}$")
        cudnn: str = "9.x"
        min_driver: str = ""
        purpose: str = Field("python-variant", pattern=r"^[a-z][a-z-]*$")
        summary: str = ""
        pin: str = Field(pattern=PIN_RE)
        cpu_isas: list[str] = Field(default_factory=list)
        darwin_mps: bool = False
        vllm: str | None = None
        companions: list[str] = Field(default_factory=list)  # kind:cuda:arch:isa
        torch_source: TorchSource | None = None
        cuda: list[CudaGroup] = Field(default_factory=list)

    class Repository(Strict):
        branch: dict[str, BranchRecord] = Field(default_factory=dict)

    class RecordFile(Strict):
        repository: dict[str, Repository] = Field(default_factory=dict)

    return RecordFile


def _where(path: Path, loc: tuple) -> str:
    """'repository R, branch 'B', cuda[0].archs' from a pydantic error location."""
    parts = list(loc)
    out = []
    if parts[:1] == ["repository"] and len(parts) >= 2:
        out.append(f"repository {parts[1]}")
        parts = parts[2:]
        if parts[:1] == ["branch"] and len(parts) >= 2:
            out.append(f"branch '{parts[1]}'")
            parts = parts[2:]
    key = ""
    for p in parts:
        key += f"[{p}]" if isinstance(p, int) else (f".{p}" if key else str(p))
    if key:
        out.append(key)
    return f"{path} ({VARIABLE}): " + ", ".join(out)


def _load(path: Path) -> dict:
    """The file's TOML as is; {} when there is no file; ConfigError when it is no TOML of this shape."""
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        raise ConfigError(f"{path} ({VARIABLE}) is a directory, not the TOML file of created branches.") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} ({VARIABLE}) is not valid TOML: {err}.") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} ({VARIABLE}) cannot be read: {err}.") from None
    if "branch" in raw and "repository" not in raw:
        raise ConfigError(f"{path} ({VARIABLE}) holds [branch.NAME] tables without their repository (written by "
                          "an older torchbot): move each under [repository.\"<git directory>\".branch.NAME].")
    return raw


def _checked(path: Path, raw: dict) -> dict[str, dict[str, dict]]:
    """repository key -> branch name -> its TOML table, checked with pydantic (one line per mistake)."""
    from pydantic import ValidationError

    try:
        _model().model_validate(raw)
    except ValidationError as err:
        lines = [f"{_where(path, tuple(e['loc']))}: {e['msg']}" for e in err.errors()]
        raise ConfigError("\n".join(lines)) from None
    return {repo: dict(entry.get("branch", {})) for repo, entry in raw.get("repository", {}).items()}


def read_records(path: Path | None = None) -> dict[str, dict[str, dict]]:
    """repository key -> branch name -> its TOML table, checked; {} when there is no file."""
    path = path or branches_file()
    return _checked(path, _load(path))


def _catalog_problems(catalog: Catalog, name: str, raw: dict) -> list[str]:
    """What the catalog does not know, by key."""
    out = []
    for i, isa in enumerate(raw.get("cpu_isas", [])):
        if isa not in catalog.isas:
            out.append(f"cpu_isas[{i}]: unknown CPU ISA '{isa}' (known: {', '.join(catalog.isas)})")
    for i, group in enumerate(raw.get("cuda", [])):
        if group["version"] not in catalog.cuda:
            out.append(f"cuda[{i}].version: CUDA {group['version']} is not a known toolkit ({', '.join(catalog.cuda)})")
        for j, arch in enumerate(group["archs"]):
            if arch not in catalog.gpu_archs:
                out.append(f"cuda[{i}].archs[{j}]: unknown GPU architecture '{arch}'")
    for i, spec in enumerate(raw.get("companions", [])):
        parts = spec.split(":")
        if (len(parts) != 4 or parts[0] not in ("torchvision", "torchaudio") or parts[2] not in catalog.gpu_archs
                or parts[3] not in catalog.isas):
            out.append(f"companions[{i}]: {spec!r} is not kind:cuda:arch:isa with a torchvision/torchaudio kind and "
                       "a known GPU architecture and CPU ISA")
    return out


def recorded_branches(catalog: Catalog, key: str, path: Path | None = None) -> list[Branch]:
    """The branches recorded for repository ``key``, checked against ``catalog`` and expanded."""
    from config.catalog_data import expand_branches

    path = path or branches_file()
    whole = _load(path)
    repos = whole.get("repository", {})
    if isinstance(repos, dict) and key not in repos:
        return []  # nothing recorded here: the file is checked where its repositories are read
    raw = _checked(path, whole).get(key, {})
    lines = []
    for name, table in raw.items():
        where = _where(path, ("repository", key, "branch", name))
        lines += [f"{where}, {p}" for p in _catalog_problems(catalog, name, table)]
    if lines:
        raise ConfigError("\n".join(lines))
    try:
        return expand_branches(catalog, raw, f"{path} ({VARIABLE}, repository {key})")
    except CatalogError as err:  # the matrix check: one line naming the file
        raise ConfigError(str(err)) from None


def with_recorded_branches(catalog: Catalog, git_dir: str | os.PathLike) -> Catalog:
    """``catalog`` with the branches recorded for the repository at ``git_dir`` (recorded ones win
    over embedded ones of the same name); ``catalog`` itself when there are none. The same object
    while the record file is unchanged, so the reader's caches keyed by catalog stay warm."""
    path = branches_file()
    try:
        st = path.stat()
    except OSError:
        return catalog
    key = repository_key(git_dir)
    cache_key = (id(catalog), str(path), st.st_mtime_ns, st.st_size, key)
    merged = _MERGED.get(cache_key)
    if merged is None:
        extra = recorded_branches(catalog, key, path)
        merged = catalog.with_branches([*catalog.branches.values(), *extra], catalog.source) if extra else catalog
        if len(_MERGED) > 64:
            _MERGED.clear()
        _MERGED[cache_key] = merged
    return merged


def record_created_branch(repo_path: str | os.PathLike, branch: Branch, path: Path | None = None) -> Path:
    """Record ``branch`` under the repository at ``repo_path``; the file written. RefusedError when
    that repository has a branch of that name recorded already."""
    import tomli_w

    from config.catalog_data import branch_to_dict

    path = path or branches_file()
    key = repository_key(git_dir_of(repo_path))
    records = read_records(path)
    if branch.name in records.get(key, {}):
        raise RefusedError(f"Branch '{branch.name}' is already recorded for {key} in {path}.")
    records.setdefault(key, {})[branch.name] = branch_to_dict(branch)
    text = ("# Branches `torchbot release branch create` made, by repository (git directory); written by torchbot.\n"
            + tomli_w.dumps({"repository": {k: {"branch": v} for k, v in records.items()}}))
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".branches-", suffix=".toml")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"{path} ({VARIABLE}) cannot be written: {err.strerror or err}.") from None
    return path
