"""The GitHub run that publishes what a bump pull request built, after the merge: the variants
at the branch's commit, each on a runner of its platform, ``publish: true``, and with a build
cache ``substitute: true`` (``release.publishing.on_github`` dispatches and records it).

May import: config, release.adapters, release.recipes, release.builds.plan, release.builds.run.
"""

from __future__ import annotations

from pathlib import Path

from release.adapters.git import list_recipes, read_blobs
from release.builds.plan import BuildPlan, Skip, place_github, plan_items, with_targets
from release.builds.run import checked_cache, companion_github
from release.recipes.platforms import recipe_catalog


def publish_plan(ctx, path: Path, branch: str, commit: str, packages: list[str]) -> tuple[BuildPlan, list[Skip]]:
    """The publish run of ``packages`` at ``commit`` (their branch's head), and the variants it
    cannot publish and why (no runner for their platform). Asks the cache first: one that does
    not answer is one line, and nothing is dispatched. A companion's (build-torchvision's) run is
    dispatched in its own GitHub repository, as its pull request's builds were."""
    cache = checked_cache(ctx.settings)
    recipes = list_recipes(path, commit)
    by_blob = read_blobs(path, recipes.values())
    texts = {p: by_blob.get(blob, "") for p, blob in recipes.items()}
    items, _ = plan_items(recipes, texts, sorted(p for p in packages if p in recipes))
    items = with_targets(items, texts, recipe_catalog())
    s = ctx.settings
    items, skipped = place_github(items, s.github_runners, s.github_big_parallel_runners)
    return BuildPlan(path, branch, commit, items, backend="github", cache=cache, publish_only=True,
                     github=companion_github(ctx, path, "github")), skipped  # a companion's in its own repository
