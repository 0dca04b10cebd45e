"""Unexpected errors, reported the same way by every front end: the traceback goes to the
log under a short error id, the user gets an apology quoting that id (so an operator can
find it with ``grep``). Imports nothing of torchbot."""

from __future__ import annotations

import logging
import secrets


def new_error_id() -> str:
    return "E" + secrets.token_hex(4).upper()


def report(log: logging.Logger, what: str, exc: BaseException | None = None) -> str:
    """Log the current (or given) exception under a new id; return the user's sentence."""
    error_id = new_error_id()
    log.error("error id %s: %s failed", error_id, what, exc_info=exc if exc is not None else True)
    return (f"Sorry, {what} failed unexpectedly; nothing further was done. "
            f"The bot's log has the details under error id {error_id}.")
