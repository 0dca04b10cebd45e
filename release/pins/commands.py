"""Command layer for pin bumps, shared by the CLI and Slack.

``plan_bump(ctx, target, rev, **opts)`` returns a :class:`Plan` (``to_dict``/``text`` say what
will change; nothing is written) whose ``apply()`` performs it and returns a
:class:`BumpResult`. Slack shows ``plan.text()`` with Confirm/Cancel and calls ``apply()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config.errors import TorchbotError
from release.context import repo_arg
from release.pins.rules import short


def _catalog(ctx):
    try:
        return ctx.catalog
    except TorchbotError:  # a repository the reader cannot read still has branches to bump
        from config.catalog_data import load_catalog

        return load_catalog()


def _agree(old: str | None, new: str) -> bool:
    """Two spellings of one version ("2.10" and "2.10.0")."""
    if not old:
        return False
    a, b = old.split("."), new.split(".")
    n = min(len(a), len(b))
    return a[:n] == b[:n] and all(x == "0" for x in (a[n:] + b[n:]))


class BumpResult:
    def __init__(self, plan: Plan, outcome, companions=()):
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
        for cd, co in zip(d.get("companions", []), self.companions, strict=False):
            cd.update({"commits": co.commits, "pushed": co.pushed, "notes": co.notes})
        return d

    def text(self) -> str:
        data, o = self.plan.data, self.outcome
        if data.options.dry_run:
            return self.plan.text() + "\nDry run: nothing was written."
        lines = []
        if self.plan.headline() != f"nixpkgs {short(data.new_rev)} ({data.source}):":
            lines.append(self.plan.headline())
        for bp in data.branches:
            if bp.branch in o.commits:
                lines.append(f"{bp.branch}: {short(o.commits[bp.branch])} {bp.message}")
            elif bp.edit.up_to_date:
                lines.append(f"{bp.branch}: up to date ({short(data.new_rev)})")
        for name, why in data.skipped:
            lines.append(f"{name}: skipped ({why})")
        if o.pushed:
            lines.append(f"Pushed to {self.plan.settings.repo_remote}: {', '.join(o.pushed)}")
        for e in data.docs:
            if e.branch in o.commits:
                lines.append(f"{e.branch}: {short(o.commits[e.branch])} {e.message}")
        for pr in o.pull_requests:
            lines.append(f"Pull request for {pr['branch']}: {pr.get('url') or '#' + str(pr.get('number'))}")
        lines.extend(o.notes)
        for cdata, co in zip(data.companions, self.companions, strict=False):
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
            "headline": self.headline(),
            "branches": [bp.to_dict() for bp in d.branches],
            "docs": [{"branch": e.branch, "message": e.message, "files_changed": sorted(e.changes)} for e in d.docs],
            "skipped": [{"branch": b, "reason": r} for b, r in d.skipped],
            "companions": [
                {"repo": str(c.repo_path), "branches": [bp.to_dict() for bp in c.branches]} for c in d.companions
            ],
        }

    def headline(self) -> str:
        """The plan's first line: the nixpkgs revision, and every PyTorch version change it brings."""
        d = self.data
        changes = []
        for bp in d.branches:
            old, new = bp.pytorch_old or bp.torch_old, bp.pytorch_new
            if new and not _agree(old, new):
                how = f"--torch-src {d.options.torch_src.split(',')[0]}" if d.options.torch_src else f"--pytorch {new}"
                changes.append(f"{bp.branch} PyTorch {old or 'unknown'} -> {new} ({how})")
        head = f"nixpkgs {short(d.new_rev)} ({d.source})"
        return f"{head}; {'; '.join(changes)}:" if changes else f"{head}:"

    def text(self) -> str:
        d = self.data
        lines = [self.headline()]
        for bp in d.branches:
            g = bp.edit.group
            if bp.edit.up_to_date:
                if bp.pytorch_new:
                    lines.append(f"  {bp.branch}: pin current ({short(g.pin)}); {len(bp.edit.changes)} files, "
                                 f"{bp.edit.lines_changed} lines: PyTorch {bp.pytorch_new} from source")
                    lines.append(f"    commit: {bp.message}")
                elif bp.edit.changes:
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
        for e in d.docs:
            lines.append(f"  {e.branch}: README rows about the moved branch; own commit: {e.message}")
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

    def changes(self):
        """Every file the bump would write, with its text now and after (``config.diffs``)."""
        from config.diffs import planned
        from release.adapters.git import read_paths

        d = self.data
        edits = [(bp.branch, bp.tip, bp.edit.changes) for bp in d.branches if bp.edit.changes]
        edits += [(e.branch, e.tip, e.changes) for e in d.docs]
        out = planned(edits, lambda names: read_paths(d.repo_path, names))
        for c in d.companions:
            out += planned([(f"{bp.branch} ({c.repo_path.name})", bp.tip, bp.edit.changes)
                            for bp in c.branches if bp.edit.changes], lambda names, c=c: read_paths(c.repo_path, names))
        return out

    def diff(self) -> str:
        """The unified diff of what the bump would write (nix-update shows it first)."""
        from config.diffs import unified

        return unified(self.changes())

    def apply(self, progress=None, notice=None) -> BumpResult:
        """Write the bump; ``progress`` (``config.progress.Progress``) hears of each branch."""
        from release.pins.named import apply_named  # plan -> deliver(mode); it writes the release record

        if self.data.companions:
            from release.pins.companions import apply_with_companions

            outcome, companions = apply_with_companions(self.data, self.settings)
            return BumpResult(self, outcome, companions)
        return BumpResult(self, apply_named(self.data, self.settings, progress))


def plan_bump(ctx, target: str | list[str], rev: str | None = None, **opts) -> Plan:
    """``target`` is a branch name, a list of names, or ``"all"``. Options: channel, cuda,
    from_pin, force, push, open_pr, dry_run, with_companions, pytorch, torch_src, repo, progress."""
    from release.adapters.nixpkgs import NixpkgsClient
    from release.pins.bump import BumpOptions
    from release.pins.bump import plan_bump as _plan

    settings = ctx.settings
    delivery = opts.pop("delivery", None)  # pr | push | local: the front end's choice (None: its flags)
    if not opts.get("allow_older"):
        opts.pop("allow_older", None)
    if target == "all":
        return plan_every_branch(ctx, delivery=delivery, rev=rev, **opts)
    if (delivery or opts.get("allow_older")) and not (opts.get("pytorch") or opts.get("torch_src")
                                                      or opts.get("with_companions")):
        # chat's /bump B: the same outcomes and delivery as the schedule, for the named branches
        names = (target,) if isinstance(target, str) else tuple(target)
        return plan_every_branch(ctx, delivery=delivery, rev=rev, only=names, **opts)
    if delivery and not opts.get("push") and not opts.get("open_pr") and not opts.get("dry_run"):
        mode, _ = delivery_mode(settings, delivery=delivery)  # a move from chat: a PR or a push too
        opts["push"], opts["open_pr"] = mode == "push", mode == "pr"
    repo = repo_arg(ctx, opts.pop("repo", None))
    progress = opts.pop("progress", None)  # config.progress.Progress for the branch checks
    names = (() if target == "all" else (target,)) if isinstance(target, str) else tuple(target)
    options = BumpOptions(branches=names, all=(target == "all"), rev=rev, **opts)
    from release.pins.tarball import record_all_hashes

    with NixpkgsClient(settings) as client:
        catalog = _catalog(ctx)
        data = _plan(repo, options, client, catalog=catalog, default_channel=settings.default_channel,
                     docs_skip=tuple(settings.docs_skip_branches), progress=progress, remote=settings.repo_remote)
        if options.with_companions:
            from release.pins.companions import plan_companions

            data.companions = plan_companions(data, client, ctx, settings.default_channel)
    if progress is not None and any(bp.edit.changes for bp in data.branches):
        progress.note(f"hashing the nixpkgs tarball of {short(data.new_rev)} (nix-prefetch-url)")
    record_all_hashes(data, settings)
    return Plan(data, settings)


_SWEEP_REFUSES = {"pytorch": "--pytorch", "torch_src": "--torch-src"}


def delivery_mode(settings, *, delivery: str | None = None, push: bool = False, open_pr: bool = False
                  ) -> tuple[str, str]:
    """(mode, why it is local) from an explicit choice, the --push/--open-pr flags, or the setting."""
    from config.errors import ValidationError

    if push and open_pr:
        raise ValidationError("--open-pr already pushes (to bump/<branch>-<rev>); do not combine it with --push.")
    if delivery == "auto":  # a front end that delivers as the schedule does (chat)
        delivery = None
    if delivery not in (None, "pr", "push", "local"):
        raise ValidationError(f"--delivery '{delivery}' is not pr, push or local.")
    github = settings.github_token is not None and bool(settings.github_repo)
    mode = delivery or ("push" if push else "pr" if open_pr else settings.bump_delivery or
                        ("pr" if github else "local"))
    why = "" if mode != "local" else ("TORCHBOT_BUMP_DELIVERY=local" if settings.bump_delivery == "local"
                                      else "asked for" if delivery == "local"
                                      else "no TORCHBOT_GITHUB_TOKEN/TORCHBOT_GITHUB_REPO, so the default is local")
    if mode == "pr" and not github:
        raise ValidationError("Bump delivery 'pr' needs TORCHBOT_GITHUB_TOKEN and TORCHBOT_GITHUB_REPO; set them, "
                              "or TORCHBOT_BUMP_DELIVERY=push or local.")
    return mode, why


def plan_every_branch(ctx, *, delivery=None, rev=None, repo=None, progress=None, only=(), **opts):
    """Every branch of every configured repository (or of ``repo``), every pin group, its own
    outcome (release.pins.sweep); ``rev``/``channel`` replace each branch's tracked head,
    ``cuda``/``from_pin`` narrow the pin groups. Returns a release.pins.weekly.SweepBump."""
    from config.errors import ValidationError
    from config.policy import tracked
    from release.adapters.nixpkgs import NixpkgsClient
    from release.pins.rules import validate_rev
    from release.pins.sweep import plan_sweep, record_sweep_hashes
    from release.pins.weekly import SweepBump

    for key, flag in _SWEEP_REFUSES.items():
        if opts.get(key):
            raise ValidationError(f"{flag} says what the branches given with --branch build; not with --all.")
    if rev and opts.get("channel"):
        raise ValidationError("Give either --rev or --channel, not both.")
    _check_selectors(opts.get("cuda"), opts.get("from_pin"))
    s = ctx.settings
    mode, why = delivery_mode(s, delivery=delivery, push=opts.get("push", False), open_pr=opts.get("open_pr", False))
    fixed = validate_rev(rev) if rev else None
    channel = opts.get("channel")
    # named branches are of the repository release commands work on (the first); all: every repository
    paths = [repo_arg(ctx, repo)] if repo or only else (s.repositories() or [repo_arg(ctx, None)])
    plans = []
    remote_first = mode in ("pr", "push")  # a PR or a push builds on what the remote has: fetch it first
    if remote_first:
        from release.adapters.git import open_repo
        from release.adapters.gitrefs import fetch

        for path in paths:
            why = fetch(open_repo(path), s.repo_remote)
            if why and progress is not None:
                progress.note(f"{path.name}: could not fetch {s.repo_remote} ({why}); using the refs it has")
    counted = progress is not None and len(paths) > 1  # one count over every repository
    if counted:
        from release.adapters.git import open_repo
        from release.adapters.gitrefs import all_branches
        from release.pins.sweep import sweep_targets

        progress.begin(sum(len(sweep_targets(all_branches(open_repo(p), s.repo_remote, prefer_remote=remote_first),
                                             only=only, repo_path=p)) for p in paths))
    heads: dict[str, str] = {}  # channel -> head: asked once per run, shared by every repository
    with NixpkgsClient(s) as client:
        if fixed:
            client.resolve(fixed)
        catalog = _catalog(ctx)
        for path in paths:
            plans.append(plan_sweep(path, client, catalog=catalog, remote=s.repo_remote, force=opts.get("force", False),
                                    tracks=(lambda b: channel) if channel else tracked(s), rev=fixed,
                                    cuda=opts.get("cuda"), from_pin=opts.get("from_pin"),
                                    only=only, prefer_remote=remote_first, progress=progress, counted=counted,
                                    heads=heads, allow_older=opts.get("allow_older") or ""))
    if counted:
        progress.end()
    if only and (opts.get("cuda") or opts.get("from_pin")):
        _refuse_unmatched(plans, only, opts.get("cuda"), opts.get("from_pin"))
    revs = sorted({bp.edit.new_pin for p in plans for w in p.work for bp in w.plans})
    if progress is not None and revs:
        progress.note(f"hashing the nixpkgs tarball of {', '.join(r[:7] for r in revs)} (nix-prefetch-url)")
    others = [Path(x).resolve() for x in s.repositories()[1:]]
    for p in plans:
        p.first = Path(p.repo_path).resolve() not in others  # a companion's PRs go to its own GitHub repository
        record_sweep_hashes(p, s)
    return SweepBump(plans, s, mode, dry_run=opts.get("dry_run", False), why_local=why, only=only,
                     known_holds=_known_holds(ctx))


def _known_holds(ctx) -> frozenset:
    """(repo path, branch, group, reason) of every group the last recorded bump held; empty when
    the state DB cannot say (then every hold counts as new)."""
    from sqlalchemy.exc import SQLAlchemyError

    from config.errors import TorchbotError
    from release.state import record, state_for

    try:
        rows = record.rows(state_for(ctx))
    except (TorchbotError, SQLAlchemyError):  # no state DB: nothing known
        return frozenset()
    return frozenset((r.repo, r.branch, r.grp, r.reason) for r in rows if r.bump_kind == "held")


def _check_selectors(cuda: str | None, from_pin: str | None) -> None:
    """--cuda and --from-pin as the CLI's single-branch bump checks them."""
    import re

    from config.errors import ValidationError

    if from_pin and not re.fullmatch(r"[0-9a-f]{4,40}", from_pin.strip().lower()):
        raise ValidationError(f"--from-pin '{from_pin}' is not a commit id prefix (4 to 40 hex characters).")
    if cuda and not re.fullmatch(r"\d+(?:\.\d+)?", cuda.strip()):
        raise ValidationError(f"--cuda '{cuda}' is not a CUDA version (A.B, e.g. 12.8).")


def _refuse_unmatched(plans, only, cuda, from_pin) -> None:
    """A named branch none of whose pin groups --cuda/--from-pin match is refused, listing its groups."""
    from config.errors import RefusedError

    for name in only:
        mine = [o for p in plans for o in p.outcomes if o.branch == name]
        if mine and all(o.kind == "skipped" and "--cuda" in o.reason for o in mine):
            what = f"recipes for CUDA {cuda}" if cuda else f"pin starting with {from_pin}"
            groups = "; ".join(f"{(o.old_pin or '')[:7]} ({o.group})" for o in mine)
            raise RefusedError(f"Branch '{name}' has no {what}. Its pin groups: {groups}.")


def bump(ctx, target, rev=None, **opts) -> BumpResult:
    plan = plan_bump(ctx, target, rev, **opts)
    return plan.apply()


def pause_bumps(ctx, branch: str, *, resume: bool = False, reason: str = "", by: str = "", repo=None,
                recreate: str | None = None):
    """Pause (or ``resume``) the bumps of ``branch``: while paused, the weekly bump opens no pull
    request for it (release.pins.deliver). ``recreate``: a closed-unmerged PR's head branch whose
    target may be proposed again. Kept in the state DB (release.state.decisions), so every
    replica and the dashboard see it. Returns a ``config.results.MessageResult``."""
    import getpass
    from pathlib import Path

    from config.errors import ValidationError
    from config.results import MessageResult
    from release.state import decisions, state_for

    if not branch or branch.startswith("-"):
        raise ValidationError("Name the branch: release bump-pause BRANCH.")
    state = state_for(ctx)
    who = by or getpass.getuser()
    if recreate:
        closed = [d for d in decisions.decisions(state, branch=branch, kind="closed-unmerged") if d.head == recreate
                  and (repo is None or d.repo == Path(repo).name)]
        if not closed:
            from config.errors import RefusedError

            raise RefusedError(f"{branch} has no bump pull request closed unmerged with head '{recreate}' that "
                               "torchbot knows of; nothing to recreate.")
        name = closed[-1].repo
        decisions.record(state, name, branch, "recreate", head=recreate, by=who, note=reason)
        return MessageResult(f"{branch} ({name}): the closed pull request's target ({recreate}) may be proposed "
                             "again at the next bump.", data={"branch": branch, "recreate": recreate})
    name = Path(repo_arg(ctx, repo)).name
    if resume:
        n = decisions.forget(state, name, branch, "paused")
        return MessageResult(f"{branch} ({name}): bumps resumed." if n else f"{branch} ({name}) was not paused.",
                             data={"branch": branch, "paused": False})
    row = decisions.record(state, name, branch, "paused", by=who, note=reason)
    return MessageResult(f"{branch} ({name}): bumps paused by {row.by} on {row.at:%Y-%m-%d}"
                         + (f" ({row.note})" if row.note else "") + "; the weekly bump opens no pull request for it "
                         f"until `release bump-pause {branch} --resume`.", data={"branch": branch, "paused": True})
