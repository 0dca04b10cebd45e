"""Command layer for pin bumps, shared by the CLI and Slack.

``plan_bump(ctx, target, rev, **opts)`` returns a :class:`Plan` (``to_dict``/``text`` say what
will change; nothing is written) whose ``apply()`` performs it and returns a
:class:`BumpResult`. Slack shows ``plan.text()`` with Confirm/Cancel and calls ``apply()``.
"""

from __future__ import annotations

from typing import Any

from release.context import repo_arg
from release.pins.rules import short


def _catalog(ctx):
    try:
        return ctx.catalog
    except Exception:  # a repository the reader cannot read still has branches to bump
        from config.catalog import load_catalog

        return load_catalog()


class BumpResult:
    def __init__(self, plan: "Plan", outcome, companions=()):
        self.plan = plan
        self.outcome = outcome
        self.companions = list(companions)  # outcomes of the companion plans, in plan order
        self.ok = True
        self.exit_code = 0

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        d = self.plan.to_dict()
        d.update(
            {
                "applied": not self.plan.data.options.dry_run,
                "commits": o.commits,
                "pushed": o.pushed,
                "pull_requests": o.pull_requests,
                "notes": o.notes,
            }
        )
        for cd, co in zip(d.get("companions", []), self.companions):
            cd.update({"commits": co.commits, "pushed": co.pushed, "notes": co.notes})
        return d

    def text(self) -> str:
        data, o = self.plan.data, self.outcome
        if data.options.dry_run:
            return self.plan.text() + "\nDry run: nothing was written."
        lines = []
        for bp in data.branches:
            if bp.branch in o.commits:
                lines.append(f"{bp.branch}: {short(o.commits[bp.branch])} {bp.message}")
            elif bp.edit.up_to_date:
                lines.append(f"{bp.branch}: up to date ({short(data.new_rev)})")
        for name, why in data.skipped:
            lines.append(f"{name}: skipped ({why})")
        if o.pushed:
            lines.append(f"Pushed to {self.plan.settings.repo_remote}: {', '.join(o.pushed)}")
        for pr in o.pull_requests:
            lines.append(f"Pull request for {pr['branch']}: {pr.get('url') or '#' + str(pr.get('number'))}")
        lines.extend(o.notes)
        for cdata, co in zip(data.companions, self.companions):
            for bp in cdata.branches:
                if bp.branch in co.commits:
                    lines.append(f"{bp.branch} ({cdata.repo_path.name}): {short(co.commits[bp.branch])} {bp.message}")
            lines.extend(co.notes)
        return "\n".join(lines) or "Nothing to do."


class Plan:
    def __init__(self, data, settings):
        self.data = data
        self.settings = settings

    def to_dict(self) -> dict[str, Any]:
        d = self.data
        return {
            "ok": True,
            "repo": str(d.repo_path),
            "new_rev": d.new_rev,
            "source": d.source,
            "dry_run": d.options.dry_run,
            "branches": [bp.to_dict() for bp in d.branches],
            "skipped": [{"branch": b, "reason": r} for b, r in d.skipped],
            "companions": [
                {"repo": str(c.repo_path), "branches": [bp.to_dict() for bp in c.branches]} for c in d.companions
            ],
        }

    def text(self) -> str:
        d = self.data
        lines = [f"nixpkgs {short(d.new_rev)} ({d.source}):"]
        for bp in d.branches:
            g = bp.edit.group
            if bp.edit.up_to_date:
                if bp.edit.changes:
                    lines.append(f"  {bp.branch}: pin current; records its sha256 in {len(bp.edit.changes)} recipes")
                    lines.append(f"    commit: {bp.message}")
                else:
                    lines.append(f"  {bp.branch}: up to date")
                continue
            lines.append(
                f"  {bp.branch}: {short(g.pin)} -> {short(d.new_rev)}, {len(bp.edit.changes)} files, "
                f"{bp.edit.lines_changed} lines ({', '.join(g.labels)}); torch {bp.torch_old} -> {bp.torch_new}"
            )
            n_recipes = sum(1 for p in bp.edit.changes if p.startswith(".flox/pkgs/"))
            extra = ", README.md (version-matrix row)" if "README.md" in bp.edit.changes else ""
            lines.append(f"    changes: {n_recipes} recipes in .flox/pkgs/{extra}")
            if bp.sha256:
                lines.append(f"    tarball sha256: {bp.sha256}")
            lines.append(f"    commit: {bp.message}")
        for name, why in d.skipped:
            lines.append(f"  {name}: skipped ({why})")
        for bp in d.branches:
            lines.extend(f"    note: {n}" for n in bp.notes)
            lines.extend(f"    README left as written: {n}" for n in bp.edit.readme_left)
        for c in d.companions:
            lines.append(f"Companion in {c.repo_path} ({c.source}):")
            for bp in c.branches:
                g = bp.edit.group
                if bp.edit.up_to_date:
                    lines.append(f"  {bp.branch}: up to date")
                    continue
                lines.append(f"  {bp.branch}: {short(g.pin)} -> {short(c.new_rev)}, {len(bp.edit.changes)} files "
                             f"({', '.join(g.labels)}); own commit: {bp.message}")
        return "\n".join(lines)

    def apply(self, progress=None, notice=None) -> BumpResult:
        """Write the bump; ``progress`` (``config.progress.Progress``) hears of each branch."""
        from release.pins.bump import apply_bump

        if self.data.companions:
            from release.pins.companions import apply_with_companions

            outcome, companions = apply_with_companions(self.data, self.settings)
            return BumpResult(self, outcome, companions)
        return BumpResult(self, apply_bump(self.data, self.settings, progress))


def plan_bump(ctx, target: str | list[str], rev: str | None = None, **opts) -> Plan:
    """``target`` is a branch name, a list of names, or ``"all"``. Options: channel, cuda,
    from_pin, force, push, open_pr, dry_run, with_companions, repo, progress."""
    from release.pins.bump import BumpOptions, plan_bump as _plan
    from release.adapters.nixpkgs import NixpkgsClient

    settings = ctx.settings
    repo = repo_arg(ctx, opts.pop("repo", None))
    progress = opts.pop("progress", None)  # config.progress.Progress for the branch checks
    if isinstance(target, str):
        names = () if target == "all" else (target,)
    else:
        names = tuple(target)
    options = BumpOptions(branches=names, all=(target == "all"), rev=rev, **opts)
    from release.pins.tarball import record_all_hashes

    with NixpkgsClient(settings) as client:
        catalog = _catalog(ctx)
        data = _plan(repo, options, client, catalog=catalog, default_channel=settings.default_channel,
                     progress=progress)
        if options.with_companions:
            from release.pins.companions import plan_companions

            data.companions = plan_companions(data, client, ctx, settings.default_channel)
    if progress is not None and any(bp.edit.changes for bp in data.branches):
        progress.note(f"hashing the nixpkgs tarball of {short(data.new_rev)} (nix-prefetch-url)")
    record_all_hashes(data, settings)
    return Plan(data, settings)


def bump(ctx, target, rev=None, **opts) -> BumpResult:
    plan = plan_bump(ctx, target, rev, **opts)
    return plan.apply()
