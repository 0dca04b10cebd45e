"""One answer per Slack delivery.

Slack delivers again what it thinks went unanswered: an Events API event whose ack was late
or lost comes back with ``X-Slack-Retry-Num`` and ``X-Slack-Retry-Reason`` (over HTTP), or
``retry_attempt`` and ``retry_reason`` in the Socket Mode envelope (Bolt passes both on as
the same two headers). Each delivery torchbot takes on is claimed under a key, first in
memory (a retry that arrives while the first delivery is still being answered) and then as a
row in the state DB with a TTL (``release.state.Delivery``): a retry after a restart, or one
that reaches another torchbot process on the same DB, is not answered again.

The key is what Slack gives to tell deliveries apart:

- events: ``event_id``, the same on every retry of one event (mentions, messages);
- slash commands: ``trigger_id``. A command has no event id and Slack does not retry it;
  the trigger id is unique to one invocation, so a command delivered twice (a proxy
  re-sending it, a Socket Mode envelope sent again) is told from the same words typed twice;
- interactive payloads (buttons): ``trigger_id`` with the action's ``action_ts``, likewise
  unique to one click. (A double click is two clicks; the plan's own claim in the state DB
  keeps that from running twice.)

A delivery without such an id is always answered: two of them cannot be told apart from two
people asking. Claims are taken after the ack (the ack never waits for the database). When
the state store does not answer, the in-memory claim still holds within this process, and
the delivery is answered: better a rare second answer after a restart than none. The same holds
for any other failure of the store (a read-only standby, a permission denied, a missing table):
it is logged once, until a claim works again."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from bot.frontends.store import StateStoreNotAnswering
from config.errors import TorchbotError

log = logging.getLogger("torchbot.slack")

TTL = 3600.0  # Slack retries an event 3 times within about 5 minutes; an hour is ample
MEMORY = 10_000  # claims kept in memory (the oldest go first)
PRUNE_EVERY = 500  # claims between two clean-ups of expired rows
REPEATS = 100  # recent repeats kept for status and tests; older ones are only in the log


def delivery_key(body: dict[str, Any]) -> str | None:
    """The key that tells this delivery from any other, or None when Slack gave none."""
    if body.get("event_id"):
        return f"event:{body['event_id']}"
    trigger = body.get("trigger_id")
    if body.get("type") == "block_actions":
        action = (body.get("actions") or [{}])[0]
        stamp = action.get("action_ts") if isinstance(action, dict) else None
        return f"action:{trigger}:{stamp or ''}" if trigger or stamp else None
    if body.get("command") and trigger:
        return f"command:{trigger}"
    return None


def retry_of(headers: dict[str, Any]) -> str:
    """'' for a first delivery; else e.g. 'retry 2 (http_timeout)'."""
    def first(name: str) -> str:
        value = headers.get(name) or ""
        return str(value[0] if isinstance(value, (list, tuple)) and value else value)

    num = first("x-slack-retry-num")
    if not num or num == "0":
        return ""
    reason = first("x-slack-retry-reason")
    return f"retry {num}" + (f" ({reason})" if reason else "")


class Deliveries:
    """``first(body, headers)``: True when this delivery is to be answered, False when it
    was taken on before (here, before a restart, or by another process)."""

    def __init__(self, store, ttl: float = TTL):
        self.store = store
        self.ttl = ttl
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()
        self._claims = 0
        self.repeats: list[tuple[str, str]] = []  # (key, retry) of the last REPEATS deliveries not answered again
        self._failing: str | None = None  # why the store last failed a claim (said once), None once it works

    def first(self, body: dict[str, Any], headers: dict[str, Any] | None = None) -> bool:
        key = delivery_key(body)
        if key is None:
            return True
        retry = retry_of(headers or {})
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen < self.ttl:
                log.info("%s delivered again%s: answered already", key, f" ({retry})" if retry else "")
                self._repeated(key, retry)
                return False
            self._seen[key] = now
            self._seen.move_to_end(key)
            while len(self._seen) > MEMORY:
                self._seen.popitem(last=False)
            self._claims += 1
            prune = self._claims % PRUNE_EVERY == 0
        try:
            fresh = self.store.claim_delivery(key, self.ttl)
        except (TorchbotError, SQLAlchemyError, OSError) as err:  # any failure of the store: no record
            self._store_failed(key, retry, err)
            return True
        self._failing = None
        if prune:
            try:
                self.store.prune_deliveries()
            except (TorchbotError, SQLAlchemyError, OSError) as err:
                log.warning("could not forget expired delivery claims: %s", _one_line(err))
        if not fresh:
            log.info("%s delivered again%s: answered before (the state DB has it)", key,
                     f" ({retry})" if retry else "")
            with self._lock:
                self._repeated(key, retry)
        return fresh

    def _repeated(self, key: str, retry: str) -> None:
        """Keep the delivery among the recent repeats (the lock held): a long-running bot keeps a few."""
        self.repeats.append((key, retry))
        del self.repeats[:-REPEATS]

    def _store_failed(self, key: str, retry: str, err: BaseException) -> None:
        """Say once (until a claim works again) why deliveries are answered without a record."""
        why = err.message if isinstance(err, StateStoreNotAnswering) else _one_line(err)
        said = f"{key}{f' ({retry})' if retry else ''}: the state store cannot record the claim " \
               f"({why}); answering without its record"
        if self._failing == why:
            log.debug("%s", said)
            return
        self._failing = why
        log.warning("%s", said)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(getattr(err, "orig", None) or err).split())
    return f"{type(err).__name__}: {text[:300]}"
