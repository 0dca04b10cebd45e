"""The bump stage's writes to the release record (release.state.record): the weekly sweep's
outcomes (``release.pins.weekly.record``) and a bump of named branches (``record_move``, from
``release.pins.named.apply_named``) alike, one typed row per bumped pin group. The bump is done
whatever happens here: a state DB that cannot be written is logged.

May import: config, release.state.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from config.outcomes import BumpKind, ReasonKind

log = logging.getLogger("torchbot.pins")


def record_move(data, outcome, settings) -> None:
    """A bump of named branches to one revision (``release.pins.named.apply_named``: a deliberate
    move, a dashboard Approve) keeps its groups' rows in the release record too: the bump stage is
    the one writer of bump outcomes, whichever way it ran."""
    from release.state.record import GroupOutcome

    if data.options.dry_run:
        return
    prs = {p.get("branch"): p for p in outcome.pull_requests}
    how = "pr" if data.options.open_pr else "push" if data.options.push else "local"
    rows = []
    for bp in data.to_commit:
        g, pr = bp.edit.group, prs.get(bp.branch) or {}
        by_hand = bool(bp.pytorch_new) or data.source == "--rev"
        rows.append(GroupOutcome(
            repo=str(data.repo_path), repo_name=Path(data.repo_path).name, branch=bp.branch, group=", ".join(g.labels),
            kind=BumpKind.BUMPED, reason_kind=ReasonKind.MOVED_BY_HAND if by_hand else ReasonKind.NONE,
            reason=f"moved by hand to PyTorch {bp.pytorch_new}" if bp.pytorch_new else "", old_pin=g.pin,
            target=data.new_rev, torch_old=bp.torch_old, pytorch=bp.torch_new, tracks=data.source, delivery=how,
            commit=outcome.commits.get(bp.branch), pr_number=pr.get("number"), pr_url=pr.get("url"),
            head_ref=pr.get("head"), head_sha=outcome.commits.get(bp.branch) if pr else None,
            cuda=tuple(g.cuda_versions)))
    write_rows(rows, settings, groups_only=True)


def write_rows(rows: list, settings, groups_only: bool = False) -> None:
    from config.errors import TorchbotError
    from release.state import open_state
    from release.state.record import write_bump

    try:
        write_bump(open_state(settings.state_db, getattr(settings, "state_timeout_seconds", None)), rows,
                   groups_only=groups_only)
    except (TorchbotError, SQLAlchemyError) as err:
        log.warning("the bump's outcomes were not kept in the release record: %s", getattr(err, "message", err))
