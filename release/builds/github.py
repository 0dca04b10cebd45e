"""The github build backend: builds run by the workflow ``release.builds.workflow`` writes.

``dispatch_build`` triggers it with ``workflow_dispatch`` at the branch being built (the
dispatch ref; inputs: the branch, the pytorch and companion matrix entries as JSON —
``{"package", "platform", "runs_on"}`` each — and a request id that appears in the run name so
torchbot finds its run), records the builds as queued with the run id, and — unless
``wait=False`` — follows the run's jobs until they end. A branch larger than one run can hold
(GitHub: 256 jobs per matrix, 65,535 characters of inputs) is dispatched as several runs, each
pytorch variant together with the companions that wait for it. ``poll_active`` is one
polling pass over every unfinished github build (the scheduler's ``poll-builds`` job).
The HTTP calls are the GitHub adapter's (``release.adapters.github.Actions``).

May import: config, release.state, release.adapters.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime

from release.adapters.github import Actions

FINAL = ("succeeded", "failed", "interrupted")
MAX_MATRIX_JOBS = 256  # GitHub: a matrix generates at most 256 jobs per workflow run
MAX_INPUT_CHARS = 60_000  # GitHub caps a dispatch's inputs at 65,535 characters; keep a margin


def matrix_entry(item) -> dict:
    return {"package": item.package, "platform": item.platform, "runs_on": list(item.runs_on)}


def _encode(entries: list[dict]) -> str:
    return json.dumps(entries, separators=(",", ":"))


def batches(items) -> list[tuple[list[dict], list[dict]]]:
    """The dispatches a plan needs: (pytorch entries, companion entries) per run, each within
    GitHub's limits, a companion in the same run as the pytorch variant it waits for (pure)."""
    torch = [i for i in items if i.after is None and i.kind == "pytorch"]
    names = {i.package for i in torch}
    waiting: dict[str, list] = {}
    loose = []
    for i in items:
        if i.package in names and i.after is None:
            continue
        if i.after in names:
            waiting.setdefault(i.after, []).append(i)
        else:
            loose.append(i)
    units = [([matrix_entry(t)], [matrix_entry(c) for c in waiting.get(t.package, [])]) for t in torch]
    units += [([], [matrix_entry(c)]) for c in loose]
    out: list[tuple[list[dict], list[dict]]] = []
    for t, c in units:
        if out:
            bt, bc = out[-1]
            fits = (len(bt) + len(t) <= MAX_MATRIX_JOBS and len(bc) + len(c) <= MAX_MATRIX_JOBS
                    and len(_encode(bt + t)) + len(_encode(bc + c)) <= MAX_INPUT_CHARS)
            if fits:
                bt.extend(t)
                bc.extend(c)
                continue
        out.append((list(t), list(c)))
    return out


def _ts(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)


def job_state(job: dict) -> str:
    """A GitHub job's status/conclusion as a build state (pure)."""
    status = job.get("status")
    if status == "completed":
        return "succeeded" if job.get("conclusion") == "success" else "failed"
    if status == "in_progress":
        return "running"
    return "queued"


def dispatch_build(ctx, plan, wait: bool = True, actions: Actions | None = None) -> list[dict]:
    from release.state import Build, owner_id, state_for

    if not plan.items:
        return []
    gh = actions or Actions(ctx.settings)
    st = state_for(ctx)
    by_name = {i.package: i for i in plan.items}
    keys = []
    for torch, comps in batches(plan.items):
        request_id = uuid.uuid4().hex[:16]
        gh.dispatch({"branch": plan.branch, "pytorch": _encode(torch), "companions": _encode(comps),
                     "request_id": request_id}, ref=plan.ref)
        run = gh.find_run(request_id)
        keys.append(request_id)
        with st.session() as s:
            s.add_all(
                Build(package=i.package, branch=plan.branch, state="queued", backend="github", recipe_blob=i.blob,
                      pin=i.pin, commit=plan.commit, owner=owner_id(), run_key=request_id,
                      external_id=str(run["id"]), log=run.get("html_url"))
                for i in (by_name[e["package"]] for e in torch + comps)
            )
    if wait:
        for request_id in keys:
            follow(ctx, request_id, gh)
    with st.session() as s:
        return [b.to_dict() for b in s.query(Build).filter(Build.run_key.in_(keys)).order_by(Build.id)]


def poll_run(ctx, run_id: str, gh: Actions) -> int:
    """Update the builds of one run from its jobs; returns how many changed state."""
    from release.state import Build, state_for, utcnow

    st = state_for(ctx)
    jobs = {j.get("name"): j for j in gh.jobs(run_id)}
    run = gh.run(run_id)
    changed = 0
    with st.session() as s:
        for b in s.query(Build).filter(Build.external_id == str(run_id), Build.backend == "github",
                                       Build.state.in_(("queued", "running"))):
            job = jobs.get(b.package)
            if job is None:
                if run.get("status") == "completed":
                    b.state, b.finished = "failed", utcnow()
                    b.message = f"the run ended ({run.get('conclusion')}) without a job for this variant"
                    changed += 1
                continue
            new = job_state(job)
            if new != b.state:
                b.state = new
                b.started = _ts(job.get("started_at")) or b.started or utcnow()
                if new in FINAL:
                    b.finished = _ts(job.get("completed_at")) or utcnow()
                    b.message = None if new == "succeeded" else f"GitHub job {job.get('conclusion')}"
                b.log = job.get("html_url") or b.log
                changed += 1
    return changed


def follow(ctx, request_id: str, gh: Actions) -> None:
    from release.state import Build, state_for

    st = state_for(ctx)
    deadline = time.monotonic() + ctx.settings.build_timeout
    while True:
        with st.session() as s:
            active = {b.external_id for b in s.query(Build).filter(Build.run_key == request_id,
                                                                    Build.state.in_(("queued", "running")))}
        if not active or time.monotonic() > deadline:
            return
        for run_id in active:
            poll_run(ctx, run_id, gh)
        time.sleep(ctx.settings.github_poll_seconds)


def poll_active(ctx, actions: Actions | None = None) -> int:
    from release.state import Build, state_for

    st = state_for(ctx)
    with st.session() as s:
        runs = {b.external_id for b in s.query(Build).filter(Build.backend == "github",
                                                              Build.state.in_(("queued", "running")))}
    if not runs:
        return 0
    gh = actions or Actions(ctx.settings)
    return sum(poll_run(ctx, r, gh) for r in runs if r)
