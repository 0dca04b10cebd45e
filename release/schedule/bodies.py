"""The schedule's job bodies: what each job of the timetable (``release.timetable``) does, each
returning a one-line result. The scheduler's lifecycle (claiming a run, APScheduler, the job
store) is ``release.schedule.jobs``.

- ``bump``: ``release.pins.commands.plan_bump(ctx, "all", None).apply()`` (which keeps each pin
  group's outcome in the release record), delivered as ``TORCHBOT_BUMP_DELIVERY`` says; then a
  ``--changed-only`` build of each bump as it was delivered (``release.schedule.delivered``) with
  ``Settings.schedule_backend()``;
- ``docs-check``: ``release docs --check``; drift goes to the announce channel;
- ``publish``: what every configured repository built and merged (build-pytorch's, then
  build-torchvision's, ``release.publishing.publish.repositories``);
- ``poll-builds``, ``flush-announcements``, ``dashboard-issue``.

May import: everything in release/ (it drives the other concerns through their command layers).
"""

from __future__ import annotations

import logging

log = logging.getLogger("torchbot.schedule")


def _job_bump(ctx, _arg) -> str:
    """Every branch of every repository, every pin group (release.pins.commands.plan_every_branch),
    delivered as TORCHBOT_BUMP_DELIVERY says; then the builds of what moved. One line: the counts,
    the held branches and why, where the bumps went."""
    from release.pins.commands import plan_bump

    if ctx.settings.repo_path is None:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    result = plan_bump(ctx, "all", None, force=ctx.settings.bump_vllm_branches).apply()
    from release.pins.weekly import counts

    parts = [counts(result.outcomes)]
    held = [o for o in result.outcomes if o.kind == "held"]
    if held:  # grouped by reason: a delivery that failed for a whole repository is said once
        why: dict[str, list[str]] = {}
        for o in held:
            why.setdefault(o.delivery_error or o.reason, []).append(f"{o.repo} {o.branch} ({o.group})")
        parts.append("held: " + "; ".join(f"{', '.join(names)}: {reason}" for reason, names in why.items()))
    prs = [d for d in result.delivered if d.head]
    if prs:
        parts.append(f"{len(prs)} pull request(s): " + ", ".join(d.url or d.head for d in prs))
    elif result.plan.mode == "local" and result.delivered:
        parts.append(f"committed locally ({result.plan.why_local}): nothing left this machine")
    elif result.delivered:
        parts.append(f"pushed: {', '.join(d.branch for d in result.delivered)}")
    parts.append(_build_after_bump(ctx, result.delivered))
    return "; ".join(parts)


def _build_after_bump(ctx, delivered) -> str:
    """The changed-only builds of the bumps as they were delivered (Settings.schedule_backend();
    release.schedule.delivered): a pull request at its head, a pushed branch at its remote head."""
    backend = ctx.settings.schedule_backend()
    if backend == "none":
        explicit = ctx.settings.schedule_build_backend or ctx.settings.build_backend
        why = ("TORCHBOT_SCHEDULE_BUILD_BACKEND=none" if explicit
               else "no GitHub token configured and TORCHBOT_SCHEDULE_BUILD_BACKEND unset")
        return f"build: none ({why}: the schedule builds nothing by itself)"
    if not delivered:
        return "build: none"
    from release.schedule.delivered import build_after_bump

    return "build: " + "; ".join(build_after_bump(ctx, delivered, backend))


def _job_poll(ctx, _arg) -> str:
    from release.builds.recover import reconcile
    from release.state import state_for

    # Runs whose torchbot died (a `release build` killed elsewhere): processes stopped, spooled
    # results written, worktrees removed; then builds recorded without a run.
    n = len(reconcile(ctx)) + state_for(ctx).mark_interrupted()
    try:
        from release.builds.github import poll_active
    except ImportError:
        return f"{n} interrupted"
    if ctx.settings.github_token is None:
        return f"{n} interrupted; github polling off (no TORCHBOT_GITHUB_TOKEN)"
    changed = poll_active(ctx)
    return f"{n} interrupted; {changed} github build(s) changed state"


def _job_publish(ctx, _arg) -> str:
    if ctx.settings.repo_path is None:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    from release.publishing.publish import held, publish_pending

    rows = publish_pending(ctx, None)  # every configured repository: build-torchvision's too
    ok = sum(r["state"] == "published" for r in rows)
    skipped = sum(r["state"] == "skipped" for r in rows)
    waiting = len(held(ctx, None))
    return f"{ok} published, {len(rows) - ok - skipped} failed" + (
        f", {skipped} taken by another torchbot" if skipped else "") + (
        f", {waiting} not on their branch yet (an open pull request's builds, or recipes changed since)"
        if waiting else "")


def _job_flush(ctx, _arg) -> str:
    s = ctx.settings
    if s.slack_bot_token is None or not s.announce_channel:
        return "skipped: no Slack token or announce channel"
    from release.publishing.announce import flush

    out = flush(ctx)
    return f"{out['sent']} sent, {out['updated']} edited, {out['recovered']} recovered, {out['pending']} pending" + (
        f" ({out['error']})" if out["error"] else "")


def _job_docs(ctx, _arg) -> str:
    """``release docs --check`` (with the torchvision pairing when configured); drift is posted
    to the announce channel as one message listing the stale rows."""
    if ctx.settings.repo_path is None:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    from release.docs.commands import docs_check

    result = docs_check(ctx)
    if not result.drift:
        return f"clean: {len(result.checked)} READMEs match the repository"
    line = f"{len(result.stale)} stale rows, {len(result.pairing)} torchvision mismatches"
    s = ctx.settings
    if s.slack_bot_token is None or not s.announce_channel:
        return f"{line}; not posted (no Slack token or announce channel)"
    from release.adapters.slack import make_client
    from release.docs.commands import drift_message

    make_client(s).chat_postMessage(channel=s.announce_channel, text=drift_message(result))
    return f"{line}; posted to {s.announce_channel}"


def _job_dashboard(ctx, _arg) -> str:
    if ctx.settings.github_token is None:
        return "skipped: no TORCHBOT_GITHUB_TOKEN"
    if not ctx.repositories:
        return "skipped: no repository configured (TORCHBOT_REPO_PATH)"
    from release.dashboard.commands import sync_issues

    return "; ".join(sync_issues(ctx, acting=True)) or "nothing to do"  # the leader's job


JOB_KINDS = {
    "dashboard-issue": _job_dashboard,
    "docs-check": _job_docs,
    "bump": _job_bump,
    "poll-builds": _job_poll,
    "publish": _job_publish,
    "flush-announcements": _job_flush,
}


