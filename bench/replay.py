"""Replay the maintainers' own history with torchbot and diff: the best test of a release manager.

    .venv/bin/python bench/replay.py /work/.mirror/barstoolbluz+build-pytorch/repo \\
        /work/.mirror/barstoolbluz+build-torchvision/repo [--only SHA] [--readme-lines N]

For every git directory given, bench/replay_history.py finds the maintainers' pin moves (recipes
kept, their nixpkgs pin moved) and branch creations (most recipes renamed from the parent's, the
README naming a new branch). Each is replayed on a temporary clone holding the branches as they
were then (their names then, e.g. ``cuda-12_9``): the parent of the maintainers' commit, then the
same operation with torchbot --

- a pin move: ``release bump-pins --branch B --rev NEW`` (``--from-pin OLD`` on a branch with
  several pins, ``--force`` on a vLLM branch); if the guard refuses a PyTorch move, again with
  ``--pytorch X.Y.Z`` (what the new pin holds), and ``--torch-src`` when the maintainers' recipes
  moved to a source override;
- a creation: ``release branch create NEW --from SOURCE --pin P --python … --pytorch …``;

and prints, per commit, the files each side changed, how many recipes are identical (or
identical apart from the ``sha256`` torchbot writes), the README differences, then a summary.
nixpkgs is a loopback fake (tests/support/fakes_nixpkgs.py) serving what the repositories' READMEs
document about each pin (bench/replay_history.nixpkgs_facts); tarballs are the fake's, hashed by
the real ``nix-prefetch-url``. Needs the fetched repositories, so it is not part of the tests.
Writes only in a temporary directory.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from replay_history import RECIPES, History, Operation, nixpkgs_facts  # noqa: E402

from tests.support.fakes_nixpkgs import FakeNixpkgs  # noqa: E402

_SHA256_LINE = re.compile(r'(?m)^[ \t]*sha256\s*=\s*"[^"]*";\n')


def run(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def clone_at(gitdir: Path, dest: Path, branches: dict[str, str]) -> Path:
    """A clone of ``gitdir`` whose only branches are ``branches`` (name -> commit), no remote."""
    run("git", "clone", "-q", "--no-checkout", str(gitdir), str(dest))
    run("git", "-C", str(dest), "remote", "remove", "origin")
    run("git", "-C", str(dest), "checkout", "-q", "--detach")
    for ref in run("git", "-C", str(dest), "for-each-ref", "--format=%(refname)", "refs/heads/").split():
        run("git", "-C", str(dest), "update-ref", "-d", ref)
    for name, sha in branches.items():
        run("git", "-C", str(dest), "branch", "-q", name, sha)
    for key, value in (("user.name", "replay"), ("user.email", "replay@localhost")):
        run("git", "-C", str(dest), "config", key, value)
    return dest


def changed(repo: Path, a: str, b: str) -> dict[str, str]:
    """path -> status (A/M/D) between two commits (no rename detection: paths as written)."""
    out = run("git", "-C", str(repo), "diff-tree", "-r", "--no-renames", "--name-status", a, b)
    return {line.split("\t", 1)[1]: line[0] for line in out.splitlines() if "\t" in line}


def show(repo: Path, rev: str, path: str) -> str | None:
    r = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True, check=False)
    return r.stdout if r.returncode == 0 else None


def compare(repo: Path, parent: str, theirs: str, ours: str, readme_lines: int) -> dict:
    """The two sides' changes against the parent: files, recipes, README."""
    a, b = changed(repo, parent, theirs), changed(repo, parent, ours)
    both = sorted(set(a) & set(b))
    recipes = Counter()
    differ = []
    for path in both:
        if not path.startswith(RECIPES) or a[path] == b[path] == "D":
            continue
        t, o = show(repo, theirs, path), show(repo, ours, path)
        if t == o:
            recipes["identical"] += 1
        elif t is not None and o is not None and _SHA256_LINE.sub("", t) == _SHA256_LINE.sub("", o):
            recipes["identical apart from sha256"] += 1
        else:
            recipes["differ"] += 1
            differ.append(path)
    others = Counter()
    for path in both:
        if path.startswith(RECIPES) or path == "README.md" or a[path] == b[path] == "D":
            continue
        others["identical" if show(repo, theirs, path) == show(repo, ours, path) else "differ"] += 1
    readme = None
    if "README.md" in a or "README.md" in b:
        t, o = show(repo, theirs, "README.md") or "", show(repo, ours, "README.md") or ""
        diff = [d for d in difflib.unified_diff(t.splitlines(), o.splitlines(), "maintainers", "torchbot", n=0,
                                                lineterm="") if d[:1] in "+-" and d[:3] not in ("+++", "---")]
        readme = {"differ": len(diff), "lines": diff[:readme_lines], "kinds": _readme_kinds(diff, a, b)}
    return {"theirs": a, "ours": b, "both": both, "recipes": recipes, "differ": differ, "readme": readme,
            "others": others}


def _readme_kinds(diff: list[str], theirs: dict[str, str], ours: dict[str, str]) -> Counter:
    """Differing README lines by what they are about: rows about other branches (what each side
    says of the branches as they were), what only the maintainers added (packages, their GPU
    architectures), the rest."""
    added = {Path(p).stem for p, st in theirs.items() if st == "A" and p not in ours and p.startswith(RECIPES)}
    archs = {m.upper() for p in added for m in re.findall(r"-(sm\d+)-", p)}
    own = re.search(r"You are on the `([^`]+)`", "\n".join(diff))
    kinds: Counter = Counter()
    for line in diff:
        body = line[1:]
        first = re.match(r"\|\s*\**`([^`]+)`", body)
        if first and (own is None or first[1] != own[1]) and "⬅" not in body:
            kinds["rows about other branches"] += 1
        elif any(a in body for a in added) or any(re.search(rf"\b{a}\b", body) for a in archs):
            kinds["what only the maintainers added"] += 1
        else:
            kinds["other"] += 1
    return kinds


def _settings(tmp: Path, repo: Path, fake: FakeNixpkgs):
    from config.settings import Settings

    return Settings(_env_file=None, repo_path=repo, state_db=f"sqlite:///{tmp / 'state.sqlite'}", log_dir=tmp / "logs",
                    channels_url=fake.channels_url, github_api_url=fake.api_url, nixpkgs_tarball_url=fake.tarball_url,
                    http_retries=1, nix_store=str(tmp / "nix-store"))


def replay_bump(op: Operation, repo: Path, ctx, torch: dict[str, str]) -> tuple[str | None, list[str]]:
    """torchbot's commit for the pin move (None: refused) and what happened."""
    from config.errors import TorchbotError
    from release.pins.commands import plan_bump

    said: list[str] = []
    opts = {"force": "vllm" in op.branch}
    if len(set(re.findall(r"archive/([0-9a-f]{40})", run("git", "-C", str(repo), "grep", "-h", "archive/",
                                                         op.branch, "--", RECIPES)))) > 1:
        opts["from_pin"] = op.old_pin[:7]
    src = _torch_src(repo, op)
    tries = [dict(opts)]
    if src:
        tries = [dict(opts, torch_src=src)]
    elif torch.get(op.new_pin):
        tries.append(dict(opts, pytorch=torch[op.new_pin]))
    for i, kw in enumerate(tries):
        try:
            plan = plan_bump(ctx, op.branch, op.new_pin, **kw)
            said.append(f"plan: {plan.headline()}")
            result = plan.apply()
            return result.outcome.commits.get(op.branch), said
        except TorchbotError as err:
            then = f" (then with {', '.join(f'--{k}' for k in tries[i + 1])})" if i + 1 < len(tries) else ""
            said.append(f"refused{then}: {err.message[:220]}")
    return None, said


def _torch_src(repo: Path, op: Operation) -> str | None:
    """REV,HASH when the maintainers' moved recipes build PyTorch from a source override they did
    not build before (the reader's facts), else None."""
    from config.catalog_data import load_catalog
    from release.recipes.facts import read_recipe

    cat = load_catalog()
    for path in op.moved:
        before, after = show(repo, op.commit.parents[0], path), show(repo, op.commit.sha, path)
        if before is None or after is None:
            continue
        a, b = read_recipe(cat, Path(path).name, before), read_recipe(cat, Path(path).name, after)
        if b.torch_source and (not a.torch_source or a.torch_source.version != b.torch_source.version):
            rev = re.search(r'rev\s*=\s*"([^"]*)"', after)
            tag = rev[1].replace("${version}", b.torch_source.version) if rev else f"v{b.torch_source.version}"
            return f"{tag},{b.torch_source.hash}"
    return None


def replay_create(op: Operation, repo: Path, ctx, torch: dict[str, str]) -> tuple[str | None, list[str]]:
    from config.errors import TorchbotError
    from config.naming import parse_package_name
    from release.branches.commands import create_branch

    files = list(run("git", "-C", str(repo), "ls-tree", "--name-only", op.commit.sha, RECIPES).split())
    parsed = [parse_package_name(Path(p).stem) for p in files]
    python = Counter(p.python for p in parsed if p).most_common(1)[0][0]
    cuda = sorted({p.cuda for p in parsed if p and p.cuda}, key=lambda v: [-int(x) for x in v.split(".")])
    pytorch = torch.get(op.new_pin) or "unknown"
    said = [f"release branch create {op.branch} --from {op.source} --pin {op.new_pin[:7]} --python {python} "
            f"--cuda {','.join(cuda)} --pytorch {pytorch}"]
    try:
        result = create_branch(ctx, op.branch, repo=str(repo), pytorch=pytorch, python=python, cuda=cuda,
                               pin=op.new_pin, from_branch=op.source)
    except TorchbotError as err:
        return None, [*said, f"refused: {err.message[:220]}"]
    said += [f"note: {n}" for n in result.data["notes"]]
    return result.data["commit"], said


def report(op: Operation, said: list[str], cmp: dict | None) -> list[str]:
    c = op.commit
    what = f"derive {op.source} -> {op.branch}" if op.kind == "create" else \
        f"{op.kind} {op.branch} {op.old_pin[:7]} -> {op.new_pin[:7]}"
    lines = [f"{c.sha[:7]} {c.subject[:70]}", f"  [{what}]"]
    lines += [f"  {s}" for s in said]
    if cmp is None:
        return lines
    theirs, ours = cmp["theirs"], cmp["ours"]
    only_t = sorted(set(theirs) - set(ours))
    only_o = sorted(set(ours) - set(theirs))
    lines.append(f"  files: maintainers {len(theirs)}, torchbot {len(ours)}, both {len(cmp['both'])}")
    if only_t:
        lines.append(f"    maintainers only ({len(only_t)}): {_paths(only_t)}")
    if only_o:
        lines.append(f"    torchbot only ({len(only_o)}): {_paths(only_o)}")
    r = cmp["recipes"]
    total = sum(r.values())
    lines.append(f"  recipes: {r['identical']}/{total} identical, {r['identical apart from sha256']} identical apart "
                 f"from sha256, {r['differ']} differ" + (f" ({_paths(cmp['differ'])})" if cmp["differ"] else ""))
    if cmp["others"]:
        o = cmp["others"]
        lines.append(f"  other files both changed: {o['identical']} identical, {o['differ']} differ")
    if cmp["readme"] is not None:
        d = cmp["readme"]
        kinds = ", ".join(f"{n} {k}" for k, n in d["kinds"].most_common())
        lines.append("  README: identical" if not d["differ"] else f"  README: {d['differ']} lines differ ({kinds})")
        lines += [f"    {x[:150]}" for x in d["lines"]]
    return lines


def _paths(paths: list[str]) -> str:
    names = [p.rsplit("/", 1)[-1] for p in paths]
    return ", ".join(names[:4]) + (f", … (+{len(names) - 4})" if len(names) > 4 else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gitdirs", nargs="+", type=Path, metavar="GITDIR")
    ap.add_argument("--only", action="append", default=[], help="replay only commits starting with this SHA")
    ap.add_argument("--readme-lines", type=int, default=6, help="README diff lines to show per commit")
    ap.add_argument("--keep", type=Path, help="keep the replay clones in this directory (to read the diffs)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="torchbot-replay-", dir=args.keep))
    os.environ["TORCHBOT_CACHE_DIR"] = str(tmp / "cache")
    os.environ["TORCHBOT_LOCAL_BRANCHES"] = str(tmp / "branches.toml")
    histories = [History(gd) for gd in args.gitdirs]
    torch, sets, pins = nixpkgs_facts(histories)
    summary: list[tuple[Operation, dict | None, list[str]]] = []
    try:
        with FakeNixpkgs() as fake:
            for pin in pins:
                fake.commits.add(pin)
                fake.cuda_sets[pin] = sets.get(pin, set())
            fake.torch.update(torch)
            print(f"nixpkgs facts from the READMEs: {len(torch)} pins with a torch version, "
                  f"{sum(1 for p in pins if sets.get(p))} with CUDA sets")
            for h in histories:
                print(f"\n== {h.gitdir}")
                for n, op in enumerate(h.operations()):
                    if args.only and not any(op.commit.sha.startswith(s) for s in args.only):
                        continue
                    summary.append((op, *_replay(h, op, tmp / f"r{len(summary)}-{n}", fake, torch, args.readme_lines)))
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\nSummary")
    for op, cmp, said in summary:
        print("  " + _summary_line(op, cmp, said))
    return 0


def _replay(h: History, op: Operation, work: Path, fake: FakeNixpkgs, torch, readme_lines: int
            ) -> tuple[dict | None, list[str]]:
    from config.catalog_data import load_catalog
    from release.context import Context

    work.mkdir(parents=True)
    branches = h.branches_at(op.commit)
    repo = clone_at(h.gitdir, work / "repo", branches)
    ctx = Context(_settings(work, repo, fake), use_repo=False)
    load_catalog.cache_clear()
    replay = replay_create if op.kind == "create" else replay_bump
    ours, said = replay(op, repo, ctx, torch)
    cmp = compare(repo, op.commit.parents[0], op.commit.sha, ours, readme_lines) if ours else None
    print("\n".join(report(op, said, cmp)))
    return cmp, said


def _summary_line(op: Operation, cmp: dict | None, said: list[str]) -> str:
    what = f"{op.kind:6} {op.commit.sha[:7]} {op.branch}"
    if cmp is None:
        why = next((s.split(": ", 1)[1] for s in reversed(said) if s.startswith("refused")), "")
        return f"{what}: refused: {re.sub(r'[.][a-z]+/pkgs/', '', why)[:170]}"
    moved = [m for s in said if s.startswith("plan:") for m in re.findall(r"PyTorch \S+ -> \S+ \([^)]*\)", s)]
    if moved:
        what += f" [{moved[0]}]"
    r = cmp["recipes"]
    same = r["identical"] + r["identical apart from sha256"]
    extra = len(set(cmp["theirs"]) - set(cmp["ours"]))
    readme = cmp["readme"]
    kinds = ", ".join(f"{n} {k}" for k, n in readme["kinds"].most_common()) if readme else ""
    readme_text = "README identical" if readme and not readme["differ"] else (
        f"README {readme['differ']} lines differ: {kinds}" if readme else "no README change")
    return (f"{what}: {same}/{sum(r.values())} recipes identical (apart from sha256), "
            f"{extra} files only the maintainers changed, {readme_text}")


if __name__ == "__main__":
    raise SystemExit(main())
