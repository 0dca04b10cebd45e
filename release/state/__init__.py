"""The state DB: builds, the GitHub runs being followed, publishes, releases (Slack threads), the
announcement outbox, job-run locks, the pending plans of chat commands (waiting for Confirm) and the
Slack deliveries already answered (``claim_delivery``). SQLAlchemy 2 models; the URL comes from
``Settings.state_db`` (SQLite file by default, PostgreSQL works the same). ``open_state(url)`` gives
a :class:`State` whose ``session()`` is a context manager committing on success and rolling back on
error.

Nothing waits on the database for ever: ``timeout`` seconds (``Settings.state_timeout_seconds``
through ``state_for``) bound a PostgreSQL connection (``connect_timeout``), each statement
(``statement_timeout``) and the wait for a pooled connection, and a SQLite lock
(``busy_timeout``). A server that stops answering altogether (frozen, a partition) is not
noticed by any of these; the chat front ends add a deadline of their own
(``bot.frontends.store``).

The package: ``tables`` (the rows), ``record`` (the release record: one typed row per repository x
branch x pin group, written by the stage that knows, read by every view; failed publishes),
``owners`` (who runs a build and whether it lives), ``store`` (``State``, ``open_state``,
``state_for``), ``dashboard_issue`` (the dashboard issue's number and its actions claimed once),
``decisions`` (what people decided about bump pull requests: closed unmerged, edited, paused,
merge refused), ``carried`` (variants unchanged since an earlier head of the same bump PR,
counted as built at its new head), ``liveness`` (a dead owner's claim is taken over). Import from ``release.state``.
May import config only; every other package may import it (never the other way).
"""

from release.state import (
    carried,  # noqa: F401  (its table: variants counted as built at a PR's new head)
    dashboard_issue,  # noqa: F401  (its tables, before any engine creates them)
    decisions,  # noqa: F401  (its table: people's decisions about bump PRs)
    record,  # noqa: F401  (its tables are created with the others)
)
from release.state.owners import RUNNING, owner_alive, owner_id, process_start
from release.state.store import DEFAULT_TIMEOUT, State, open_state, state_for
from release.state.tables import (
    ACTIVE,
    STATES,
    Base,
    Build,
    BuildLock,
    BuildRun,
    Claim,
    Delivery,
    GithubRun,
    JobRun,
    Outbox,
    PendingPlan,
    Publish,
    Release,
    utcnow,
)

__all__ = ["ACTIVE", "DEFAULT_TIMEOUT", "RUNNING", "STATES", "Base", "Build", "BuildLock", "BuildRun",
           "Claim", "Delivery", "GithubRun", "JobRun", "Outbox", "PendingPlan", "Publish", "Release", "State",
           "open_state",
           "owner_alive", "owner_id", "process_start", "state_for", "utcnow"]
