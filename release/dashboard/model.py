"""The dashboard's model, built from plain data (``build(facts, now)``); pure: no git, HTTP,
database or clock of its own. ``release.dashboard.collect`` gathers the facts.

Facts (dicts and lists only)::

    {"generated": ISO, "notes": [str],
     "repositories": [{"name", "path", "kind", "github",
        "branches": [{"name", "head", "pytorch", "python", "cuda": [..], "purpose",
            "pins": [{"rev", "labels": [..], "packages": n, "date": ISO|None, "channel",
                      "channel_head": sha|None, "channel_date": ISO|None, "behind": n|None}],
            "bumps": [{"group", "kind": BumpKind, "reason_kind": ReasonKind, "reason", "when", "tracks",
                       "old_pin", "rev": the revision moved to or (held) checked, "pytorch": torch there}],
            "pr": {"number", "url", "head", "sha", "state": PrState, "closed_by", "builds_here": bool,
                   "builds": {bucket: [package]}} | None,
            "publish_failures": [{"package", "pin", "message"}],
            "decisions": [{"kind": closed-unmerged | edited | paused | recreate | merge-refused, "number",
                           "head", "by", "at": ISO, "note"}],
            "readme_drift": [str], "pairs_with": str|None, "companion_drift": [str],
            "variants": [{"package", "platform", "gpu_arch", "build": Build.state|None,
                          "at_head": bool, "published": bool}],
            "jobs": [{"id", "description", "next_run": ISO|None}]}]}]}
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime

from config.outcomes import PAIR_WORDS, BumpKind, PairWait, PrState, ReasonKind
from config.policy import BUCKETS, bucket
from release.dashboard.decisions import Decision

BUILD_STATES = BUCKETS
BUMP_STATES = ("held", "pr-open", "bumped", "current", "skipped", "unknown")  # most urgent first
_STATE_OF = {BumpKind.BUMPED: "bumped", BumpKind.KEPT_PROMISE: "bumped", BumpKind.CURRENT: "current",
             BumpKind.HELD: "held", BumpKind.SKIPPED: "skipped"}


def _date(value: str | None) -> datetime | None:
    if not value:
        return None
    d = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=None)


def _days(later: datetime | None, earlier: datetime | None) -> int | None:
    if later is None or earlier is None:
        return None
    if (later.tzinfo is None) != (earlier.tzinfo is None):
        later, earlier = later.replace(tzinfo=None), earlier.replace(tzinfo=None)
    return max(0, (later - earlier).days)


@dataclass
class Pin:
    rev: str
    labels: list[str]
    packages: int
    date: str | None
    age_days: int | None
    channel: str
    channel_head: str | None
    behind_commits: int | None
    behind_days: int | None

    @property
    def current(self) -> bool:
        return self.channel_head is not None and self.channel_head == self.rev


@dataclass
class PullRequest:
    number: int | None
    url: str | None
    head: str | None
    builds: dict[str, int] = field(default_factory=dict)  # at its head commit: bucket -> count
    sha: str | None = None  # the head commit
    state: str = PrState.OPEN  # open | merged | closed | conflict
    closed_by: str | None = None
    failed_packages: list[str] = field(default_factory=list)  # failed at its head
    builds_here: bool = True  # the GitHub workflow builds this repository's pull requests
    waits_for: str = ""  # PairWait: a build-torchvision PR held for its build-pytorch pair, and why
    pair_pr: int | None = None  # that pair's number

    @property
    def open(self) -> bool:
        return self.state in (PrState.OPEN, PrState.CONFLICT)

    def summary(self) -> str:
        if self.state == PrState.MERGED:
            return "merged"
        if self.state == PrState.CLOSED:
            return "closed without merging" + (f" by {self.closed_by}" if self.closed_by else "")
        total = sum(self.builds.values())
        lead = "merge conflict; " if self.state == PrState.CONFLICT else ""
        if self.waits_for:
            lead += f"waits for build-pytorch's #{self.pair_pr} ({PAIR_WORDS.get(self.waits_for, self.waits_for)}); "
        if not total:
            return lead + ("no builds yet" if self.builds_here else "not built by the GitHub workflow")
        return lead + f"{self.builds.get('built', 0)}/{total} built, {self.builds.get('failed', 0)} failed"


@dataclass
class Bump:
    group: str  # the pin group ("" for a branch with one pin)
    state: str  # BUMP_STATES
    reason: str = ""
    when: str | None = None
    rev: str | None = None  # the revision a held bump would move to
    pytorch: str | None = None  # the PyTorch that revision holds (held: what the promise refuses)
    kind: str | None = None  # the outcome as the bump recorded it (bumped, kept-promise, current, held, skipped)
    reason_kind: str = ""  # config.outcomes.ReasonKind
    old_pin: str | None = None
    cuda: list[str] = field(default_factory=list)  # the group's CUDA versions


@dataclass
class PlatformBuilds:
    platform: str
    built: int = 0
    failed: int = 0
    running: int = 0
    not_built: int = 0

    @property
    def total(self) -> int:
        return self.built + self.failed + self.running + self.not_built

    def to_dict(self) -> dict:
        return {**asdict(self), "total": self.total}


@dataclass
class Action:
    """What a person can ask for on a row: the chat command that does it (as the CLI would)."""

    kind: str  # approve-bump | retry-builds | rebase-pr | recreate-pr
    repository: str
    branch: str
    label: str
    command: str  # "bump main <rev> --pytorch 2.9.1", "build main pkg-a pkg-b", "bump-pause main --recreate H"
    key: str  # this action on this row and its target (the revision or head it acts on): claimed once
    path: str = ""  # the repository's path (the action runs there)


@dataclass
class Need:
    repository: str
    branch: str
    kind: str  # held | failed | pr-failed | conflict | pr-closed | pr-stuck | publish-failed | readme-drift | ...
    text: str
    action: Action | None = None


@dataclass
class Job:
    id: str
    description: str
    next_run: str | None


@dataclass
class BranchView:
    repository: str
    name: str
    head: str
    pytorch: str | None
    python: str | None
    cuda: list[str]
    pins: list[Pin]
    bumps: list[Bump]
    pr: PullRequest | None
    readme_drift: list[str]
    pairs_with: str | None
    companion_drift: list[str]
    platforms: list[PlatformBuilds]
    grid: dict[str, dict[str, int]]  # column (sm90, cpu, darwin) -> {state: count}
    published: int
    variants: int
    failed_packages: list[str]
    jobs: list[Job]
    actions: list[Action] = field(default_factory=list)
    publish_failures: list[dict] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)  # people's decisions that still hold

    @property
    def bump_state(self) -> str:
        states = [b.state for b in self.bumps] or ["unknown"]
        return min(states, key=BUMP_STATES.index)

    @property
    def builds(self) -> dict[str, int]:
        return {"built": sum(p.built for p in self.platforms), "failed": sum(p.failed for p in self.platforms),
                "running": sum(p.running for p in self.platforms),
                "not built": sum(p.not_built for p in self.platforms), "total": self.variants}

    @property
    def oldest_pin_days(self) -> int | None:
        ages = [p.age_days for p in self.pins if p.age_days is not None]
        return max(ages) if ages else None

    @property
    def drift(self) -> bool:
        return bool(self.readme_drift or self.companion_drift)

    @property
    def next_bump(self) -> str | None:
        return next((j.next_run for j in self.jobs if j.id == "bump" or j.id.startswith("bump:")), None)

    def to_dict(self) -> dict:
        return {
            "repository": self.repository, "branch": self.name, "head": self.head, "pytorch": self.pytorch,
            "python": self.python, "cuda": self.cuda,
            "pins": [{**asdict(p), "current": p.current} for p in self.pins],
            "bump": {"state": self.bump_state, "groups": [asdict(b) for b in self.bumps],
                     "pull_request": ({**asdict(self.pr), "summary": self.pr.summary()} if self.pr else None)},
            "drift": {"readme": self.readme_drift, "companion": self.companion_drift, "pairs_with": self.pairs_with},
            "builds": {**self.builds, "platforms": [p.to_dict() for p in self.platforms], "grid": self.grid,
                       "failed_packages": self.failed_packages},
            "published": {"packages": self.published, "of": self.variants,
                          "failed": [dict(f) for f in self.publish_failures]},
            "jobs": [asdict(j) for j in self.jobs],
            "actions": [asdict(a) for a in self.actions],
            "decisions": [{**asdict(x), "text": x.text()} for x in self.decisions],
        }


@dataclass
class RepoView:
    name: str
    path: str
    kind: str
    github: str | None
    branches: list[BranchView]

    def to_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "kind": self.kind, "github": self.github,
                "branches": [b.to_dict() for b in self.branches]}


@dataclass
class Dashboard:
    generated: str
    repositories: list[RepoView]
    needs: list[Need]
    notes: list[str] = field(default_factory=list)

    @property
    def branches(self) -> list[BranchView]:
        return [b for r in self.repositories for b in r.branches]

    @property
    def columns(self) -> list[str]:
        """The grid's columns: GPU architectures by number, then cpu and darwin."""
        cols = {c for b in self.branches for c in b.grid}
        gpus = sorted((c for c in cols if c.startswith("sm")), key=lambda c: int(re.sub(r"\D", "", c) or 0))
        return gpus + [c for c in ("cpu", "darwin") if c in cols]

    def to_dict(self) -> dict:
        return {"ok": True, "generated": self.generated, "repositories": [r.to_dict() for r in self.repositories],
                "needs_a_human": [{**{k: v for k, v in asdict(n).items() if k != "action"},
                                   "action": asdict(n.action) if n.action else None} for n in self.needs],
                "notes": self.notes}


# ---------------------------------------------------------------------------------------------
# Building


def cell_state(counts: dict[str, int]) -> str:
    """A grid cell's colour: failed before running before not built before built."""
    for state in ("failed", "running", "not built", "built"):
        if counts.get(state):
            return state
    return "not built"


def _pins(raw: list[dict], now: datetime) -> list[Pin]:
    out = []
    for p in raw:
        date, head_date = _date(p.get("date")), _date(p.get("channel_date"))
        out.append(Pin(rev=p["rev"], labels=list(p.get("labels") or []), packages=int(p.get("packages") or 0),
                       date=p.get("date"), age_days=_days(now, date), channel=p.get("channel") or "",
                       channel_head=p.get("channel_head"), behind_commits=p.get("behind"),
                       behind_days=_days(head_date, date)))
    return out


def _bumps(raw: list[dict], pins: list[Pin], scheduled: bool = True) -> list[Bump]:
    out = []
    for b in raw:
        kind = b.get("kind")
        state = b.get("state") or _STATE_OF.get(kind, "unknown")
        out.append(Bump(group=b.get("group") or "", state=state, reason=b.get("reason") or "", when=b.get("when"),
                        rev=b.get("rev"), pytorch=b.get("pytorch"), kind=kind, reason_kind=b.get("reason_kind") or "",
                        old_pin=b.get("old_pin"), cuda=list(b.get("cuda") or [])))
    if not out:  # nothing recorded: what the pins say against their channel
        for p in pins:
            state = "current" if p.current else "unknown"
            why = "" if p.current else ("not scheduled: bumped by hand or with its companion" if not scheduled
                                        else "not run yet" if p.channel_head else "channel head unknown")
            out.append(Bump(group=", ".join(p.labels) if len(pins) > 1 else "", state=state, reason=why))
    return out


def _builds(variants: list[dict]) -> tuple[list[PlatformBuilds], dict[str, dict[str, int]], list[str], int]:
    platforms: dict[str, PlatformBuilds] = {}
    grid: dict[str, dict[str, int]] = {}
    failed, published = [], 0
    for v in variants:
        state = bucket(v.get("build")) if v.get("at_head") else "not built"
        pb = platforms.setdefault(v["platform"], PlatformBuilds(v["platform"]))
        attr = state.replace(" ", "_")
        setattr(pb, attr, getattr(pb, attr) + 1)
        column = v.get("gpu_arch") or ("darwin" if "darwin" in v["platform"] else "cpu")
        cell = grid.setdefault(column, {})
        cell[state] = cell.get(state, 0) + 1
        if state == "failed":
            failed.append(v["package"])
        published += bool(v.get("published"))
    return sorted(platforms.values(), key=lambda p: p.platform), grid, failed, published


def _actions(repo: str, b: BranchView) -> list[Action]:
    out = []
    for bump in b.bumps:
        if bump.state != "held":
            continue
        words = ["bump", b.name]
        if bump.rev:
            words.append(bump.rev)
        if bump.pytorch:
            words += ["--pytorch", bump.pytorch]
        what = f"PyTorch {bump.pytorch}" if bump.pytorch else "the channel head"
        group = f" ({bump.group})" if bump.group else ""
        if len(bump.cuda) == 1 and len(b.pins) > 1:  # one group of several: named by its CUDA version
            words += ["--cuda", bump.cuda[0]]
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", bump.group).strip("-") or "-"
        out.append(Action("approve-bump", repo, b.name, f"Approve the held bump of {b.name}{group} to {what}",
                          " ".join(words), f"approve-bump:{b.name}:{slug}:{(bump.rev or b.head)[:12]}"))
    if b.failed_packages:
        out.append(Action("retry-builds", repo, b.name,
                          f"Retry {len(b.failed_packages)} failed build(s) of {b.name} at {b.head[:7]}",
                          " ".join(["build", b.name, *b.failed_packages]), f"retry-builds:{b.name}:{b.head[:12]}"))
    for d in b.decisions:
        if d.kind == "closed-unmerged" and d.head:
            out.append(Action("recreate-pr", repo, b.name, f"Recreate closed bump PR #{d.number} of {b.name}",
                              f"bump-pause {b.name} --recreate {d.head}",
                              f"recreate-pr:{b.name}:{d.number}:{d.head}"))
    if b.pr is not None and b.pr.open and not any(d.kind == "edited" for d in b.decisions):
        out.append(Action("rebase-pr", repo, b.name, f"Rebase bump PR #{b.pr.number} of {b.name}",
                          f"bump {b.name}", f"rebase-pr:{b.name}:{b.pr.number}:{b.head[:12]}"))
    return out


def _needs(b: BranchView) -> list[Need]:
    out = []
    by_kind = {a.kind: a for a in b.actions}
    approvals = iter(a for a in b.actions if a.kind == "approve-bump")  # one per held group, in order
    for bump in b.bumps:
        if bump.state == "held":
            group = f" ({bump.group})" if bump.group else ""
            out.append(Need(b.repository, b.name, "held", f"bump held{group}: {bump.reason or 'no reason recorded'}",
                            next(approvals, None)))
    if b.failed_packages:
        shown = ", ".join(b.failed_packages[:3]) + (" …" if len(b.failed_packages) > 3 else "")
        out.append(Need(b.repository, b.name, "failed", f"{len(b.failed_packages)} failed build(s): {shown}",
                        by_kind.get("retry-builds")))
    pr = b.pr
    if pr is not None and pr.open and pr.failed_packages:
        shown = ", ".join(pr.failed_packages[:3]) + (" …" if len(pr.failed_packages) > 3 else "")
        out.append(Need(b.repository, b.name, "pr-failed",
                        f"PR #{pr.number}: {len(pr.failed_packages)} build(s) failed at its head "
                        f"{(pr.sha or '')[:7]}: {shown}"))
    if pr is not None and pr.state == PrState.CONFLICT:
        out.append(Need(b.repository, b.name, "conflict", f"PR #{pr.number} has a merge conflict with {b.name}",
                        by_kind.get("rebase-pr")))
    recreate = {a.key.split(":")[2]: a for a in b.actions if a.kind == "recreate-pr"}
    closed = {d.number: d for d in b.decisions if d.kind == "closed-unmerged"}
    if pr is not None and pr.state == PrState.CLOSED and pr.number not in closed:
        who = f" by {pr.closed_by}" if pr.closed_by else ""
        out.append(Need(b.repository, b.name, "pr-closed",
                        f"PR #{pr.number} was closed{who} without merging: {b.name} keeps its old pin"))
    for d in b.decisions:
        if d.kind == "closed-unmerged":
            out.append(Need(b.repository, b.name, "pr-closed", f"{d.text()}; {b.name} keeps its old pin",
                            recreate.get(str(d.number))))
        elif d.kind in ("edited", "merge-refused"):
            out.append(Need(b.repository, b.name, d.kind, d.text()))
    if pr is not None and pr.open and not pr.builds_here and not pr.builds:
        out.append(Need(b.repository, b.name, "pr-stuck",
                        f"PR #{pr.number}: nothing builds this repository's pull requests, so automerge never "
                        "merges it; review and merge it by hand"))
    if pr is not None and pr.open and pr.waits_for in (PairWait.FAILED, PairWait.CLOSED, PairWait.NOT_MERGED):
        out.append(Need(b.repository, b.name, "pair-waits",
                        f"PR #{pr.number} waits for build-pytorch's #{pr.pair_pr}, which "
                        f"{PAIR_WORDS[PairWait(pr.waits_for)]}: it merges only with its pair"))
    if b.publish_failures:
        names = ", ".join(f["package"] for f in b.publish_failures[:3]) + (
            " …" if len(b.publish_failures) > 3 else "")
        out.append(Need(b.repository, b.name, "publish-failed",
                        f"{len(b.publish_failures)} publish(es) failed: {names}"))
    if b.readme_drift:
        out.append(Need(b.repository, b.name, "readme-drift",
                        f"README drift: {len(b.readme_drift)} stale row(s) (`torchbot release docs --write`)"))
    if b.companion_drift:
        out.append(Need(b.repository, b.name, "companion-drift", "companion drift: " + "; ".join(b.companion_drift)))
    return out


def _decisions(raw: list[dict], pr: PullRequest | None) -> list[Decision]:
    """The decisions that still hold: a closed PR's target not asked for again (and not superseded
    by a newer PR), an edited or refused PR while it is the branch's open one (refused at its
    current head), a pause."""
    recreated = {d.get("head") for d in raw if d.get("kind") == "recreate"}
    out = []
    for d in raw:
        x = Decision(d["kind"], d.get("number"), d.get("head"), d.get("by"), d.get("at"), d.get("note") or "")
        if x.kind == "closed-unmerged":
            live = x.head not in recreated and (pr is None or pr.number == x.number)
        elif x.kind == "edited":
            live = pr is not None and pr.open and pr.number == x.number
        elif x.kind == "merge-refused":
            live = pr is not None and pr.open and pr.number == x.number and (pr.sha or x.head) == x.head
        else:
            live = x.kind == "paused"
        if live:
            out.append(x)
    return out


def _pull(pr: dict) -> PullRequest:
    builds = pr.get("builds") or {}
    counts = {k: (len(v) if isinstance(v, list) else int(v)) for k, v in builds.items()}
    failed = list(builds.get("failed") or []) if isinstance(builds.get("failed"), list) else []
    return PullRequest(pr.get("number"), pr.get("url"), pr.get("head"), counts, sha=pr.get("sha"),
                       state=pr.get("state") or PrState.OPEN, closed_by=pr.get("closed_by"), failed_packages=failed,
                       builds_here=pr.get("builds_here", True), waits_for=pr.get("waits_for") or "",
                       pair_pr=pr.get("pair_pr"))


def branch_view(repo: str, raw: dict, now: datetime) -> BranchView:
    pins = _pins(raw.get("pins") or [], now)
    platforms, grid, failed, published = _builds(raw.get("variants") or [])
    pr = raw.get("pr")
    b = BranchView(
        repository=repo, name=raw["name"], head=raw.get("head") or "", pytorch=raw.get("pytorch"),
        python=raw.get("python"), cuda=list(raw.get("cuda") or []), pins=pins,
        bumps=_bumps(raw.get("bumps") or [], pins,
                     any(j["id"] == "bump" or j["id"].startswith("bump:") for j in raw.get("jobs") or [])),
        pr=_pull(pr) if pr else None,
        readme_drift=list(raw.get("readme_drift") or []), pairs_with=raw.get("pairs_with"),
        companion_drift=list(raw.get("companion_drift") or []), platforms=platforms, grid=grid,
        published=published, variants=len(raw.get("variants") or []), failed_packages=failed,
        jobs=[Job(j["id"], j.get("description", ""), j.get("next_run")) for j in raw.get("jobs") or []],
        publish_failures=list(raw.get("publish_failures") or []),
    )
    b.decisions = _decisions(list(raw.get("decisions") or []), b.pr)
    left_alone = str(ReasonKind.LEFT_ALONE)  # a person's open PR (edited): the branch's bump is that PR
    if b.pr is not None and b.pr.open and all(x.state in ("bumped", "unknown") or x.reason_kind == left_alone
                                              for x in b.bumps):
        for x in b.bumps:
            x.state = "pr-open"
    b.actions = _actions(repo, b)
    return b


def build(facts: dict, now: datetime) -> Dashboard:
    repos, needs = [], []
    for r in facts.get("repositories") or []:
        branches = [branch_view(r["name"], raw, now) for raw in r.get("branches") or []]
        for b in branches:
            for a in b.actions:
                a.path = r.get("path", "")
        repos.append(RepoView(r["name"], r.get("path", ""), r.get("kind", ""), r.get("github"), branches))
        for b in branches:
            needs.extend(_needs(b))
    order = {"held": 0, "failed": 1, "pr-failed": 1, "conflict": 1, "merge-refused": 1, "publish-failed": 1,
             "edited": 2, "pr-closed": 2,
             "pr-stuck": 2, "companion-drift": 3, "readme-drift": 4}
    needs.sort(key=lambda n: order.get(n.kind, 9))
    return Dashboard(facts.get("generated") or now.isoformat(timespec="seconds"), repos, needs,
                     list(facts.get("notes") or []))
