"""The GitHub Actions build workflow: ``render_workflow`` fills
``release/templates/build-workflow.yml`` (a matrix job per variant running ``flox build`` and
``flox publish``); ``write_workflow`` puts it into the target repository.

May import: config, release.context, release.adapters.
"""

from __future__ import annotations

import math
import string
from pathlib import Path

from release.adapters.git import run_git as git
from release.context import repo_path

TEMPLATE = Path(__file__).parents[1] / "templates" / "build-workflow.yml"


def render_workflow(settings) -> str:
    text = TEMPLATE.read_text()
    return string.Template(text).safe_substitute(
        runner=settings.github_runner,
        org=settings.flox_org,
        timeout_minutes=int(math.ceil(min(settings.build_timeout, 6 * 3600) / 60)),  # GitHub caps jobs at 6 h
        max_parallel=max(1, int(settings.build_jobs)),
    )


def write_workflow(ctx, repo=None, commit: bool = False) -> Path:
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
