"""The maintainers' history of build-pytorch / build-torchvision, read for bench/replay.py.

- ``History(gitdir)``: every non-merge commit with its README (one ``git cat-file --batch``);
- ``self_name``: the branch a README says it belongs to (the banner ``You are on the `B`
  branch``, ``(this branch: B)``, the row marked ⬅️, else a bare ``git checkout B`` line), so a
  commit is replayed on the branch name it had *then* (``cuda-12_9`` before it was renamed);
- ``operations``: the pin moves (recipes kept, their nixpkgs pin moved from one commit to
  another) and branch creations (most recipes renamed from the parent's) among them;
- ``nixpkgs_facts``: what the READMEs document about each pin -- PyTorch and CUDA per pin from
  tables with a PyTorch and a nixpkgs pin column and from ``| Component | Version |`` tables;
  a PyTorch the recipes on that pin build by a source override is not nixpkgs' torch there.

Only reads the git directory. Not part of torchbot or its tests.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from release.recipes.markdown import find_tables, plain, split_row  # noqa: E402

RECIPES = ".flox/pkgs/"
PIN_URL = re.compile(r"nixpkgs/archive/([0-9a-f]{40})\.tar\.gz")
_HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
_VER = re.compile(r"\d+\.\d+(?:\.\d+)?")


def git(gitdir: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], check=True, capture_output=True,
                          input=input).stdout


def batch(gitdir: Path, specs: list[str]) -> dict[str, str]:
    """``rev:path`` -> text for every spec that exists."""
    if not specs:
        return {}
    raw = git(gitdir, "cat-file", "--batch", input="".join(s + "\n" for s in specs).encode())
    out, i = {}, 0
    for spec in specs:
        end = raw.index(b"\n", i)
        head = raw[i:end].split()
        if head[-1] == b"missing":
            i = end + 1
            continue
        n = int(head[2])
        out[spec] = raw[end + 1:end + 1 + n].decode("utf-8", errors="replace")
        i = end + 2 + n
    return out


def self_name(readme: str | None) -> str | None:
    if not readme:
        return None
    m = re.search(r"You are on the `([^`]+)` branch", readme)
    if m:
        return m[1]
    m = re.search(r"\(this branch: `?([\w.-]+)`?\)", readme)
    if m:
        return m[1]
    for line in readme.splitlines():
        if line.startswith("|") and "⬅" in line and (m := re.search(r"`([^`]+)`", line)):
            return m[1]
    m = re.search(r"^\s*git checkout ([\w.-]+)\s*$", readme, re.M)
    return m[1] if m else None


def listed_branches(readme: str | None) -> set[str]:
    """Branch names a README's Branch-first tables list."""
    out: set[str] = set()
    if not readme:
        return out
    lines = readme.splitlines()
    for t in find_tables(lines):
        if t.header and t.header[0] == "branch":
            for i in t.rows:
                cells = split_row(lines[i])
                m = re.search(r"`([^`]+)`", cells[0]) if cells else None
                if m:
                    out.add(m[1])
    return out


@dataclass
class Commit:
    sha: str
    parents: list[str]
    time: int
    subject: str
    readme: str | None = None

    @property
    def name(self) -> str | None:
        return self_name(self.readme)


@dataclass
class Operation:
    kind: str  # "bump" | "move" (a pin move with other edits) | "create"
    commit: Commit
    branch: str  # the branch the commit was on (its README's name then)
    source: str | None = None  # create: the branch derived from
    old_pin: str | None = None
    new_pin: str | None = None
    moved: list[str] = field(default_factory=list)  # recipe paths whose pin moved
    other_edits: int = 0  # changed recipe lines other than the pin (moves)
    added: int = 0
    removed: int = 0


class History:
    def __init__(self, gitdir: Path):
        self.gitdir = Path(gitdir)
        rows = git(self.gitdir, "rev-list", "--all", "--no-merges", "--format=%P|%ct|%s").decode().splitlines()
        self.commits: dict[str, Commit] = {}
        sha = None
        for line in rows:
            if line.startswith("commit "):
                sha = line.split()[1]
                continue
            parents, ct, subject = line.split("|", 2)
            self.commits[sha] = Commit(sha, parents.split(), int(ct), subject)
        readmes = batch(self.gitdir, [f"{c}:README.md" for c in self.commits])
        for c in self.commits.values():
            c.readme = readmes.get(f"{c.sha}:README.md")

    def branches_at(self, commit: Commit) -> dict[str, str]:
        """The branches as they were when ``commit`` was made: each name its parent's README
        lists (and the parent's own), at the newest commit not after it that says it is that branch."""
        parent = self.commits.get(commit.parents[0]) if commit.parents else None
        if parent is None:
            return {}
        names = listed_branches(parent.readme) | {parent.name or "main"}
        tips: dict[str, Commit] = {}
        for c in self.commits.values():
            n = c.name
            newer = n not in tips or c.time > tips[n].time
            if n in names and c.time <= parent.time and c.sha != commit.sha and newer:
                tips[n] = c
        tips[parent.name or "main"] = parent
        return {n: c.sha for n, c in tips.items()}

    def operations(self) -> list[Operation]:
        out = []
        for c in sorted(self.commits.values(), key=lambda c: c.time):
            if len(c.parents) != 1:
                continue
            op = self._operation(c)
            if op is not None:
                out.append(op)
        return out

    def _operation(self, c: Commit) -> Operation | None:
        status = git(self.gitdir, "diff-tree", "-r", "-M", "--name-status", "--no-commit-id", c.parents[0], c.sha,
                     "--", RECIPES).decode().splitlines()
        kinds = Counter(line[0] for line in status if line)
        renamed = [line.split("\t") for line in status if line.startswith("R")]
        parent = self.commits[c.parents[0]]
        if renamed and len(renamed) >= len(status) / 2 and c.name and c.name != (parent.name or "main"):
            return Operation("create", c, c.name or "?", source=parent.name or "main",
                             new_pin=_pin_of(self.gitdir, c.sha, renamed[0][2]), added=kinds.get("A", 0))
        modified = [line.split("\t")[1] for line in status if line.startswith("M")]
        if not modified:
            return None
        patch = git(self.gitdir, "diff", "-U0", c.parents[0], c.sha, "--", *modified).decode("utf-8", "replace")
        minus = set(re.findall(r"^-.*" + PIN_URL.pattern, patch, re.M))
        plus = set(re.findall(r"^\+.*" + PIN_URL.pattern, patch, re.M))
        if len(minus) != 1 or len(plus) != 1 or minus == plus:
            return None
        moved = [m[1] for m in re.finditer(r"^diff --git a/(\S+) b/\S+\n(?:(?!diff --git).*\n)*?\+.*nixpkgs/archive/",
                                           patch, re.M)]
        edits = [ln for ln in patch.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")
                 and not PIN_URL.search(ln) and not re.match(r"^[-+]\s*sha256\s*=", ln)]
        kind = "bump" if not edits and kinds.keys() <= {"M"} else "move"
        return Operation(kind, c, (parent.name or "main"), old_pin=minus.pop(), new_pin=plus.pop(), moved=moved,
                         other_edits=len(edits), added=kinds.get("A", 0), removed=kinds.get("D", 0))


def _pin_of(gitdir: Path, rev: str, path: str) -> str | None:
    text = batch(gitdir, [f"{rev}:{path}"]).get(f"{rev}:{path}", "")
    m = PIN_URL.search(text)
    return m[1] if m else None


def _override_versions(gitdirs: list[Path]) -> dict[str, set[str]]:
    """pin -> the PyTorch major.minor versions recipes on it build by a source override (the reader's facts)."""
    from config.catalog_data import load_catalog
    from release.recipes.facts import read_recipe

    cat = load_catalog()
    out: dict[str, set[str]] = defaultdict(set)
    for gd in gitdirs:
        blobs = git(gd, "rev-list", "--all", "--objects", "--", RECIPES).decode().splitlines()
        wanted = {}
        for line in blobs:
            parts = line.split(" ", 1)
            if len(parts) == 2 and parts[1].endswith(".nix"):
                wanted.setdefault(parts[0], parts[1])
        texts = batch(gd, list(wanted))
        for blob, text in texts.items():
            if "fetchFromGitHub" not in text or "version" not in text:
                continue
            f = read_recipe(cat, wanted[blob].rsplit("/", 1)[-1], text)
            if f.pytorch and f.pin:
                out[f.pin].add(".".join(f.pytorch.split(".")[:2]))
    return out


def nixpkgs_facts(histories: list[History]) -> tuple[dict[str, str], dict[str, set[str]], set[str]]:
    """(pin -> nixpkgs' torch, pin -> cudaPackages sets, every full pin seen), from what the READMEs
    document; short pins are matched to the full pins the recipes and READMEs name."""
    full: set[str] = set()
    claims: dict[str, Counter] = defaultdict(Counter)
    cuda: dict[str, set[str]] = defaultdict(set)
    for h in histories:
        full.update(PIN_URL.findall(git(h.gitdir, "log", "--all", "-p", "--format=", "--", RECIPES).decode(
            "utf-8", "replace")))
        for c in h.commits.values():
            if c.readme:
                full.update(re.findall(r"\b[0-9a-f]{40}\b", c.readme))
                _readme_claims(c.readme, claims, cuda)
    overrides = _override_versions([h.gitdir for h in histories])
    torch: dict[str, str] = {}
    sets: dict[str, set[str]] = defaultdict(set)
    for short in set(claims) | set(cuda):
        pins = [p for p in full if p.startswith(short)]
        if len(pins) != 1:
            continue
        pin = pins[0]
        for v in cuda[short]:
            sets[pin].add("cudaPackages_" + v.replace(".", "_"))
            if v.startswith("13."):
                sets[pin].add("cudaPackages_13")
        said = Counter({v: n for v, n in claims[short].items()
                        if ".".join(v.split(".")[:2]) not in overrides.get(pin, set())})
        if said:
            torch[pin] = said.most_common(1)[0][0]
    return torch, sets, full


def _readme_claims(readme: str, claims: dict[str, Counter], cuda: dict[str, set[str]]) -> None:
    lines = readme.splitlines()
    for t in find_tables(lines):
        h = t.header
        col = {name: (h.index(name) if name in h else None) for name in ("pytorch", "cuda")}
        pin_col = next((i for i, x in enumerate(h) if x in ("nixpkgs pin", "nixpkgs", "pin")), None)
        if pin_col is not None and col["pytorch"] is not None:
            for i in t.rows:
                cells = split_row(lines[i])
                if pin_col >= len(cells):
                    continue
                said_torch = _VER.findall(plain(cells[col["pytorch"]])) if col["pytorch"] < len(cells) else []
                said_cuda = _VER.findall(plain(cells[col["cuda"]])) if col["cuda"] is not None and \
                    col["cuda"] < len(cells) else []
                for p in _HEX.findall(cells[pin_col]):
                    short = p[:7]
                    if said_torch:
                        claims[short][said_torch[0]] += 1
                    cuda[short].update(".".join(v.split(".")[:2]) for v in said_cuda)
        if h[:2] == ["component", "version"]:
            rows = {plain(split_row(lines[i])[0]).lower(): plain(split_row(lines[i])[1]) for i in t.rows
                    if len(split_row(lines[i])) >= 2}
            for p in _HEX.findall(rows.get("nixpkgs", "")):
                short = p[:7]
                if _VER.findall(rows.get("pytorch", "")):
                    claims[short][_VER.findall(rows["pytorch"])[0]] += 1
                for k, v in rows.items():
                    if k.startswith("cuda"):
                        cuda[short].update(".".join(x.split(".")[:2]) for x in _VER.findall(v))
