"""One scheduled week of the release loop on fresh clones of the real build-pytorch and
build-torchvision (issue 25), reported per branch.

    .venv/bin/python bench/loop.py [/work/.mirror/barstoolbluz+build-pytorch/repo \\
        /work/.mirror/barstoolbluz+build-torchvision/repo] [--no-automerge] [--fail GLOB] [--weeks N]

Each mirror is copied to a local bare repository under ``<tmp>/github.com/barstoolbluz/<name>.git``
(its "GitHub"; pushes go nowhere real) and cloned from there: a fresh clone, ``main`` local and
every other branch only as ``origin/*``. The stand-ins on 127.0.0.1: nixpkgs
(tests/support/fakes_nixpkgs.py) whose history holds every pin the branches use, with the torch
the READMEs document for it (bench/replay_history.nixpkgs_facts), then a torch bump and a channel
head carrying a newer torch than any pin; GitHub (tests/support/fakes_github.py, one per
repository, chained behind one API base) with pull requests, commit statuses, merges and the
Actions runs of the build workflow (every job succeeds unless ``--fail`` names it); Slack for the
announcements. Then the scheduler's own jobs run once each, as the weekly run does: ``bump``
(every branch and pin group, delivered as pull requests), which builds each bump at its PR's head
and reports to the PR; ``publish``; ``flush-announcements``. Printed: the bump's per-group
outcomes, then per branch the pull request, the pins before and after, the GitHub build (commit,
variants, result), the PR's status, whether it merged, and what was published and announced.

``--weeks N`` runs N weeks instead (issue 34): the channel as set up, then nothing new, a new
commit, the channel going back to week 1's head, nothing new, then a new commit each week; one
line per week: outcomes, exit status, PRs opened/updated, dispatches/variant builds, merges,
variants published, release threads announced.

Each repository's figures are its own: build-torchvision's pull requests are built in its own
GitHub stand-in's runs and merged with their build-pytorch pair; builds per changed variant are
counted from each repository's runner log (``Builds of build-pytorch: …``, ``Builds of
build-torchvision: …``), then the torchbot host's builds, then Slack messages per branch of each.

Not part of the tests (needs the mirrors). Writes only in a temporary directory.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench._home import isolate  # noqa: E402
from config.setting_values import DEFAULT_RUNNERS  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from replay_history import History, nixpkgs_facts  # noqa: E402

from tests.support.fake_runners import SHIMS, Runners, read_log  # noqa: E402
from tests.support.fakes_github import FakeGitHub  # noqa: E402
from tests.support.fakes_nixpkgs import FakeNixpkgs  # noqa: E402
from tests.support.fakes_slack import FakeSlack  # noqa: E402

MIRRORS = [Path("/work/.mirror/barstoolbluz+build-pytorch/repo"),
           Path("/work/.mirror/barstoolbluz+build-torchvision/repo")]
OWNER = "barstoolbluz"
CHANNEL = "C0ANNOUNCE"
CUDA_SETS = {"cudaPackages", "cudaPackages_12_6", "cudaPackages_12_8", "cudaPackages_12_9", "cudaPackages_13",
             "cudaPackages_13_0", "cudaPackages_13_1"}
PIN_RE = re.compile(r"nixpkgs/archive/([0-9a-f]{40})")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def pins_at(repo: Path, ref: str) -> collections.Counter:
    try:
        out = git(repo, "grep", "-ho", r"nixpkgs/archive/[0-9a-f]\{40\}", ref, "--", ".flox/pkgs")
    except subprocess.CalledProcessError:
        return collections.Counter()
    return collections.Counter(line.rsplit("/", 1)[1] for line in out.split())


def world(tmp: Path, mirrors: list[Path]) -> list[tuple[str, Path, Path]]:
    """(name, bare "GitHub" origin, fresh clone) per mirror."""
    out = []
    for mirror in mirrors:
        name = "build-torchvision" if "torchvision" in str(mirror) else "build-pytorch"
        origin = tmp / "github.com" / OWNER / f"{name}.git"
        origin.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(mirror), str(origin)], check=True)
        clone = tmp / "clones" / name
        subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
        out.append((name, origin, clone))
    return out


def nixpkgs(fake: FakeNixpkgs, origins: list[Path], mirrors: list[Path]) -> tuple[str, str]:
    """Every pin the branches use, oldest torch first, each with its documented torch; then a torch
    bump past the newest and the channel head. Returns (head, its torch)."""
    torch, _sets, _full = nixpkgs_facts([History(m) for m in mirrors])
    used: set[str] = set()
    for origin in origins:
        for ref in git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split():
            used |= set(pins_at(origin, ref))
    known = sorted({torch[p] for p in used if p in torch}, key=vkey) or ["2.8.0"]
    by_version: dict[str, list[str]] = collections.defaultdict(list)
    for pin in sorted(used):
        by_version[torch.get(pin, known[0])].append(pin)
    for n, version in enumerate(known, start=1):
        fake.add_commit(f"{n:04d}" * 10, f"python3Packages.torch: -> {version}", torch=version, cuda_sets=CUDA_SETS)
        for pin in by_version[version]:
            fake.add_commit(pin, "cudaPackages: update")
        fake.add_commit(f"{n:04d}ffff" * 5, "hello: 2.12 -> 2.12.1")  # the newest commit keeping it
    newest = vkey(known[-1])
    head_torch = "2.9.1" if newest < (2, 9, 1) else f"{newest[0]}.{newest[1]}.{(newest[2:] or (0,))[0] + 1}"
    fake.add_commit("2291" * 10, f"python3Packages.torch: {known[-1]} -> {head_torch}", torch=head_torch)
    head = "feed" * 10
    fake.add_commit(head, "firefox: 140 -> 141")
    fake.channels["nixos-unstable"] = head
    return head, head_torch


def report(ctx, repos, gh_by_repo, before, slack, lines) -> None:
    from release.builds import run as builds
    from release.publishing.publish import held
    from release.state import Publish, Release, open_state

    st = open_state(ctx.settings.state_db)
    with st.session() as s:  # each repository's rows apart (None: build-pytorch's, the first)
        published = collections.Counter((p.repo, p.branch) for p in s.query(Publish))
        releases = {(r.repo, r.branch) for r in s.query(Release)}
    waiting = collections.Counter((b.repo, b.branch) for b, _ in held(ctx))
    threads = [m["text"].splitlines()[0] for m in slack.messages(CHANNEL) if not m.get("thread_ts")]
    for name, origin, _clone in repos:
        gh = gh_by_repo[name]
        recorded_as = None if name == repos[0][0] else f"{OWNER}/{name}"  # Build.repo, Publish.repo
        prs = {p["base"]["ref"]: p for p in gh.pulls.prs.values()}
        print(f"\n{name}")
        for branch in git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split():
            if branch.startswith("bump/"):
                continue
            old, new = before[(name, branch)], pins_at(origin, branch)
            pr = prs.get(branch)
            print(f"  {branch}")
            if pr is None:
                said = [ln.strip() for ln in lines if ln.strip().startswith(branch + " (")]
                print("    no pull request" + (": " + "; ".join(said)[:300] if said else ""))
                continue
            head = pr["head"]["sha"]
            pins_pr = pins_at(origin, head)
            moves = ", ".join(f"{a[:7]}" for a in old) + " -> " + ", ".join(f"{b[:7]}" for b in pins_pr)
            print(f"    PR #{pr['number']} {pr['head']['ref']} ({pr['state']}"
                  f"{', merged' if pr['merged_at'] else ''}): pins {moves}")
            rows = [r for r in builds.status(ctx, branch) if r["commit"] == head and r["repo"] == recorded_as]
            if rows:
                states = collections.Counter(r["state"] for r in rows)
                print(f"    GitHub build at {head[:12]} (the PR head): {len(rows)} variant(s), "
                      + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
            else:
                print(f"    GitHub build: none at {head[:12]}")
            status = gh.statuses.of(head)
            if status:
                print(f"    status torchbot/builds: {status[-1]['state']} \"{status[-1]['description']}\" "
                      f"({len(status)} posted)")
            if pr["merged_at"]:
                print(f"    merged: {branch} is now {git(origin, 'rev-parse', branch).strip()[:12]} "
                      f"(pins {', '.join(p[:7] for p in new)})")
            key = (recorded_as, branch)
            if published[key] or waiting[key]:  # the state DB, this repository's rows
                print(f"    published {published[key]}, waiting for their branch {waiting[key]}"
                      + ("; announced" if key in releases and any(branch in t for t in threads) else ""))


WEEKS = ("the channel head as set up", "nothing new", "a new commit", "back to week 1's head",
         "nothing new")  # then a new commit each week


def weeks(ctx, nix, chain, slack, n: int) -> int:
    """``n`` scheduled weeks (bump, publish, flush-announcements each); per week one line: the
    bump's outcomes as delivered (the state DB's), the exit status a `bump-pins --all` would give
    then, pull requests opened/updated, GitHub dispatches and variant builds, merges, variants
    published, release threads announced."""
    from release.pins.commands import plan_bump
    from release.schedule import jobs as schedule
    from release.state import Publish, open_state
    from release.state.record import rows  # one row per repository x branch x pin group: its last bump's outcome

    st = open_state(ctx.settings.state_db)
    first = nix.channels["nixos-unstable"]
    seen = {"prs": 0, "edits": 0, "dispatches": 0, "jobs": 0, "merges": 0, "published": 0, "threads": 0}
    print(f"\n{'week':<5} {'channel':<40} {'outcomes':<48} exit  PRs new/upd  dispatch/builds  merged  "
          "published  announced  time")
    for week in range(1, n + 1):
        what = WEEKS[week - 1] if week <= len(WEEKS) else "a new commit"
        if what == "a new commit":
            rev = f"{week:04x}" * 10
            nix.add_commit(rev, f"hello: week {week}")
            nix.channels["nixos-unstable"] = rev
        elif what.startswith("back to"):
            nix.channels["nixos-unstable"] = first
        t0 = time.perf_counter()
        for job in ("bump", "publish", "flush-announcements"):
            schedule.run_now(ctx, job)
        took = time.perf_counter() - t0
        check = plan_bump(ctx, "all", None, dry_run=True).apply()  # the exit status a run now would give
        counts = collections.Counter(r.bump_kind for r in rows(st))  # the week's own outcomes, as delivered
        with st.session() as s:
            published = s.query(Publish).count()
        now = {"prs": sum(len(g.pulls.prs) for g in chain), "edits": sum(len(g.pulls.edits) for g in chain),
               "dispatches": sum(len(g.dispatches) for g in chain),
               "jobs": sum(len(r["packages"]) for g in chain for r in g.runs.values()),
               "merges": sum(len(g.pulls.merges) for g in chain), "published": published,
               "threads": len([m for m in slack.messages(CHANNEL) if not m.get("thread_ts")])}
        d = {k: now[k] - seen[k] for k in now}
        seen = now
        outcome = ", ".join(f"{counts[k]} {k}" for k in ("bumped", "kept-promise", "current", "held", "skipped")
                            if counts[k])
        print(f"{week:<5} {what + ' (' + nix.channels['nixos-unstable'][:7] + ')':<40} {outcome:<48} "
              f"{check.exit_code:<5} {d['prs']:>3}/{d['edits']:<8} {d['dispatches']:>4}/{d['jobs']:<11} "
              f"{d['merges']:>6}  {d['published']:>9}  {d['threads']:>9}  {took:5.1f} s")
    return 0


def slack_per_branch(ctx, slack) -> tuple[collections.Counter, collections.Counter]:
    """Messages torchbot posted in each branch's release thread (parent and replies) and the edits
    of them, told apart by the release id in each message's metadata (the state DB's Release row);
    build-torchvision's branches are named with their repository ("build-torchvision main")."""
    from release.publishing.announce import EVENT_TYPE
    from release.state import Release, open_state

    with open_state(ctx.settings.state_db).session() as s:
        branch_of = {r.id: (r.repo.rsplit("/", 1)[-1] + " " if r.repo else "") + r.branch for r in s.query(Release)}
    posted, edits, where = collections.Counter(), collections.Counter(), {}
    for m in slack.messages(CHANNEL):
        meta = m.get("metadata") or {}
        if meta.get("event_type") == EVENT_TYPE:
            branch = branch_of[int(meta["event_payload"]["release_id"])]
            posted[branch] += 1
            where[m["ts"]] = branch
    for call in slack.method_calls("chat.update"):
        if call.get("ts") in where:
            edits[where[call["ts"]]] += 1
    return posted, edits


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mirrors", nargs="*", type=Path, default=MIRRORS)
    ap.add_argument("--no-automerge", action="store_true", help="leave the pull requests open")
    ap.add_argument("--fail", action="append", default=[], metavar="GLOB",
                    help="GitHub jobs of variants matching GLOB fail (repeatable)")
    ap.add_argument("--weeks", type=int, default=1, metavar="N",
                    help="run N weeks: the channel moves on, stands still or goes back (see WEEKS); one line each")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="torchbot-loop-"))
    try:
        return run(tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, args) -> int:
    from config.settings import Settings
    from release.context import Context
    from release.schedule import jobs as schedule

    repos = world(tmp, args.mirrors)
    before = {(name, b): pins_at(origin, b) for name, origin, _ in repos
              for b in git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()}
    variants = {p.rsplit("/", 1)[1][:-4] for name, origin, _ in repos[:1]
                for b in git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
                for p in git(origin, "ls-tree", "--name-only", b, ".flox/pkgs/").split() if p.endswith(".nix")}
    fail = {v for v in variants if any(fnmatch.fnmatchcase(v, g) for g in args.fail)}
    with FakeNixpkgs() as nix, FakeSlack() as slack:
        head, head_torch = nixpkgs(nix, [o for _, o, _ in repos], args.mirrors)
        shim_log, runners, shim_settings = shims(tmp)
        chain, gh_by_repo, upstream = [], {}, nix.api_url
        logs = {name: tmp / f"runners-{name}.log" for name, _, _ in repos}  # what ran on each repository's runners
        for name, origin, _ in reversed(repos):
            runners.append(Runners(origin, workflow(tmp, shim_settings), DEFAULT_RUNNERS, tmp / "runners", logs[name]))
            gh = FakeGitHub(repo=f"{OWNER}/{name}", upstream=upstream, git_dir=origin, fail=fail, runner=runners[-1])
            gh.__enter__()
            chain.append(gh)
            gh_by_repo[name] = gh
            upstream = gh.url
        try:
            main_gh = gh_by_repo[repos[0][0]]
            s = Settings(_env_file=None, repo_path=",".join(str(c) for _, _, c in repos),
                         state_db=f"sqlite:///{tmp / 'state.sqlite'}", log_dir=tmp / "logs",
                         channels_url=nix.channels_url, github_api_url=main_gh.url, github_token=main_gh.token,
                         github_repo=main_gh.repo, nixpkgs_tarball_url=nix.tarball_url, http_retries=1,
                         github_poll_seconds=0.01, bump_automerge=not args.no_automerge, flox_org="acme",
                         slack_bot_token=slack.token, slack_api_url=slack.url, **shim_settings,
                         announce_channel=CHANNEL, git_author_name="torchbot",
                         git_author_email="torchbot@localhost")
            ctx = Context(s, use_repo=False)
            print(f"nixpkgs stand-in: channel nixos-unstable at {head[:7]} with torch {head_torch}; "
                  f"{len(nix.history)} commits; GitHub jobs failing: {len(fail)}")
            from release.pins.commands import plan_bump

            t0 = time.perf_counter()
            plan = plan_bump(ctx, "all", None, dry_run=True)
            print(f"\nThe weekly bump's plan ({time.perf_counter() - t0:.1f} s):")
            for line in plan.text().splitlines():
                print("  " + line)
            if args.weeks > 1:
                return weeks(ctx, nix, chain, slack, args.weeks)
            timings = {}
            results = {}
            for job in ("bump", "publish", "flush-announcements"):
                t0 = time.perf_counter()
                results[job] = schedule.run_now(ctx, job)["result"]
                timings[job] = time.perf_counter() - t0
            print("\nScheduled jobs:")
            for job, line in results.items():
                parts = [p for p in line.split("; ") if "pull request(s)" not in p]  # the PRs are listed below
                print(f"  {job} ({timings[job]:.1f} s): " + "\n      ".join(parts))
            report(ctx, repos, gh_by_repo, before, slack, plan.text().splitlines())
            dispatched = sum(len(g.dispatches) for g in chain)
            statuses = sum(len(g.statuses.posted) for g in chain)
            merges = sum(len(g.pulls.merges) for g in chain)
            print()
            for name, _, _ in repos:
                build_counts(name, read_log(logs[name]), [gh_by_repo[name]])
            host = read_log(shim_log)
            print(f"On the torchbot host: {sum(e['action'] == 'build' for e in host)} builds, "
                  f"{sum(e['action'] == 'publish' for e in host)} publishes, {len(host)} flox/nix commands")
            print(f"\nTotals: {sum(len(g.pulls.prs) for g in chain)} pull request(s), {dispatched} dispatch(es), "
                  f"{statuses} status(es) posted, {merges} merge(s), "
                  f"{len([m for m in slack.messages(CHANNEL) if not m.get('thread_ts')])} release thread(s).")
            posted, edits = slack_per_branch(ctx, slack)
            others = tuple(f"{n} " for n, _, _ in repos[1:])  # build-torchvision's threads are its own
            for name, _, _ in repos:
                mine = {b: n for b, n in posted.items()
                        if (b.startswith(f"{name} ") if name != repos[0][0] else not b.startswith(others))}
                if mine:
                    print(f"Slack messages per branch of {name}: {max(mine.values())} at most, "
                          f"{sum(mine.values()) / len(mine):.1f} on average over {len(mine)} branch(es) "
                          f"({sum(mine.values())} messages, {sum(edits[b] for b in mine)} edits in place)")
        finally:
            for gh in chain:
                gh.__exit__(None, None, None)
            for r in runners:
                r.close()
    return 0


def shims(tmp: Path) -> tuple[Path, list, dict]:
    """The shim log, the runners list, and the settings that put the torchbot host's own build and
    publish commands and the build cache in place (tests/support/shim_tools.py logs each)."""
    log = tmp / "shim.log"
    (tmp / "runners").mkdir()
    (tmp / "cache").mkdir()
    host = f"SHIM_LOG={log} SHIM_HOST=torchbot SHIM_STORE={tmp / 'host-store'} {SHIMS}"
    return log, [], {"build_command": f"{host}/flox build {{package}}",
                     "publish_command": f"{host}/flox publish -o {{org}} {{package}}",
                     "build_cache": f"file://{tmp / 'cache'}"}


def workflow(tmp: Path, over: dict) -> str:
    from config.settings import Settings
    from release.builds.workflow import render_workflow

    return render_workflow(Settings(_env_file=None, flox_org="acme", state_db=f"sqlite:///{tmp / 'wf.sqlite'}",
                                    **over))


def build_counts(name: str, log: list[dict], chain) -> None:
    """Builds per changed variant of repository ``name`` over the release (bump PR built at its
    head, merged, published), from what the flox/nix shims logged on its runners (``chain``: its
    GitHub stand-in)."""
    changed = {(body["inputs"]["branch"], e["package"])
               for gh in chain for _wf, body in gh.dispatches if body["inputs"].get("publish") != "true"
               for key in ("pytorch", "companions") for e in json.loads(body["inputs"].get(key) or "[]")}
    built = collections.Counter((e["branch"], e["package"]) for e in log if e["action"] == "build")
    host = [e for e in log if e["host"] == "torchbot"]
    published = sum(e["action"] == "publish" for e in log)
    substituted = sum(e["action"] == "substitute" for e in log)
    where = collections.Counter(e["platform"] for e in log if e["action"] in ("build", "publish"))
    astray = [e for e in log if e["action"] in ("build", "publish", "refused") and e.get("target") != e["platform"]]
    arm_on_x86 = [e for e in log if e["action"] in ("build", "publish", "refused") and e["platform"] == "x86_64-linux"
                  and (e.get("target") or "").startswith("aarch64")]
    per = sum(built.values()) / len(changed) if changed else 0.0
    print(f"Builds of {name}: {sum(built.values())} for {len(changed)} changed variant(s) = {per:.2f} per variant "
          f"(max {max(built.values(), default=0)}); on the torchbot host {sum(e['action'] == 'build' for e in host)} "
          f"builds, {len(host)} flox/nix commands; {published} published on runners, {substituted} outputs "
          f"substituted from the cache; by runner platform: "
          + ", ".join(f"{p} {n}" for p, n in sorted(where.items()))
          + f"; aarch64 variants built or published on x86_64: {len(arm_on_x86)}; jobs off their platform: "
          f"{len(astray)}")


if __name__ == "__main__":
    raise SystemExit(main())
