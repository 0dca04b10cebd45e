"""The github build backend: builds run by the workflow ``release.builds.workflow`` writes.

``dispatch_build`` triggers it with ``workflow_dispatch`` (inputs: the
branch, the pytorch and companion variant lists as JSON, and a request id that appears in
the run name so torchbot finds its run), records the builds as queued with the run id, and
— unless ``wait=False`` — follows the run's jobs until they end. ``poll_active`` is one
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
    request_id = uuid.uuid4().hex[:16]
    torch = [i.package for i in plan.items if i.after is None and i.kind == "pytorch"]
    comps = [i.package for i in plan.items if i.package not in torch]
    gh.dispatch({"branch": plan.branch, "pytorch": json.dumps(torch), "companions": json.dumps(comps),
                 "request_id": request_id})
    run = gh.find_run(request_id)
    st = state_for(ctx)
    url = run.get("html_url")
    with st.session() as s:
        s.add_all(
            Build(package=i.package, branch=plan.branch, state="queued", backend="github", recipe_blob=i.blob,
                  pin=i.pin, commit=plan.commit, owner=owner_id(), run_key=request_id,
                  external_id=str(run["id"]), log=url)
            for i in plan.items
        )
    if wait:
        follow(ctx, request_id, gh)
    with st.session() as s:
        return [b.to_dict() for b in s.query(Build).filter(Build.run_key == request_id).order_by(Build.id)]


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
