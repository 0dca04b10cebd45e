"""What a conformance plugin (tests/support/github_conformance.py, slack_conformance.py) counts
in a test session, and how a parallel run adds it up: the exchanges checked per operation and
the problems found, under one lock (stand-ins answer from their own threads). A pytest-xdist
worker hands its tally to the controller (``workeroutput``), which adds every worker's up before
its summary, so the summary and the exit status are the whole suite's. Each plugin keeps one
``Tally`` and its module-level pytest hooks call these methods."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest


class Tally:
    def __init__(self, key: str, what: str):
        self.key = key  # the key of a worker's tally in its workeroutput
        self.what = what  # how a failing test names the problems
        self.seen: Counter = Counter()  # operation -> exchanges checked
        self.problems: list[str] = []
        self.lock = threading.Lock()

    def session_finished(self, session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # a pytest-xdist worker: its counts go to the controller
            with self.lock:
                workeroutput[self.key] = {"seen": dict(self.seen), "problems": list(self.problems)}
        if self.problems and session.exitstatus == 0:
            session.exitstatus = 1

    def worker_down(self, node) -> None:
        counts = getattr(node, "workeroutput", {}).get(self.key)
        if counts:
            with self.lock:
                self.seen.update(counts["seen"])
                self.problems.extend(counts["problems"])

    def write_summary(self, terminalreporter, summary: Callable[[], str]) -> None:
        if self.seen or self.problems:
            terminalreporter.write_line(summary())
            for problem in self.problems[:20]:
                terminalreporter.write_line("  " + problem)

    def check_test(self):
        """A fixture body: fail the test during which a problem was found."""
        start = len(self.problems)
        yield
        found = self.problems[start:]
        if found:
            pytest.fail(f"{self.what}:\n" + "\n".join(found[:10]), pytrace=False)
