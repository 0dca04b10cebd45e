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
    from release.schedule.jobs import job_specs

    out = {}
    for spec in job_specs(ctx):
        nxt = spec.trigger.get_next_fire_time(None, now)
        out[spec.id] = {"id": spec.id, "description": spec.description,
                        "next_run": nxt.isoformat(timespec="seconds") if nxt else None}
    return out


def _tracks(settings):
    """branch -> the nixpkgs channel or branch it follows: the first ``TORCHBOT_BUMP_TRACKS``
    pattern that matches it, else the default channel (as the weekly bump reads it, without
    importing the bump for it: the dashboard starts fast)."""
    from fnmatch import fnmatchcase

    patterns = dict(getattr(settings, "bump_tracks", None) or {})

    def channel(branch: str) -> str:
        return next((c for p, c in patterns.items() if fnmatchcase(branch, p)), settings.default_channel)

    return channel


def github_repo(settings, kind: str) -> str | None:
    """``owner/name`` of a managed repository on GitHub: TORCHBOT_GITHUB_REPO for build-pytorch,
    the same owner's build-torchvision for the other."""
    repo = settings.github_repo
    if not repo:
        return None
    return repo if kind == "build-pytorch" else f"{repo.split('/')[0]}/{kind}"


def _bump_outcomes(ctx, st) -> tuple[dict[tuple[str, str], list[dict]], dict[tuple[str, str], dict]]:
    """((repository, branch) -> its bump outcome per pin group; (repository, branch) -> the bump PR
    it went out as): the outcomes the last bump of every branch recorded, else the last
    ``bump:<branch>`` run of a per-branch schedule (build-pytorch)."""
    if st is None:
        return {}, {}
    recorded, prs = collect.recorded_outcomes(st)
    first = collect._key(str(ctx.repositories[0])) if ctx.repositories else ""
    from_runs = {(first, b): v for b, v in collect.bump_outcomes_from_runs(collect.bump_runs(st)).items()}
    return {**from_runs, **recorded}, prs


def record_bump(ctx, result) -> int:
    """Keep the per-group outcomes of a bump of every branch (release.pins' result objects):
    they replace the recorded outcomes of the repositories it went through."""
    repos, rows = collect.outcome_rows(result)
    if not repos:
        return 0
    from release.state import state_for

    state_for(ctx).record_bump_outcomes(repos, rows)
    return len(rows)


def facts(ctx, repo=None, now: datetime | None = None) -> dict:
    """Everything the model is built from, as plain data."""
    from config.catalog_data import load_catalog
    from release.recipes.repos import read_repositories

    now = now or datetime.now(UTC)
    s = ctx.settings
    rs = read_repositories(_paths(ctx, repo), load_catalog())
    notes: list[str] = []
    prs = {}
    for m in rs.models:
        gh = github_repo(s, m.kind)
        prs[m.kind] = collect.open_bump_prs(s, gh, notes) if (gh and s.github_token is not None) else {}
    st = None
    try:
        from release.state import state_for

        st = state_for(ctx)
        names = {n for m in rs.models for n in m.branches} | {p["head"] for x in prs.values() for p in x.values()}
        outcomes, recorded_prs = _bump_outcomes(ctx, st)
        names |= {p["head"] for p in recorded_prs.values()}
        latest, published = collect.build_facts(st, names)
    except TorchbotError as err:
        notes.append(f"state DB: {err.message}")
        latest, published, outcomes, recorded_prs = {}, {}, {}, {}
    jobs = _jobs(ctx, now)
    tracks = _tracks(s)
    nix = collect.NixpkgsFacts(s)
    skip = tuple(s.docs_skip_branches)

    def drift() -> dict:
        return {"pairing": collect.companion_drift(rs.pytorch[0], rs.vision[0], skip) if rs.pytorch and rs.vision
                else {}, "readme": {m.path: collect.readme_drift(m, skip) for m in rs.pytorch}}

    drifted = collect.cached_by_tips(s, rs.models, skip, drift)
    pairing = drifted["pairing"]
    by_name = {(b.repository, b.name): b for b in [*rs.catalog.branches.values(), *rs.catalog.vision.values()]}
    repos = []
    try:
        for m in rs.models:
            readme = drifted["readme"].get(m.path, {})
            branches = []
            for name, bm in m.branches.items():
                cat = by_name.get((m.path, name))
                key = (collect._key(m.path), name)
                pr = prs[m.kind].get(name) or recorded_prs.get(key)  # GitHub's list, else what the bump recorded
                if pr is not None:
                    pr = {**pr, "builds": collect.pr_builds(latest, pr["head"])}
                channel = tracks(name)
                own = (f"bump:{name}",) if m.kind == "build-pytorch" else ()  # per-branch jobs: build-pytorch's
                by_hand = bool(cat and cat.vllm and not s.bump_vllm_branches)  # vLLM pins: bumped by hand
                touching = [j for j in (*own, "bump") if j in jobs and not by_hand] + list(SHARED_JOBS)
                branches.append({
                    "name": name, "head": bm.tip, "pytorch": cat.pytorch if cat else None,
                    "python": cat.python if cat else None,
                    "cuda": list(cat.cuda_versions) if cat else [], "purpose": cat.purpose if cat else None,
                    "pins": collect.pin_facts(collect.pin_groups(bm), channel, nix),
                    "bumps": outcomes.get(key, []),
                    "pr": pr, "readme_drift": readme.get(name, []),
                    "pairs_with": cat.pairs_with if cat else None, "companion_drift": pairing.get(name, []),
                    "variants": collect.variant_facts(bm, name, latest, published),
                    "jobs": [jobs[j] for j in touching if j in jobs],
                })
            repos.append({"name": m.kind, "path": m.path, "kind": m.kind, "github": github_repo(s, m.kind),
                          "branches": branches})
    finally:
        nix.close()
    notes.extend(dict.fromkeys(nix.notes))
    return {"generated": collect.now_iso(now), "repositories": repos, "notes": notes}


def dashboard(ctx, repo=None, now: datetime | None = None) -> DashboardResult:
    now = now or datetime.now(UTC)
    return DashboardResult(build(facts(ctx, repo, now), now))


# ---------------------------------------------------------------------------------------------
# Acting on a row (the issue's ticked boxes; Slack's buttons go through chat's plans instead)


def run_action(ctx, action) -> str:
    """Do what a row's action says, through the same plans the CLI applies; one line back."""
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
        result = plan_bump(ctx, words[1], rest[0] if rest else None, delivery="auto", **opts).apply()
        return (result.text().splitlines() or ["bumped"])[0]
    if action.kind == "retry-builds":
        from release.builds.commands import plan_build

        backend = ctx.settings.schedule_backend()
        if backend == "none":
            raise UsageError("no build backend: set TORCHBOT_SCHEDULE_BUILD_BACKEND (github or local) to retry builds "
                             "from the dashboard issue.")
        result = plan_build(ctx, words[1], words[2:], backend=backend).apply()
        states: dict[str, int] = {}
        for r in result.rows:
            states[r.get("state", "?")] = states.get(r.get("state", "?"), 0) + 1
        return "retried: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    raise UsageError(f"Unknown dashboard action {action.kind}.")


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
        from release.schedule.leader import KEY

        acting = st.claim_holder(KEY) is None
        if not acting:
            lines.append("dashboard issues: ticked boxes are left to the schedule's leader (a serve process)")
    model = model or dashboard(ctx).model
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


def after_operation(ctx, what: str, result=None, every_branch: bool = False) -> None:
    """After a release operation (a bump, build or publish, from the CLI, chat or the schedule):
    a bump of every branch (``every_branch``) has its per-group outcomes kept, and the dashboard
    issues say what it changed. Never fails the operation: a failure is logged."""
    import logging

    try:
        if result is not None and every_branch:  # a bump of some branches would replace the others' outcomes
            record_bump(ctx, result)
    except TorchbotError as err:
        logging.getLogger("torchbot.dashboard").warning("bump outcomes not kept after %s: %s", what, err.message)
    if ctx.settings.github_token is None or not ctx.repositories:
        return
    try:
        for line in sync_issues(ctx, acting=False):
            logging.getLogger("torchbot.dashboard").info("after %s: %s", what, line)
    except Exception as err:  # noqa: BLE001  (the operation is done; the issue catches up on its schedule)
        logging.getLogger("torchbot.dashboard").warning("dashboard issues not updated after %s: %s", what, err)
