"""Waiting on an event in tests: poll a condition until it holds, with a generous deadline (the
machine may be loaded), never a fixed sleep before an assertion."""

from __future__ import annotations

import time


def wait_for(condition, what: str, timeout: float = 60.0, every: float = 0.05):
    """``condition()``'s first true value; AssertionError naming ``what`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while True:
        if value := condition():
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"timed out waiting for {what} ({timeout:g} s)")
        time.sleep(every)
