"""One workspace: requests from any other Slack workspace (or Enterprise Grid organisation) than
the one torchbot is installed in are refused, for slash commands, buttons and events alike.

The installed workspace is what ``auth.test`` answers at start (``torchbot serve`` calls
:meth:`Workspace.learn` with it). A request names its workspace as ``team_id`` /
``enterprise_id`` (commands, events) or ``team.id`` / ``enterprise.id`` / ``user.team_id``
(buttons); Bolt reads them into ``context.team_id`` / ``context.enterprise_id``. With an
organisation-wide install (``auth.test`` names an enterprise) the organisation must match; with
a workspace install the workspace must, and a request naming any organisation is refused too.
A refused command is told so (ephemeral); a refused button or event is acknowledged and
dropped. Each refusal is logged with the ids it carried."""

from __future__ import annotations

import logging

log = logging.getLogger("torchbot.slack")
REFUSAL = "This torchbot serves another Slack workspace; nothing was done."


class Workspace:
    def __init__(self) -> None:
        self.team_id: str | None = None
        self.enterprise_id: str | None = None

    def learn(self, who: dict) -> None:
        """From ``auth.test``'s answer (``team_id``, ``enterprise_id``)."""
        self.team_id = _id(who.get("team_id"))
        self.enterprise_id = _id(who.get("enterprise_id"))

    def foreign(self, team_id: str | None, enterprise_id: str | None) -> bool:
        """Whether a request naming these ids comes from outside the installed workspace."""
        if self.team_id is None and self.enterprise_id is None:
            return False  # not learned yet (only before serving starts)
        if team_id is None and enterprise_id is None:
            return False  # names no workspace (Slack always names one; a signed request without is no other's)
        if self.enterprise_id is not None:
            return enterprise_id != self.enterprise_id
        return enterprise_id is not None or team_id != self.team_id  # a workspace install: no organisation

    def middleware(self, body, context, next):
        import json

        from slack_bolt import BoltResponse

        team = _team_of(body) or context.get("team_id")
        enterprise = _enterprise_of(body) or context.get("enterprise_id")
        if not self.foreign(team, enterprise):
            return next()
        log.warning("refused a Slack request from team %s, enterprise %s (installed: team %s, enterprise %s)",
                    team, enterprise, self.team_id, self.enterprise_id)
        if body.get("command"):
            return BoltResponse(status=200, body=json.dumps({"response_type": "ephemeral", "text": REFUSAL}),
                                headers={"content-type": ["application/json;charset=utf-8"]})
        return BoltResponse(status=200, body="")  # a button or an event: acknowledged, dropped


def _id(value) -> str | None:
    return value if isinstance(value, str) and value and value != "?" else None


def _team_of(body: dict) -> str | None:
    team, user = body.get("team"), body.get("user")
    return _id(body.get("team_id") or (team.get("id") if isinstance(team, dict) else None)
               or (user.get("team_id") if isinstance(user, dict) else None))  # a string user (a forged body): no team


def _enterprise_of(body: dict) -> str | None:
    ent = body.get("enterprise")
    return _id(body.get("enterprise_id") or (ent.get("id") if isinstance(ent, dict) else None))
