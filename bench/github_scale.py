"""Benchmark: a 237-variant release through the github backend, against the paging,
rate-limiting fake GitHub on 127.0.0.1 (tests/support/fakes_github.py), time scaled down.

A throwaway repository holds 237 pytorch recipes (one real branch's count); the release is
planned, dispatched (one run) and followed by the real backend (state DB, every jobs page,
the retry policy). Each job takes 1 to 6 simulated hours (varied by variant), after 30
simulated seconds in the queue; 1 simulated hour is 0.1 s, and the poll interval is scaled
the same way (30 s -> 0.83 ms, so polls are back to back, bounded by request latency).

Reports (a) the time from dispatch until every result is recorded, divided by the longest
job (goal <= 1.2 with no cap: the release takes as long as its longest build, not their
sum); (b) API requests per poll and per release, measured, and projected at the real poll
interval against GitHub's 5,000 requests per hour.

(c) Under a concurrency cap (``--caps 20,60``: GitHub Free runs 20 jobs at a time, Team 60), the
makespan of the same release dispatched in name order and longest first from the recorded build
times of an earlier release (the plan's order), against its lower bound
max(longest job, total work / cap), in simulated hours (the fake's schedule) and as measured.

    .venv/bin/python bench/github_scale.py [--variants 237] [--hour 0.1] [--max-parallel N] [--caps 20,60]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._home import isolate

isolate()  # torchbot's own files go to a temporary home, never the real one

from release.builds import github as gha  # noqa: E402
from release.builds import run as builds  # noqa: E402
from tests.support import fixtures_builds as fx  # noqa: E402
from tests.support.fakes_github import FakeGitHub  # noqa: E402

REAL_POLL_SECONDS = 30.0  # TORCHBOT_GITHUB_POLL_SECONDS default
GITHUB_HOURLY = 5000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=237)
    ap.add_argument("--hour", type=float, default=0.1, help="seconds of wall time per simulated hour")
    ap.add_argument("--max-parallel", type=int, default=None, help="the fake's runner cap (default none)")
    ap.add_argument("--caps", default="20,60", help="concurrency caps for (c), comma separated ('' : none)")
    args = ap.parse_args()
    code = uncapped(args)
    for cap in [int(c) for c in args.caps.split(",") if c.strip()]:
        capped(args, cap)
    return code


def _release(args) -> tuple[list[str], dict[str, float]]:
    variants = [f"pytorch-python313-cuda12_8-sm{n}-avx2" for n in range(100, 100 + args.variants)]
    hours = {p: 1.0 + (i * 37 % 51) / 10 for i, p in enumerate(variants)}  # 1.0 .. 6.0 simulated hours
    return variants, hours


def capped(args, cap: int) -> None:
    """(c): the release under ``cap``, in name order and longest first from history."""
    from datetime import timedelta

    from release.state import Build, state_for, utcnow

    variants, hours = _release(args)
    hour = args.hour
    longest = max(hours.values())
    bound = max(longest, sum(hours.values()) / cap)
    said = []
    for order in ("name order", "longest first"):
        with tempfile.TemporaryDirectory() as d, FakeGitHub(durations={p: h * hour for p, h in hours.items()},
                                                           start_delay=30 / 3600 * hour, max_parallel=cap) as gh:
            tmp = Path(d)
            repo = fx.make_repo(tmp, packages=variants)
            ctx = fx.context(tmp, github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                             github_poll_seconds=REAL_POLL_SECONDS / 3600 * hour, github_max_parallel=cap)
            if order == "longest first":  # an earlier release's builds, with their times
                now = utcnow()
                with state_for(ctx).session() as s:
                    s.add_all(Build(package=p, branch="earlier", state="succeeded", backend="github",
                                    started=now - timedelta(hours=h), finished=now) for p, h in hours.items())
            plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
            recorded: list[float] = []
            gha.dispatch_build(ctx, plan, progress=lambda _row, seen=recorded: seen.append(time.monotonic()))
            run = gh.runs[min(gh.runs)]
            simulated = max(end for _start, end in run["times"].values()) / hour
            measured = (max(recorded) - run["t0"]) / hour
        said.append(f"{order} {simulated:.1f} h = {simulated / bound:.3f} x the bound (measured {measured:.1f} h)")
    print(f"(c) cap {cap}: lower bound max(longest {longest:.1f} h, total {sum(hours.values()):.0f} h / "
          f"{cap} = {sum(hours.values()) / cap:.1f} h) = {bound:.1f} h; " + "; ".join(said))


def uncapped(args) -> int:
    hour = args.hour
    variants, hours = _release(args)
    longest = max(hours.values()) * hour
    with tempfile.TemporaryDirectory() as d, FakeGitHub(durations={p: h * hour for p, h in hours.items()},
                                                       start_delay=30 / 3600 * hour,
                                                       max_parallel=args.max_parallel) as gh:
        tmp = Path(d)
        repo = fx.make_repo(tmp, packages=variants)
        ctx = fx.context(tmp, github_api_url=gh.url, github_token=gh.token, github_repo=gh.repo,
                         github_poll_seconds=REAL_POLL_SECONDS / 3600 * hour)
        plan = builds.prepare(ctx, fx.BRANCH, repo=repo, backend="github")
        recorded: list[float] = []
        t0 = time.perf_counter()
        rows = gha.dispatch_build(ctx, plan, progress=lambda row: recorded.append(time.monotonic()))
        call = time.perf_counter() - t0
        took = max(recorded) - gh.runs[1000]["t0"]  # from the fake's receipt of the dispatch
        (run,) = gha.runs(ctx)
        total = len(gh.log)
        refused = sum(r.status >= 400 for r in gh.log)
    ok = sum(r["state"] == "succeeded" for r in rows)
    per_poll = run["requests"] / max(1, run["polls"])
    ratio = took / longest
    print(f"{len(rows)} variants ({ok} succeeded), one run; longest job {max(hours.values()):.1f} simulated h "
          f"= {longest:.2f} s; cap {args.max_parallel or 'none'}")
    print(f"(a) dispatch -> every result recorded: {took:.2f} s = {ratio:.2f} x the longest job (goal <= 1.2); "
          f"the whole call, with recording the dispatch first: {call:.2f} s = {call / longest:.2f} x")
    print(f"(b) requests per poll: {per_poll:.2f} (= ceil({len(rows)}/100) = {math.ceil(len(rows) / 100)}); "
          f"{run['polls']} polls, {total} requests for the release here (dispatch, runs listing, polls; "
          f"{refused} refused)")
    polls_real = math.ceil(max(hours.values()) * 3600 / REAL_POLL_SECONDS)
    per_hour = per_poll * 3600 / REAL_POLL_SECONDS
    print(f"    at the real {REAL_POLL_SECONDS:g} s poll interval: {per_hour:.0f} requests/hour "
          f"({per_hour / GITHUB_HOURLY:.0%} of GitHub's {GITHUB_HOURLY:,}), "
          f"~{polls_real * per_poll + 2:,.0f} requests for a release whose longest job is "
          f"{max(hours.values()):.0f} h")
    return 0 if len(rows) == args.variants and (args.max_parallel or ratio <= 1.2) else 1


if __name__ == "__main__":
    raise SystemExit(main())
