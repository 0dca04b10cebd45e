"""Every branch, every pin group, its own outcome: the weekly bump (``bump-pins --all``, the
schedule's bump job, ``/bump all``).

``plan_sweep`` reads every branch of a repository as ``catalog`` does (local branches and the
remote-tracking ones with no local branch), and for each pin group of each branch asks the head
of the channel or nixpkgs branch that branch tracks (``TORCHBOT_BUMP_TRACKS``, else the default
channel). Each group gets one :class:`PinOutcome`:

- ``bumped``: the head keeps the branch's promise; the group moves to it;
- ``kept-promise``: the head would change the PyTorch the branch promises, so the group moves to
  the newest commit of the tracked history that still keeps it (nixpkgs' history of the torch
  package: the first parent of the oldest torch change since that breaks the promise);
- ``current``: nothing to do: the group is on the head already, or on the newest commit that
  keeps its promise, or newer than the head (a channel that went back: a pin never moves to an
  older commit unless ``allow_older`` gives the maintainer's reason, which goes into the commit);
- ``held``: with its reason (a CUDA set the recipes use is missing, the newest commit keeping
  the promise is refused, a fact nixpkgs would not give);
- ``skipped``: a branch the sweep leaves alone by design (no pinned recipes, vLLM-certified).

One refusal never stops the others. Nothing is written here; :mod:`release.pins.deliver`
commits and delivers the moving groups, one commit per group, chained per branch.

May import: config, release.adapters, release.recipes, release.pins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

from config.errors import CudaMissing, PromiseRefused, RefusedError, TorchbotError
from config.naming import short
from config.outcomes import ReasonKind
from config.policy import BUMP_HEADS, is_vllm_branch
from config.progress import Progress
from config.versions import Version
from release.adapters import git as gitops
from release.adapters.gitrefs import all_branches, remote_only
from release.adapters.http import Unavailable
from release.pins.bump import BranchPlan
from release.pins.guards import guard_branch, read_model
from release.pins.rules import README, RECIPES_DIR, commit_message, find_groups, plan_edit

Kind = Literal["bumped", "kept-promise", "current", "held", "skipped"]
KINDS: tuple[Kind, ...] = ("bumped", "kept-promise", "current", "held", "skipped")


@dataclass(frozen=True)
class PinOutcome:
    """What the sweep did (or will do) with one pin group of one branch."""

    repo: str  # the repository's folder name ("build-pytorch")
    branch: str
    group: str  # what the group builds: "CUDA 12.8, CPU"
    kind: Kind
    old_pin: str | None = None
    new_pin: str | None = None
    tracks: str = ""  # the channel or nixpkgs branch the branch follows
    torch_old: str | None = None
    torch_new: str | None = None
    reason: str = ""  # held/skipped: why; kept-promise: what the head has and where the bump stopped
    delivery: str = ""  # after delivery: "pull request opened: <url>", "pushed", "committed locally", ...
    reason_kind: ReasonKind = ReasonKind.NONE  # why, as a kind (the release record keeps it; views word it)
    target: str | None = None  # the revision checked: moved to, or (held) would have moved to
    delivery_error: str = ""  # held because the delivery failed: what failed
    cuda: tuple[str, ...] = ()  # the CUDA versions the group builds ("12.8",), typed for its views

    @property
    def ok(self) -> bool:
        return self.kind != "held"

    def line(self) -> str:
        where = f"{self.branch} ({self.group})" if self.group else self.branch
        if self.kind in ("bumped", "kept-promise"):
            torch = f"; torch {self.torch_old} -> {self.torch_new}" if self.torch_old != self.torch_new else ""
            head = f"{where}: {'bumped' if self.kind == 'bumped' else 'moved, keeping its promise,'} " \
                   f"{short(self.old_pin or '')} -> {short(self.new_pin or '')}{torch}"
        elif self.kind == "current" and self.reason:  # current short of the head: the reason says why
            head = f"{where}: current ({short(self.old_pin or '')})"
        elif self.kind == "current":
            head = f"{where}: already current ({short(self.old_pin or '')}, head of {self.tracks})"
        else:
            head = f"{where}: {self.kind}"
        tail = [t for t in (self.reason, self.delivery) if t]
        return head + (" — " + "; ".join(tail) if tail else "")

    def to_dict(self) -> dict:
        return {"repo": self.repo, "branch": self.branch, "group": self.group, "outcome": self.kind,
                "old_pin": self.old_pin, "new_pin": self.new_pin, "tracks": self.tracks,
                "torch": {"old": self.torch_old, "new": self.torch_new}, "reason": self.reason,
                "reason_kind": str(self.reason_kind), "target": self.target, "delivery": self.delivery}


@dataclass
class BranchWork:
    """The moving groups of one branch, in commit order (each plan's README already carries the
    edits of the groups before it)."""

    branch: str
    tip: str
    remote_only: bool  # read from <remote>/<branch>; the local branch is made when it is committed to
    tracks: str
    plans: list[BranchPlan] = field(default_factory=list)
    outcomes: list[int] = field(default_factory=list)  # indexes into SweepPlan.outcomes, one per plan


@dataclass
class SweepPlan:
    repo_path: Path
    outcomes: list[PinOutcome] = field(default_factory=list)
    work: list[BranchWork] = field(default_factory=list)
    heads: dict[str, str] = field(default_factory=dict)  # channel -> the head it had when planned
    tips: dict[str, str] = field(default_factory=dict)  # every branch looked at -> its tip when planned
    prefer_remote: bool = False  # planned on the remote-tracking tips (pr and push deliveries)
    first: bool = True  # the first configured repository (its pull requests go to TORCHBOT_GITHUB_REPO)
    allow_older: str = ""  # the maintainer's reason to let pins (and open bump PRs) move back
    together: bool = False  # named branches (release.pins.named.apply_named): all move, or none does
    docs: list = field(default_factory=list)  # with ``together``: other branches' README rows (moves.DocsEdit)

    @property
    def held(self) -> list[PinOutcome]:
        return [o for o in self.outcomes if o.kind == "held"]


@dataclass
class _Env:
    """What every group's planning shares."""

    repo_name: str
    client: object
    catalog: object
    model: object
    names: dict[str, str]
    tracks: Callable[[str], str]
    heads: dict[str, str]
    rev: str | None = None  # --rev: every branch goes to this commit instead of its tracked head
    allow_older: str = ""  # --allow-older REASON: a pin may move back to an older commit (said in the commit)
    select: Callable = lambda g: True  # --cuda / --from-pin: the groups the sweep moves

    def head(self, channel: str) -> str:
        if self.rev:
            return self.rev
        if channel not in self.heads:
            self.heads[channel] = self.client.channel_head(channel)
        return self.heads[channel]


def plan_sweep(repo_path, client, *, catalog=None, tracks: Callable[[str], str] = lambda b: "nixos-unstable",
               remote: str = "origin", force: bool = False, exclude=BUMP_HEADS, rev: str | None = None,
               cuda: str | None = None, from_pin: str | None = None, only: tuple[str, ...] = (),
               prefer_remote: bool = False, progress: Progress | None = None, counted: bool = False,
               heads: dict[str, str] | None = None, allow_older: str = "") -> SweepPlan:
    """Plan the bump of every branch of ``repo_path`` (see the module docstring); ``tracks(branch)``
    names the channel or nixpkgs branch it follows; ``rev`` replaces every head; ``cuda`` and
    ``from_pin`` keep the groups of that CUDA version or pin; ``only``: just these branches;
    ``force`` includes vLLM-certified branches (named ones too);
    ``prefer_remote``: build on ``<remote>/X`` where it exists (pull requests and pushes);
    ``counted``: the caller began ``progress`` with the total of several repositories; ``heads``:
    channel -> head, shared by the repositories of one run (each head is asked once per run);
    ``allow_older``: the maintainer's reason to let pins move to an older commit."""
    def select(g) -> bool:
        return ((not cuda or cuda in g.cuda_versions or f"CUDA {cuda}" in g.labels)
                and (not from_pin or g.pin.startswith(from_pin.strip().lower())))

    repo = gitops.open_repo(repo_path)
    names = all_branches(repo, remote, prefer_remote=prefer_remote)
    targets = sweep_targets(names, exclude, only, repo_path)
    remote_names = remote_only(repo, targets, remote)
    env = _Env(Path(repo_path).name, client, catalog, read_model(repo_path), names, tracks,
               heads if heads is not None else {}, rev, allow_older, select)
    plan = SweepPlan(Path(repo_path), heads=env.heads, prefer_remote=prefer_remote, allow_older=allow_older)
    progress = progress or Progress(verb="checked")
    if not counted:
        progress.begin(len(targets))
    for name in targets:
        progress.started(name)
        work = BranchWork(name, names[name], name in remote_names, "")
        plan.tips[name] = names[name]
        _plan_branch(repo, env, work, plan, force)
        if work.plans:
            plan.work.append(work)
        kinds = sorted({o.kind for o in plan.outcomes if o.branch == name})
        progress.finished(name, "checked", ", ".join(kinds))
    if not counted:
        progress.end()
    return plan


def sweep_targets(names, exclude=BUMP_HEADS, only=(), repo_path="") -> list[str]:
    """The branches a sweep goes through, main first: ``names`` less ``exclude`` patterns, or the
    ``only`` ones (RefusedError naming a missing one)."""
    from fnmatch import fnmatchcase

    targets = [b for b in names if not any(fnmatchcase(b, p) for p in exclude)]
    if only:  # named branches (chat's /bump B): the same outcomes, for those branches
        missing = [b for b in only if b not in names]
        if missing:
            raise RefusedError(f"No branch {', '.join(missing)} in {repo_path}. Branches: {', '.join(sorted(names))}.")
        targets = [b for b in targets if b in only]
    return sorted(targets, key=lambda b: (b != "main", b))


def _is_vllm(name: str, catalog) -> bool:
    b = catalog.branches.get(name) if catalog is not None else None
    return is_vllm_branch(name, b.vllm if b is not None else None)


def _plan_branch(repo, env: _Env, work: BranchWork, plan: SweepPlan, force: bool) -> None:
    name = work.branch

    def add(o: PinOutcome) -> int:
        plan.outcomes.append(o)
        return len(plan.outcomes) - 1

    try:
        files = gitops.read_files(repo, work.tip, RECIPES_DIR, (README,))
        recipes = {p: t for p, t in files.items() if p.startswith(RECIPES_DIR + "/") and p.endswith(".nix")}
        groups = find_groups(recipes)
    except TorchbotError as err:
        add(PinOutcome(env.repo_name, name, "", "held", reason=err.message, reason_kind=ReasonKind.UNREADABLE))
        return
    if not groups:
        add(PinOutcome(env.repo_name, name, "", "skipped", reason="no pinned recipes", reason_kind=ReasonKind.NO_PINS))
        return
    if _is_vllm(name, env.catalog) and not force:
        for g in groups:
            add(PinOutcome(env.repo_name, name, ", ".join(g.labels), "skipped", g.pin,
                           reason="vLLM-certified: pinned to vLLM's nixpkgs by design (--force includes it)",
                           reason_kind=ReasonKind.VLLM))
        return
    work.tracks = env.tracks(name)
    readme = files.get(README)
    for g in groups:
        if not env.select(g):
            add(PinOutcome(env.repo_name, name, ", ".join(g.labels), "skipped", g.pin,
                           reason="not among the pin groups asked for (--cuda/--from-pin)",
                           reason_kind=ReasonKind.NOT_SELECTED))
            continue
        bp, outcome = _plan_group(env, work, g, recipes, readme)
        i = add(outcome)
        if bp is not None:
            work.plans.append(bp)
            work.outcomes.append(i)
            readme = bp.edit.changes.get(README, readme)


def _attempt(env: _Env, work: BranchWork, g, rev: str, recipes: dict, readme):
    """The group's plan at ``rev`` and the refusal of its guards (None when they pass)."""
    edit = plan_edit(work.branch, g, rev, recipes, readme, branches=env.names)
    bp = BranchPlan(edit, work.tip)
    if edit.up_to_date:
        return bp, None
    try:
        bp.torch_old = env.client.torch_version(g.pin)
        bp.torch_new = env.client.torch_version(rev)
        bp.notes.extend(guard_branch(bp, recipes, readme, env.client, rev, env.catalog, model=env.model))
    except RefusedError as err:
        return bp, err
    bp.message = commit_message(g.pin, rev, bp.torch_new, g.cuda_attrs)
    return bp, None


def _breaks_promise(bp: BranchPlan) -> bool:
    """The guards refused because recipes building nixpkgs' torch would leave the promised line."""
    promised, new = bp.pytorch_old, bp.torch_new
    return bool(bp.native and promised and new and Version(promised).line != Version(new).line)


def _refusal_kind(err: RefusedError) -> ReasonKind:
    """A refusal's kind, by its type (never by its wording)."""
    if isinstance(err, PromiseRefused):
        return ReasonKind.BREAKS_PROMISE
    if isinstance(err, CudaMissing):
        return ReasonKind.CUDA_MISSING
    return ReasonKind.REFUSED


def _plan_group(env: _Env, work: BranchWork, g, recipes: dict, readme) -> tuple[BranchPlan | None, PinOutcome]:
    label = ", ".join(g.labels)
    base = dict(repo=env.repo_name, branch=work.branch, group=label, old_pin=g.pin, tracks=work.tracks,
                cuda=tuple(g.cuda_versions))
    head = None
    try:
        head = env.head(work.tracks)
        if not env.allow_older and head != g.pin and _older(env, head, g.pin):
            # the channel went back (a rollback): a pin never moves to an older commit unasked
            return None, PinOutcome(**base, kind="current", new_pin=g.pin, target=g.pin,
                                    reason_kind=ReasonKind.CHANNEL_BEHIND,
                                    reason=f"the pin is newer than {work.tracks}'s head {short(head)} (the channel "
                                           "went back); kept (--allow-older REASON moves it back)")
        bp, refusal = _attempt(env, work, g, head, recipes, readme)
        if refusal is None and env.allow_older and not bp.edit.up_to_date and _older(env, head, g.pin):
            bp.message += f"\n\nMoves to an older nixpkgs commit, as a maintainer asked: {env.allow_older}"
        if refusal is None:
            if bp.edit.up_to_date:
                return None, PinOutcome(**base, kind="current", new_pin=g.pin, target=g.pin)
            return bp, PinOutcome(**base, kind="bumped", new_pin=head, target=head, torch_old=bp.torch_old,
                                  torch_new=bp.torch_new, reason="; ".join(n.removeprefix(f"{work.branch}: ")
                                                                           for n in bp.notes),
                                  reason_kind=ReasonKind.PATCH_LEVEL if bp.notes else ReasonKind.NONE)
        if not _breaks_promise(bp) or env.rev:  # a revision asked for by name is that revision or nothing
            return None, PinOutcome(**base, kind="held", torch_old=bp.torch_old, torch_new=bp.torch_new,
                                    reason=refusal.message, reason_kind=_refusal_kind(refusal), target=head)
        try:
            return _keep_promise(env, work, g, recipes, readme, head, bp, base)
        except TorchbotError as err:
            return None, PinOutcome(**base, kind="held", torch_old=bp.torch_old, torch_new=bp.torch_new,
                                    reason=f"{refusal.message} (no older commit keeping it could be looked for: "
                                           f"{err.message})", reason_kind=ReasonKind.BREAKS_PROMISE, target=head)
    except Unavailable:  # nothing answers: every other group would wait the same; one line, now
        raise
    except TorchbotError as err:  # a fact nixpkgs would not give: this group is held, the others go on
        return None, PinOutcome(**base, kind="held", reason=f"could not check it: {err.message}",
                                reason_kind=ReasonKind.NIXPKGS_UNANSWERED, target=head)


def _older(env: _Env, head: str, pin: str) -> bool:
    """Whether ``head`` is older than ``pin`` (the pin is ahead of it in nixpkgs' history); a
    comparison nixpkgs will not make (commits it does not relate) is no evidence of going back."""
    try:
        return env.client.is_newer(head, pin)
    except TorchbotError:
        return False


def _keep_promise(env: _Env, work: BranchWork, g, recipes, readme, head: str, at_head: BranchPlan, base: dict):
    """The newest commit of the tracked history that keeps the promise (see the module docstring)."""
    promised = at_head.pytorch_old
    line = ".".join(promised.split(".")[:2])
    why = (f"{work.tracks} head {short(head)} has torch {at_head.torch_new}, "
           f"{work.branch} promises PyTorch {promised}")
    for change in env.client.torch_changes(head):
        parent = change["parent"]
        if parent and (parent == g.pin or not env.client.is_newer(g.pin, parent)):
            # the newest commit keeping the promise is the pin (or older): nothing to do
            return None, PinOutcome(**base, kind="current", new_pin=g.pin, target=g.pin, torch_old=at_head.torch_old,
                                    torch_new=at_head.torch_old, reason_kind=ReasonKind.PROMISE_KEPT,
                                    reason=f"{why}; the pin is the newest commit of {work.tracks} keeping {line}")
        if not parent:
            break
        version = env.client.torch_version(parent)
        if Version(version).line != Version(promised).line:
            continue  # torch was already past the promise before this change
        bp, refusal = _attempt(env, work, g, parent, recipes, readme)
        if refusal is not None:
            return None, PinOutcome(**base, kind="held", torch_old=at_head.torch_old, torch_new=version,
                                    reason=f"{why}; the newest commit keeping {line} ({short(parent)}) is "
                                           f"refused: {refusal.message}", reason_kind=_refusal_kind(refusal),
                                    target=parent)
        return bp, PinOutcome(**base, kind="kept-promise", new_pin=parent, target=parent, torch_old=bp.torch_old,
                              torch_new=bp.torch_new, reason_kind=ReasonKind.PROMISE_KEPT,
                              reason=f"{why}: moved to {short(parent)}, the newest commit keeping {line} "
                                     f"(just before {short(change['sha'])} \"{change['title'][:72]}\")")
    return None, PinOutcome(**base, kind="held", torch_old=at_head.torch_old, torch_new=at_head.torch_new,
                            target=head, reason_kind=ReasonKind.BREAKS_PROMISE,
                            reason=f"{why}; no commit of {work.tracks} newer than the pin {short(g.pin)} keeps "
                                   f"PyTorch {line}")


def record_sweep_hashes(plan: SweepPlan, settings, prefetch=None) -> None:
    """The tarball sha256 of each new pin written into its moving recipes (release.pins.tarball),
    each revision's tarball hashed once; the groups of a revision whose tarball cannot be hashed
    are held (with the other groups of their branch after them: their commits chain)."""
    from release.pins.tarball import record_all_hashes

    by_rev: dict[str, list[BranchPlan]] = {}
    for w in plan.work:
        for bp in w.plans:
            by_rev.setdefault(bp.edit.new_pin, []).append(bp)
    failed: dict[int, str] = {}
    for rev, bps in by_rev.items():
        pseudo = SimpleNamespace(new_rev=rev, branches=bps, repo_path=plan.repo_path, companions=[])
        try:
            record_all_hashes(pseudo, settings, *(() if prefetch is None else (prefetch,)))
        except TorchbotError as err:
            failed.update({id(bp): err.message for bp in bps})
    if failed:
        drop_plans(plan, failed, ReasonKind.HASH_FAILED)


def drop_plans(plan: SweepPlan, failed: dict[int, str], kind: ReasonKind = ReasonKind.REFUSED) -> None:
    """Hold the plans whose ``id()`` is in ``failed`` (with its reason), and the later groups of
    their branch (whose README edits build on them)."""
    for w in plan.work:
        cut = next((k for k, bp in enumerate(w.plans) if id(bp) in failed), None)
        if cut is None:
            continue
        why = failed[id(w.plans[cut])]
        for k in range(cut, len(w.plans)):
            i = w.outcomes[k]
            reason = why if k == cut else f"held with the group before it ({why})"
            plan.outcomes[i] = replace(plan.outcomes[i], kind="held", reason=reason,
                                       reason_kind=kind if k == cut else ReasonKind.WITH_GROUP_BEFORE)
        del w.plans[cut:], w.outcomes[cut:]
    plan.work = [w for w in plan.work if w.plans]
