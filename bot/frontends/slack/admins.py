"""Admins from a Slack user group (``TORCHBOT_ADMIN_USERGROUP``): its members are admins next
to ``TORCHBOT_ADMINS``. The members come from ``usergroups.users.list`` (scope
``usergroups:read``), kept for ``ttl`` seconds so a burst of commands costs one call and a
change to the group counts within a minute. When Slack cannot say (a missing scope, no such
group, a plan without user groups, Slack down), nobody is an admin through the group and the
refusal says why; the next try is after ``retry`` seconds."""

from __future__ import annotations

import logging
import threading
import time

from slack_sdk.errors import SlackApiError, SlackClientError

from config.errors import ExternalError

log = logging.getLogger("torchbot.slack")

WHY = {
    "missing_scope": "the Slack app lacks the usergroups:read scope (add it and reinstall the app)",
    "no_such_subteam": "Slack knows no such user group",
    "plan_upgrade_required": "this workspace's Slack plan has no user groups",
    "invalid_auth": "Slack refused the bot token",
    "not_authed": "Slack refused the bot token",
}


class UsergroupAdmins:
    def __init__(self, client, usergroup: str, ttl: float = 60.0, retry: float = 10.0):
        self.client, self.usergroup, self.ttl, self.retry = client, usergroup, ttl, retry
        self._members: frozenset[str] = frozenset()
        self._problem: str | None = None
        self._until = 0.0
        self._lock = threading.Lock()

    def __call__(self, user: str) -> bool:
        """Whether ``user`` is in the group; ExternalError when Slack cannot say."""
        with self._lock:
            if time.monotonic() >= self._until:
                self._refresh()
            if self._problem:
                raise ExternalError(f"TORCHBOT_ADMIN_USERGROUP {self.usergroup} could not be read: {self._problem}.")
            return user in self._members

    def _refresh(self) -> None:
        try:
            resp = self.client.usergroups_users_list(usergroup=self.usergroup)
            self._members, self._problem = frozenset(resp.get("users") or ()), None
            self._until = time.monotonic() + self.ttl
            return
        except SlackApiError as err:
            code = err.response.get("error") if hasattr(err.response, "get") else None
            status = getattr(err.response, "status_code", 200)
            self._problem = WHY.get(code or "", f"Slack answered {code or f'HTTP {status}'}")
        except (SlackClientError, OSError) as err:
            self._problem = f"Slack is unreachable ({type(err).__name__})"
        log.warning("TORCHBOT_ADMIN_USERGROUP %s: %s", self.usergroup, self._problem)
        self._until = time.monotonic() + self.retry
