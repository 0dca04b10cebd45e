"""The truth a dashboard row is compared with (issue 35): the stand-ins (GitHub's pull requests
and commit statuses) and the remote (the bare origins' branches and pins). ``differences(d,
truth)`` lists every row of the dashboard's JSON ``d`` that disagrees, with what differs; used by
the multi-week tests of the dashboard and of the weekly loop."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.fixtures_pins import git


def pins_at(origin: Path, ref: str) -> set[str]:
    out = git(origin, "grep", "-ho", r"nixpkgs/archive/[0-9a-f]\{40\}", ref, "--", ".flox/pkgs")
    return {line.rsplit("/", 1)[1] for line in out.split()}


def rev_at(origin: Path, ref: str) -> str:
    return git(origin, "rev-parse", ref).strip()


def branches(origin: Path) -> set[str]:
    names = set(git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split())
    return {n for n in names if not n.startswith("bump/")}


def status_of(fake, sha: str) -> tuple[int, int] | None:
    """(built, failed) the final ``torchbot/builds`` status of ``sha`` says, or None."""
    got = fake.statuses.of(sha)
    if not got:
        return None
    m = re.match(r"(\d+)/(\d+) built(?:, (\d+) failed)?", got[-1]["description"])
    return (int(m[1]), int(m[3] or 0)) if m else None


def merges(origin: Path, base: str, head: str) -> bool:
    """Whether ``head`` merges into ``base`` on the remote without a conflict."""
    return subprocess.run(["git", f"--git-dir={origin}", "merge-tree", "--write-tree", base, head],
                          capture_output=True, check=False).returncode == 0


def differences(d: dict, truth: dict) -> list[str]:
    """Every dashboard row that disagrees with the stand-ins and the remote, with what differs."""
    out: list[str] = []
    needs = {(n["repository"], n["branch"], n["kind"]) for n in d["needs_a_human"]}
    for repo in d["repositories"]:
        origin, fake = truth[repo["name"]]
        shown = {b["branch"]: b for b in repo["branches"]}
        if set(shown) != branches(origin):
            out.append(f"{repo['name']}: branches {sorted(set(shown) ^ branches(origin))} differ")
        for name, b in shown.items():
            row = f"{repo['name']} {name}"
            if b["head"] != rev_at(origin, name):
                out.append(f"{row}: head {b['head'][:7]} is not the remote's {rev_at(origin, name)[:7]}")
            if {p["rev"] for p in b["pins"]} != pins_at(origin, name):
                out.append(f"{row}: pins differ from the remote's")
            mine = [p for p in fake.pulls.prs.values() if p["base"]["ref"] == name]
            pr = b["bump"]["pull_request"]
            if not mine:
                if pr is not None:
                    out.append(f"{row}: shows PR #{pr['number']}, GitHub has none")
                continue
            last = max(mine, key=lambda p: p["number"])
            state = "merged" if last.get("merged_at") else "closed" if last["state"] == "closed" else "open"
            if pr is not None and state == "open" and pr["state"] == "conflict":  # GitHub lists it open
                state = "conflict" if not merges(origin, name, last["head"]["ref"]) else "open"
            if pr is None or (pr["number"], pr["state"]) != (last["number"], state):
                out.append(f"{row}: PR {pr and (pr['number'], pr['state'])} is not GitHub's "
                           f"{(last['number'], state)}")
                continue
            if state == "open" and pr["sha"] != last["head"]["sha"]:
                out.append(f"{row}: PR head {pr['sha']} is not GitHub's {last['head']['sha']}")
            status = status_of(fake, last["head"]["sha"])
            counts = (pr["builds"].get("built", 0), pr["builds"].get("failed", 0))
            if status is not None and counts != status:
                out.append(f"{row}: PR builds {counts} are not its status's {status}")
            if state == "open" and b["bump"]["state"] not in ("pr-open", "held"):
                out.append(f"{row}: bump state {b['bump']['state']} with PR #{pr['number']} open")
            if state == "merged" and status is not None and b["builds"]["built"] != status[0]:
                out.append(f"{row}: {b['builds']['built']} built at the merged branch, its PR built {status[0]}")
            if state == "open" and status and status[1] and (repo["name"], name, "pr-failed") not in needs:
                out.append(f"{row}: failed builds at its PR head are not among the needs")
            if state == "closed" and (repo["name"], name, "pr-closed") not in needs:
                out.append(f"{row}: its PR closed unmerged is not among the needs")
            if state == "open" and not fake.dispatches and (repo["name"], name, "pr-stuck") not in needs:
                out.append(f"{row}: an open PR nothing builds is not among the needs")
        for g in (x for b in shown.values() for x in b["bump"]["groups"]):
            if g["kind"] in ("bumped", "kept-promise") and not re.fullmatch(r"[0-9a-f]{40}", g["rev"] or ""):
                out.append(f"{repo['name']}: a {g['kind']} group without its target revision")
    return out
