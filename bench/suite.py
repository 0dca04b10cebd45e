"""Benchmark: how long `make test` takes (ruff, the prerequisites check, then the whole suite).

Runs ``make test`` in this checkout (``--workers N`` is passed as ``WORKERS=N``: ``1`` runs the
suite in one process, ``auto`` one worker per core; without it, the Makefile's default: one worker
more than the cores) and prints its wall time, pytest's own line
(tests passed, pytest's seconds) and the load average before and after, since the figure
depends on what else the machine runs. Not a test: a figure for README's table and
docs/figures.md.

    .venv/bin/python bench/suite.py [--workers auto|N] [--files N]

``--files N`` also prints the N test files that took longest (their tests' seconds added up,
from pytest's JUnit XML report), the list tests/slow_files.txt keeps for the suite's order.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default=None, help="pytest-xdist workers (WORKERS= of make test; "
                    "default: the Makefile's, cores + 1)")
    ap.add_argument("--files", type=int, default=0, metavar="N", help="print the N longest test files")
    args = ap.parse_args(argv)
    report = Path(tempfile.mkdtemp(prefix="torchbot-suite-")) / "junit.xml"
    env = dict(os.environ)
    if args.files:
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={report}".strip()
    load_before = os.getloadavg()
    start = time.monotonic()
    workers = [f"WORKERS={args.workers}"] if args.workers else []
    done = subprocess.run(["make", "test", *workers], cwd=ROOT, capture_output=True, text=True,
                          check=False, env=env)
    took = time.monotonic() - start
    load_after = os.getloadavg()
    tail = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    print(f"make test WORKERS={args.workers or '(cores + 1)'}: {took:.0f} s wall ({took / 60:.1f} min), "
          f"exit {done.returncode}, {os.cpu_count()} cores")
    print(f"pytest: {tail[-1].strip('= ') if tail else '(no summary line)'}")
    print(f"load average before {load_before[0]:.1f} / {load_before[1]:.1f} (1 / 5 min), "
          f"after {load_after[0]:.1f} / {load_after[1]:.1f}")
    if args.files and report.is_file():
        for name, seconds in longest_files(report, args.files):
            print(f"{seconds:7.1f} s  {name}")
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-3000:] + done.stderr[-2000:])
    return done.returncode


def longest_files(report: Path, n: int) -> list[tuple[str, float]]:
    """The ``n`` test files whose tests took longest in a JUnit XML report, with their seconds."""
    by_file: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        by_file[case.get("classname", "").replace(".", "/") + ".py"] += float(case.get("time") or 0)
    return by_file.most_common(n)


if __name__ == "__main__":
    sys.exit(main())
