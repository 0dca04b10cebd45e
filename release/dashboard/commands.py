"""Command layer of the dashboard, shared by the CLI, chat (Slack, console) and the schedule.

``dashboard(ctx, repo=None)`` gathers the facts (``release.dashboard.collect``), builds the
model and returns a :class:`DashboardResult` (``to_dict`` for ``--json``, ``text`` for a log or
a pipe; the rich table and the other renderings take ``result.model``). Without a configured or
given repository it refuses in one line (exit 2). The issue that mirrors it is kept by
``release.dashboard.issue_sync``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from config.errors import TorchbotError, UsageError
from config.policy import github_name, is_bump_head, is_vllm_branch, tracked
from release.dashboard import collect
from release.dashboard.model import Dashboard, build

NEEDS = "No repository: pass --repo PATH or set TORCHBOT_REPO_PATH (build-pytorch, then build-torchvision)."
SHARED_JOBS = ("docs-check", "poll-builds", "publish", "dashboard-issue")


class DashboardResult:
    exit_code = 0
    ok = True

    def __init__(self, model: Dashboard):
        self.model = model

    def to_dict(self) -> dict[str, Any]:
        return self.model.to_dict()

    def text(self) -> str:
        from release.dashboard.text import plain

        return plain(self.model)


def _paths(ctx, repo) -> list[Path]:
    if repo:
        from release.context import repo_path

        return [repo_path(ctx, repo)]
    paths = ctx.repositories
    if not paths:
        raise UsageError(NEEDS)
    return [Path(p) for p in paths]


def _jobs(ctx, now: datetime) -> dict[str, dict]:
    """Job id -> {id, description, next_run} from the schedule's triggers (APScheduler)."""
    from release.timetable import job_specs

    out = {}
    for spec in job_specs(ctx):
        nxt = spec.trigger.get_next_fire_time(None, now)
        out[spec.id] = {"id": spec.id, "description": spec.description,
                        "next_run": nxt.isoformat(timespec="seconds") if nxt else None}
    return out


def _github_names(ctx, models) -> dict[str, str | None]:
    """Repository path -> its ``owner/name`` on GitHub (``config.policy.github_name``: the setting for
    the first configured repository, its remote's URL for the others)."""
    from release.adapters.remote import remote_url

    s = ctx.settings
    first = collect._key(str(ctx.repositories[0])) if ctx.repositories else None
    return {m.path: github_name(s, first=(first is None or collect._key(m.path) == first),
                                remote_url=remote_url(Path(m.path), s.repo_remote)) for m in models}


def _merged_into(path: str, sha: str | None, tip: str | None) -> bool:
    """Whether the remote branch (``tip``) holds the commit ``sha`` (a pull request merged)."""
    if not sha or not tip:
        return False
    from release.adapters.remote import has_commit, is_ancestor

    return has_commit(Path(path), sha) and is_ancestor(Path(path), sha, tip)


def _built_as(path: str, tip: str, pr: dict | None) -> str | None:
    """A merged pull request's head whose recipes the branch's tip has: its builds are the branch's."""
    from config.outcomes import PrState
    from release.adapters.remote import same_tree

    if pr is None or pr.get("state") != PrState.MERGED or not pr.get("sha") or pr["sha"] == tip:
        return None
    return pr["sha"] if same_tree(Path(path), tip, pr["sha"], ".flox/pkgs") else None


def _deliveries(ctx, rs, recorded, pulls, st, notes, names_of=None) -> dict[tuple[str, str], dict]:
    """(repository path, branch) -> its bump pull request: the record's, brought up to date with
    what GitHub (or, without it, the remote branch) says of it; else an open bump PR GitHub lists
    that the record does not know (opened by hand)."""
    from config.outcomes import PrState
    from release.state.record import set_pr_state

    prs: dict[tuple[str, str], dict] = {}
    for m in rs.models:
        listed = collect.open_bump_prs(list(pulls[m.path].values()))
        for name, bm in m.branches.items():
            if is_bump_head(name):
                continue
            pr = collect.delivery_of(recorded.get((collect._key(m.path), name), []))
            if pr is not None and pr["state"] in (PrState.OPEN, PrState.CONFLICT):
                state, closed_by, sha = collect.observe_pull(pr, pulls[m.path].get(pr["number"]),
                                                             _merged_into(m.path, pr.get("sha"), bm.tip))
                if state == PrState.CLOSED and not closed_by and (names_of or {}).get(m.path):
                    # GitHub's PR list has no closer: the PR as an issue has (asked once, when it closes)
                    closed_by = collect.closer_of(ctx.settings, names_of[m.path], int(pr["number"])) or None
                if (state, closed_by, sha) != (pr["state"], pr["closed_by"], pr["sha"]) and st is not None:
                    try:
                        set_pr_state(st, m.path, name, pr["number"], PrState(state), closed_by, sha)
                    except TorchbotError as err:
                        notes.append(f"state DB: {err.message}")
                pr = {**pr, "state": str(state), "closed_by": closed_by, "sha": sha}
            if name in listed and (pr is None or pr["number"] != listed[name]["number"]):
                pr = listed[name]
            if pr is not None:
                prs[(m.path, name)] = pr
    return prs


def facts(ctx, repo=None, now: datetime | None = None, fetch: bool = False) -> dict:
    """Everything the model is built from, as plain data: the branches as the remote has them
    (``origin/*``; ``bump/*`` heads are no branches of the release), the release record, the builds
    by the commit they ran at, publishes and failed publishes, GitHub's pull requests."""
    from config.catalog_data import load_catalog
    from release.recipes.repos import read_repositories

    now = now or datetime.now(UTC)
    s = ctx.settings
    paths = _paths(ctx, repo)
    notes: list[str] = []
    if fetch:  # the remote's branches as they are now (a PR merged by a person, a push)
        from release.adapters.remote import fetch_remote

        for path in paths:
            failed = fetch_remote(path, s.repo_remote)
            if failed:
                notes.append(f"git fetch {s.repo_remote} in {path}: {failed}; its branches as last fetched")
    rs = read_repositories(paths, load_catalog(), prefer_remote=s.repo_remote)
    names_of = _github_names(ctx, rs.models)
    pulls: dict[str, dict[int, dict]] = {}
    for m in rs.models:
        gh = names_of[m.path]
        got = collect.pulls_of(s, gh, notes) if (gh and s.github_token is not None) else []
        pulls[m.path] = {int(p["number"]): p for p in got if p.get("number") is not None}
    st = None
    recorded: dict[tuple[str, str], list] = {}
    decided: dict[tuple[str, str], list[dict]] = {}
    latest: dict = {}
    published: dict = {}
    failures: dict = {}
    try:
        from release.state import state_for

        st = state_for(ctx)
        recorded = collect.record_rows(st)
        decided = collect.decision_facts(st)
    except TorchbotError as err:
        notes.append(f"state DB: {err.message}")
    prs = _deliveries(ctx, rs, recorded, pulls, st, notes, names_of)
    if st is not None:
        try:
            names = {n for m in rs.models for n in m.branches if not is_bump_head(n)}
            commits = {bm.tip for m in rs.models for bm in m.branches.values()} | {
                p["sha"] for p in prs.values() if p.get("sha")}
            latest, published = collect.build_facts(st, names, commits)
            failures = collect.publish_failures(st, names)
        except TorchbotError as err:
            notes.append(f"state DB: {err.message}")
    jobs = _jobs(ctx, now)
    channel_of = tracked(s)
    nix = collect.NixpkgsFacts(s)
    skip = tuple(s.docs_skip_branches)

    def drift() -> dict:
        return {"pairing": collect.companion_drift(rs.pytorch[0], rs.vision[0], skip) if rs.pytorch and rs.vision
                else {}, "readme": {m.path: collect.readme_drift(m, skip) for m in rs.pytorch}}

    drifted = collect.cached_by_tips(s, rs.models, skip, drift)
    pairing = drifted["pairing"]
    by_name = {(b.repository, b.name): b for b in [*rs.catalog.branches.values(), *rs.catalog.vision.values()]}
    first = collect._key(str(ctx.repositories[0])) if ctx.repositories else None
    repos = []
    try:
        for m in rs.models:
            readme = drifted["readme"].get(m.path, {})
            builds_here = first is None or collect._key(m.path) == first  # the GitHub workflow builds its PRs
            # its rows' repository (Build.repo, Publish.repo): None for the first, else its GitHub name
            recorded_as = None if builds_here or (names_of[m.path] or "").lower() == (s.github_repo or "").lower() \
                else names_of[m.path]
            branches = []
            for name, bm in m.branches.items():
                if is_bump_head(name):
                    continue
                cat = by_name.get((m.path, name))
                pr = prs.get((m.path, name))
                if pr is not None:
                    pr = {**pr, "builds": collect.pr_builds(latest, pr.get("sha")), "builds_here": builds_here}
                by_hand = is_vllm_branch(name, cat.vllm if cat else None) and not s.bump_vllm_branches
                touching = [j for j in ("bump",) if j in jobs and not by_hand] + list(SHARED_JOBS)
                branches.append({
                    "name": name, "head": bm.tip, "pytorch": cat.pytorch if cat else None,
                    "python": cat.python if cat else None,
                    "cuda": list(cat.cuda_versions) if cat else [], "purpose": cat.purpose if cat else None,
                    "pins": collect.pin_facts(collect.pin_groups(bm), channel_of(name), nix),
                    "bumps": collect.bump_facts(recorded.get((collect._key(m.path), name), [])),
                    "pr": pr, "readme_drift": readme.get(name, []),
                    "pairs_with": cat.pairs_with if cat else None, "companion_drift": pairing.get(name, []),
                    "variants": collect.variant_facts(bm, name, latest, published, _built_as(m.path, bm.tip, pr),
                                                      recorded_as),
                    "publish_failures": failures.get((recorded_as, name), []),
                    "decisions": decided.get((Path(m.path).name, name), []),
                    "jobs": [jobs[j] for j in touching if j in jobs],
                })
            repos.append({"name": m.kind, "path": m.path, "kind": m.kind, "github": names_of[m.path],
                          "branches": branches})
    finally:
        nix.close()
    notes.extend(dict.fromkeys(nix.notes))
    return {"generated": collect.now_iso(now), "repositories": repos, "notes": notes}


def dashboard(ctx, repo=None, now: datetime | None = None, fetch: bool = False) -> DashboardResult:
    now = now or datetime.now(UTC)
    return DashboardResult(build(facts(ctx, repo, now, fetch), now))


# ---------------------------------------------------------------------------------------------
# Acting on a row (the issue's ticked boxes; Slack's buttons go through chat's plans instead)


def run_action(ctx, action) -> str:
    """Do what a row's action says through the plan chat's ``/bump`` and ``/build`` build (the
    same planners, options and delivery), after the check chat makes at Confirm: what the
    action's key names (the branch tip, or the revision to approve) is still what the plan was
    made from; else it refuses in one line and nothing is done. One line back."""
    words = action.command.split()
    if action.kind in ("approve-bump", "rebase-pr"):
        from release.pins.commands import plan_bump

        opts: dict[str, Any] = {}
        rest = words[2:]
        for flag in ("--pytorch", "--cuda"):
            if flag in rest:
                i = rest.index(flag)
                opts[flag[2:]] = rest[i + 1]
                rest = rest[:i] + rest[i + 2:]
        # delivered as chat's /bump delivers (TORCHBOT_BUMP_DELIVERY; a bump PR already open is updated)
        plan = plan_bump(ctx, words[1], rest[0] if rest else None, delivery="auto", **opts)
        _still_there(action, plan.to_dict(), rev=rest[0] if rest else None)
        result = plan.apply()
        return (result.text().splitlines() or ["bumped"])[0]
    if action.kind == "recreate-pr":  # as `release bump-pause BRANCH --recreate HEAD` does
        from release.pins.commands import pause_bumps

        return pause_bumps(ctx, words[1], recreate=words[3], by="the dashboard", repo=action.path or None).text()
    if action.kind == "retry-builds":
        from release.builds.commands import plan_build

        backend = ctx.settings.schedule_backend()
        if backend == "none":
            raise UsageError("no build backend: set TORCHBOT_SCHEDULE_BUILD_BACKEND (github or local) to retry builds "
                             "from the dashboard issue.")
        plan = plan_build(ctx, words[1], words[2:], backend=backend)
        _still_there(action, plan.to_dict())
        result = plan.apply()
        states: dict[str, int] = {}
        for r in result.rows:
            states[r.get("state", "?")] = states.get(r.get("state", "?"), 0) + 1
        return "retried: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    raise UsageError(f"Unknown dashboard action {action.kind}.")


def _still_there(action, plan: dict, rev: str | None = None) -> None:
    """Refuse (``RefusedError``, nothing done) when what the action's key names moved since the
    dashboard showed it: the branch tip (``approve-bump`` of a channel head, ``rebase-pr``,
    ``retry-builds``), or the revision an approval moves to (the plan's target)."""
    from config.errors import RefusedError

    named = action.key.rsplit(":", 1)[-1]
    if not named:
        return
    if action.kind == "approve-bump" and rev:
        targets = {plan.get("new_rev") or ""} | {b.get("new_pin") or "" for b in plan.get("branches") or []}
        targets |= {o.get(k) or "" for o in plan.get("outcomes") or [] for k in ("target", "new_pin")}
        targets.discard("")
        if targets and not any(t.startswith(named) for t in targets):  # (nothing to move: nothing is done)
            raise RefusedError(f"{action.branch}: the approved bump to {named[:7]} is no longer what the plan "
                               "would do; nothing was done (the dashboard shows it as it is now).")
        return
    if action.kind == "retry-builds":
        now = plan.get("commit") or ""
    else:
        tips = plan.get("tips") or {b.get("branch"): b.get("tip") for b in plan.get("branches") or []}
        now = tips.get(action.branch) or ""
    if now and not now.startswith(named):
        raise RefusedError(f"{action.branch} moved from {named[:7]} to {now[:7]} since the dashboard showed it; "
                           "nothing was done (the dashboard shows it as it is now).")


def sync_issues(ctx, model: Dashboard | None = None, acting: bool | None = None) -> list[str]:
    """Bring each repository's dashboard issue up to date on GitHub (acting on ticked boxes
    first when ``acting``); one line per thing done. Needs TORCHBOT_GITHUB_TOKEN.

    Ticks are acted on by the schedule's leader only (its ``dashboard-issue`` job passes
    ``acting=True``; after an operation, ``acting=False``: the body only). ``None`` (the CLI's
    ``dashboard --issue``): acting when no ``serve`` process leads the schedule, else the body only."""
    s = ctx.settings
    if s.github_token is None:
        return ["dashboard issues: skipped (no TORCHBOT_GITHUB_TOKEN)"]
    from release.dashboard.issue_sync import sync
    from release.state import state_for

    st = state_for(ctx)
    lines = []
    if acting is None:
        from release.timetable import LEADER_KEY as KEY

        acting = st.claim_holder(KEY) is None
        if not acting:
            lines.append("dashboard issues: ticked boxes are left to the schedule's leader (a serve process)")
    model = model or dashboard(ctx, fetch=True).model
    repos = {r.name: r.github for r in model.repositories if r.github}
    return lines + sync(s, st, model, lambda a: run_action(ctx, a), repos, rebuild=lambda: dashboard(ctx).model,
                        acting=acting, ask=lambda text: ask_in_slack(ctx, text))


def ask_in_slack(ctx, text: str) -> None:
    """Post ``text`` (a question to the team: confirm an action torchbot did not take) in
    TORCHBOT_ANNOUNCE_CHANNEL; without Slack it is logged. Never fails the caller."""
    import logging

    s = ctx.settings
    said = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if s.slack_bot_token is None or not s.announce_channel:
        logging.getLogger("torchbot.dashboard").warning("confirmation needed (no Slack channel to ask in): %s", said)
        return
    try:
        from release.adapters.slack import make_client

        make_client(s).chat_postMessage(channel=s.announce_channel, text=said,
                                        blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": said[:2900]}}])
    except Exception as err:  # noqa: BLE001  (a question not asked is logged; nothing was done anyway)
        logging.getLogger("torchbot.dashboard").warning("could not ask in Slack (%s): %s",
                                                        type(err).__name__, said)


def after_operation(ctx, what: str) -> None:
    """After a release operation (a bump, build or publish, from chat or the schedule): the
    dashboard issues say what it changed (the operation's own stage has written the release
    record already). Never fails the operation: a failure is logged."""
    import logging

    if ctx.settings.github_token is None or not ctx.repositories:
        return
    try:
        for line in sync_issues(ctx, acting=False):
            logging.getLogger("torchbot.dashboard").info("after %s: %s", what, line)
    except Exception as err:  # noqa: BLE001  (the operation is done; the issue catches up on its schedule)
        logging.getLogger("torchbot.dashboard").warning("dashboard issues not updated after %s: %s", what, err)
