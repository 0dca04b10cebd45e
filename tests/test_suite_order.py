"""The suite's order (tests/conftest.py): the files tests/slow_files.txt lists exist, once each,
and are collected first, in the listed order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import slow_files

ROOT = Path(__file__).resolve().parents[1]


def test_every_listed_slow_file_exists_once():
    names = slow_files()
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert [n for n in names if not (ROOT / n).is_file()] == []


def test_the_listed_files_are_collected_first_in_their_order():
    names = slow_files()[:3]
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=",
                          "-p", "no:cacheprovider", "tests/test_suite_order.py", *reversed(names)],
                         cwd=ROOT, capture_output=True, text=True, check=False).stdout
    files = []
    for line in out.splitlines():
        f = line.partition("::")[0]
        if "::" in line and f not in files:
            files.append(f)
    assert files == [*names, "tests/test_suite_order.py"], files
