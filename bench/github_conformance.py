"""What the GitHub conformance check costs per exchange (tests/support/github_conformance).

    .venv/bin/python bench/github_conformance.py

Times the check of three typical exchanges, each checked many times after one warm-up (the
validators are built once per schema and cached): a jobs page of 100 jobs (the largest answer
the suite sees often), one workflow run, a commit resolved with the sha media type.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import github_conformance as conformance
from tests.support import github_spec as spec

HEADERS = {"accept": "application/vnd.github+json", "x-github-api-version": spec.API_VERSION}
RATE = dict.fromkeys(conformance.RATE_HEADERS, "1") | {"content-type": "application/json"}


def _jobs_page() -> conformance.Exchange:
    job = spec.example("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs")["jobs"][0]
    job["created_at"], job["steps"] = job["started_at"], []  # as the stand-in gives them
    jobs = [{**job, "id": i} for i in range(100)]
    return conformance.Exchange("bench", "GET", "/repos/a/b/actions/runs/1/jobs", "filter=latest&per_page=100",
                                HEADERS, b"", 200, RATE, json.dumps({"total_count": 100, "jobs": jobs}).encode())


def _run() -> conformance.Exchange:
    run = spec.example("get", "/repos/{owner}/{repo}/actions/runs/{run_id}")
    return conformance.Exchange("bench", "GET", "/repos/a/b/actions/runs/1", "", HEADERS, b"", 200, RATE,
                                json.dumps(run).encode())


def _sha() -> conformance.Exchange:
    return conformance.Exchange("bench", "GET", "/repos/NixOS/nixpkgs/commits/nixos-unstable", "",
                                {**HEADERS, "accept": "application/vnd.github.sha"}, b"", 200,
                                {**RATE, "content-type": "application/vnd.github.sha"}, b"ab" * 20)


def main() -> None:
    start = time.perf_counter()
    spec.spec()
    print(f"load the trimmed spec: {(time.perf_counter() - start) * 1000:.0f} ms")
    for name, make, n in (("jobs page (100 jobs)", _jobs_page, 50), ("workflow run", _run, 500),
                          ("commit sha", _sha, 2000)):
        ex = make()
        t0 = time.perf_counter()
        assert conformance.problems_of(ex) == [], conformance.problems_of(ex)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(n):
            conformance.problems_of(ex)
        each = (time.perf_counter() - t0) / n
        print(f"{name}: first {first * 1000:.1f} ms (builds its validators), then {each * 1000:.2f} ms each")


if __name__ == "__main__":
    main()
