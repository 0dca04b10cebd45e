"""The state store as the chat front ends use it: every call answers within a deadline.

The database's own timeouts (``release.state``: connect, statement, busy) cover a slow
server, not one that stops answering altogether: a PostgreSQL server frozen or cut off by a
partition keeps its TCP connections open, and a query on one waits for ever. So each call
runs on a worker thread (daemon threads, at most ``workers`` at once, so a frozen server
holds neither the process's exit nor more than a few threads) and the caller waits at most
``deadline`` seconds; past that, or on a database error that means the same (a lost
connection, a timeout), it gets :class:`StateStoreNotAnswering`, whose message is the plain
truth a user is told. A call given up on may still finish when the server comes back; that
is logged, and what it did is taken back where the caller asks (a Confirm that lands late is
put back to pending: the user was told nothing was confirmed). The store is opened lazily on a worker too, so even
the first call cannot hang a caller."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import Any

from sqlalchemy import exc as sqlalchemy_exc
from sqlalchemy.exc import SQLAlchemyError

from config.errors import ConfigError, ExternalError

log = logging.getLogger("torchbot.store")

NOT_ANSWERING = "the state store is not answering; answers still work"
UNDO_ATTEMPTS = 3  # tries at taking back what the store did after the caller stopped waiting


class StateStoreNotAnswering(ExternalError):
    """The state DB did not answer in time (or failed); nothing that needed it was done."""

    def __init__(self, what: str = ""):
        super().__init__(NOT_ANSWERING + (f" ({what})" if what else "") + ".")


class AnsweringStore:
    """A proxy for ``release.state.State``: ``store.take_plan(...)`` runs ``State.take_plan``
    on a worker and returns its value within ``deadline`` seconds, or raises
    :class:`StateStoreNotAnswering`."""

    def __init__(self, opener: Callable[[], Any], deadline: float, workers: int = 4):
        self._opener = opener
        self.deadline = deadline
        self._workers = workers
        self._slots = threading.BoundedSemaphore(workers)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.run(name, lambda state: getattr(state, name)(*args, **kwargs))

        return call

    def run(self, what: str, fn: Callable[[Any], Any], undo: Callable[[Any, Any], Any] | None = None,
            deadline: float | None = None) -> Any:
        """``fn(state)`` on a worker, within the deadline. A call that finishes after the caller
        stopped waiting is logged, and ``undo(state, result)`` runs on its worker to take back
        what the caller was told was not done (true when it took something back). Either the
        caller gets the result or it is undone: the hand-over is decided under one lock.
        ``deadline``: a shorter wait than the store's own, for answers that must come fast."""
        start = time.monotonic()
        limit = self.deadline if deadline is None else min(deadline, self.deadline)
        if not self._slots.acquire(timeout=limit):  # every worker is waiting on the store already
            log.warning("the state store did not answer %s: every worker is still waiting on it", what)
            raise StateStoreNotAnswering(f"no answer within {limit:g} s")
        future: Future = Future()
        handover = threading.Lock()
        abandoned = threading.Event()

        def work() -> None:
            try:
                state = self._opener()
                result = fn(state)
            except BaseException as err:  # noqa: BLE001  (handed to the caller through the future)
                future.set_exception(err)
                self._slots.release()
                return
            try:
                with handover:
                    if not abandoned.is_set():
                        future.set_result(result)
                        return
                _late(what, result)
                if undo is not None:
                    self._undo(what, undo, state, result)
            finally:
                self._slots.release()

        threading.Thread(target=work, name="torchbot-store", daemon=True).start()
        wait([future], timeout=max(0.0, limit - (time.monotonic() - start)))
        with handover:
            if not future.done():
                abandoned.set()
        if abandoned.is_set():
            log.warning("the state store did not answer %s within %.1f s", what, limit)
            raise StateStoreNotAnswering(f"no answer within {limit:g} s")
        try:
            return future.result()
        except (SQLAlchemyError, ConfigError, OSError) as err:
            if not unreachable(err):
                raise  # a broken schema or a bug: an unexpected error, reported under an error id
            log.warning("the state store failed %s: %s", what, " ".join(str(err).split())[:300])
            raise StateStoreNotAnswering(type(err).__name__) from None

    def _undo(self, what: str, undo: Callable[[Any, Any], Any], state: Any, result: Any) -> None:
        """Take back a late result, trying again while the store keeps failing (a few times)."""
        for attempt in range(UNDO_ATTEMPTS):
            try:
                if undo(state, result):
                    log.warning("took back %s, which the state store did after torchbot stopped waiting", what)
                return
            except (SQLAlchemyError, OSError) as err:
                log.warning("could not take back the late %s (attempt %d of %d): %s", what, attempt + 1,
                            UNDO_ATTEMPTS, " ".join(str(err).split())[:300])
                threading.Event().wait(self.deadline)
        log.error("the state store did %s after torchbot stopped waiting and it could not be taken back: %r",
                  what, result)

    def take_plan(self, plan_id: str, user: str, action: str = "confirmed",
                  others_may: bool = False) -> tuple[str, Any]:
        """``State.take_plan`` within the deadline. A claim that lands after the caller stopped
        waiting (the user was told nothing was confirmed or cancelled) is put back to pending,
        so that it is true and the next click finds the plan as it was."""
        def back_to_pending(state, taken) -> bool:
            outcome, row = taken
            return outcome == "ok" and state.untake_plan(plan_id, row.state, row.handled_by, row.handled)

        return self.run("take_plan", lambda state: state.take_plan(plan_id, user, action, others_may),
                        undo=back_to_pending)

    def idle(self, timeout: float) -> bool:
        """Whether every call (late ones and their undoing included) finished within ``timeout``."""
        end = time.monotonic() + timeout
        held = 0
        try:
            while held < self._workers:
                if not self._slots.acquire(timeout=max(0.0, end - time.monotonic())):
                    return False
                held += 1
            return True
        finally:
            for _ in range(held):
                self._slots.release()

    def ping(self) -> None:
        """A round trip to the store (``SELECT 1``), within the deadline."""
        def select_one(state) -> None:
            with state.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")

        self.run("ping", select_one)


_UNREACHABLE = ("timeout", "timed out", "locked", "connect", "server closed", "canceling statement",
                "terminating connection", "the database system is")


def unreachable(err: BaseException) -> bool:
    """Whether a database error means the store cannot be reached or did not answer in time
    (a lost connection, a timeout, a lock held too long), rather than a broken schema."""
    if isinstance(err, (OSError, sqlalchemy_exc.TimeoutError)) or getattr(err, "connection_invalidated", False):
        return True
    text = str(getattr(err, "orig", None) or err).lower()
    return any(word in text for word in _UNREACHABLE)


def _late(what: str, result: Any) -> None:
    log.warning("the state store answered %s after torchbot stopped waiting (%r); "
                "the user was told it was not answering", what, result)
