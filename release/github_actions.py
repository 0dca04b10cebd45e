"""The github build backend (adapter: GitHub REST API over httpx).

``render_workflow`` fills ``release/templates/build-workflow.yml`` (a matrix job per
variant running ``flox build`` and ``flox publish``); ``write_workflow`` puts it into the
target repository. ``dispatch_build`` triggers it with ``workflow_dispatch`` (inputs: the
branch, the pytorch and companion variant lists as JSON, and a request id that appears in
the run name so torchbot finds its run), records the builds as queued with the run id, and
— unless ``wait=False`` — follows the run's jobs until they end. ``poll_active`` is one
polling pass over every unfinished github build (the scheduler's ``poll-builds`` job).
"""

from __future__ import annotations

import json
import math
import string
import time
import uuid
from datetime import datetime
from pathlib import Path

from config.errors import ExternalError, UsageError

TEMPLATE = Path(__file__).with_name("templates") / "build-workflow.yml"
FINAL = ("succeeded", "failed", "interrupted")


def render_workflow(settings) -> str:
    text = TEMPLATE.read_text()
    return string.Template(text).safe_substitute(
        runner=settings.github_runner,
        org=settings.flox_org,
        timeout_minutes=int(math.ceil(min(settings.build_timeout, 6 * 3600) / 60)),  # GitHub caps jobs at 6 h
        max_parallel=max(1, int(settings.build_jobs)),
    )


def write_workflow(ctx, repo=None, commit: bool = False) -> Path:
    from release.builds import git, repo_path

    path = repo_path(ctx, repo)
    target = path / ".github" / "workflows" / ctx.settings.github_workflow_file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_workflow(ctx.settings))
    if commit:
        rel = str(target.relative_to(path))
        git(path, "add", rel)
        git(path, "-c", f"user.name={ctx.settings.git_author_name}", "-c",
            f"user.email={ctx.settings.git_author_email}", "commit", "-q", "-m",
            "torchbot: GitHub Actions build workflow", "--", rel)
    return target


class Actions:
    """The few GitHub Actions endpoints torchbot uses."""

    def __init__(self, settings, client=None):
        import httpx

        if settings.github_token is None:
            raise UsageError("The github backend needs TORCHBOT_GITHUB_TOKEN.")
        self.s = settings
        self.repo = settings.github_repo
        self.base = f"{settings.github_api_url}repos/{self.repo}/actions/"
        self.http = client or httpx.Client(
            timeout=settings.http_timeout,
            headers={
                "Authorization": f"Bearer {settings.github_token.get_secret_value()}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "torchbot",
            },
        )

    def _call(self, method: str, path: str, **kw):
        import httpx

        last = ""
        for attempt in range(max(1, self.s.http_retries)):
            if attempt:
                time.sleep(0.2 * 2 ** (attempt - 1))
            try:
                resp = self.http.request(method, self.base + path, **kw)
            except httpx.HTTPError as err:
                last = type(err).__name__
                continue
            if resp.status_code >= 500 or resp.status_code == 429:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise ExternalError(f"GitHub refused {method} {path} (HTTP {resp.status_code}).")
            return resp.json() if resp.content else {}
        raise ExternalError(f"GitHub did not answer {method} {path} ({last}).")

    def dispatch(self, inputs: dict) -> None:
        self._call("POST", f"workflows/{self.s.github_workflow_file}/dispatches",
                   json={"ref": self.s.github_workflow_ref, "inputs": inputs})

    def find_run(self, request_id: str, attempts: int = 10) -> dict:
        for attempt in range(attempts):
            data = self._call("GET", f"workflows/{self.s.github_workflow_file}/runs",
                              params={"event": "workflow_dispatch", "per_page": 50})
            for run in data.get("workflow_runs", []):
                if request_id in (run.get("display_title") or run.get("name") or ""):
                    return run
            time.sleep(self.s.github_poll_seconds if attempt < attempts - 1 else 0)
        raise ExternalError("GitHub accepted the dispatch but its run did not appear; `release status` later.")

    def run(self, run_id: str) -> dict:
        return self._call("GET", f"runs/{run_id}")

    def jobs(self, run_id: str) -> list[dict]:
        return self._call("GET", f"runs/{run_id}/jobs", params={"per_page": 100}).get("jobs", [])


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
