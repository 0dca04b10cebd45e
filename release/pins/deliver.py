"""Delivering a sweep's bumps (``TORCHBOT_BUMP_DELIVERY``), each branch on its own:

- ``pr``: the branch's commits (one per moving pin group) are force-pushed to ``bump/<branch>-<rev>``
  and a pull request into the branch is opened; when a bump pull request is already open for the
  branch (an open PR into it whose head starts with ``bump/<branch>-``), its head branch is
  force-pushed and the PR's title and body are updated instead (never a second PR);
- ``push``: pushed to the branch itself (and the local branch, if any, follows);
- ``local``: committed to the local branch (made from ``<remote>/<branch>`` when the clone has
  only that); nothing leaves this machine.

A branch that moved since the plan, or whose delivery fails, is held with the reason; the
others go on. Local branches are never moved by ``pr``.

May import: config, release.adapters, release.pins.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace

from config.errors import TorchbotError
from config.naming import short
from config.outcomes import ReasonKind
from config.policy import bump_head_prefix, github_name
from config.progress import Progress
from release.adapters import git as gitops
from release.adapters.gitrefs import all_branches, make_local
from release.pins.sweep import BranchWork, SweepPlan

MODES = ("pr", "push", "local")


@dataclass
class Delivered:
    """Where one branch's bump went."""

    branch: str
    commit: str  # the last of the branch's new commits
    how: str  # "pull request opened", "pull request updated", "pushed", "committed locally"
    url: str | None = None
    head: str | None = None  # pr: the bump/ branch the pull request builds from
    number: int | None = None
    repo: str = ""  # the repository's path
    commits: list[tuple[str, str]] = field(default_factory=list)  # (sha, subject), one per moved pin group

    def to_dict(self) -> dict:
        return {"repo": self.repo, "branch": self.branch, "commit": self.commit, "how": self.how, "url": self.url,
                "head": self.head, "number": self.number,
                "commits": [{"sha": sha, "message": m} for sha, m in self.commits]}

    def describe(self) -> str:
        if self.url or self.number:
            return f"{self.how}: {self.url or '#' + str(self.number)} (head {self.head})"
        return f"{self.how} ({short(self.commit)})"


def bump_head(branch: str, work: BranchWork) -> str:
    return f"bump/{branch}-{short(work.plans[0].edit.new_pin)}"


def deliver(plan: SweepPlan, settings, mode: str, progress: Progress | None = None,
            counted: bool = False) -> list[Delivered]:
    """Commit and deliver every branch of ``plan`` (see the module docstring); outcomes of
    branches that could not be delivered become held."""
    repo = gitops.open_repo(plan.repo_path)
    progress = progress or Progress(verb="bumped")
    if not counted:  # else the caller counted every repository's branches
        progress.begin(len(plan.work))
    out: list[Delivered] = []
    gh = nix = None
    try:
        if mode == "pr" and plan.work:
            from release.adapters.github import GitHub
            from release.adapters.nixpkgs import NixpkgsClient

            gh, nix = GitHub(settings), NixpkgsClient(settings)
        for w in plan.work:
            progress.started(w.branch)
            try:
                d = _one(repo, plan, w, settings, mode, gh, nix)
            except TorchbotError as err:
                _mark(plan, w, "held", f"not delivered: {err.message}", error=err.message)
                progress.finished(w.branch, "failed", err.message)
                continue
            d.repo = str(plan.repo_path)
            out.append(d)
            _mark(plan, w, None, d.describe())
            progress.finished(w.branch, d.how, d.url or short(d.commit), url=d.url)
    finally:
        for client in (gh, nix):
            if client is not None:
                client.close()
        if not counted:
            progress.end()
    return out


def _mark(plan: SweepPlan, w: BranchWork, kind: str | None, text: str, error: str = "") -> None:
    for i in w.outcomes:
        o = plan.outcomes[i]
        if kind is None:
            plan.outcomes[i] = replace(o, delivery=text)
        else:
            plan.outcomes[i] = replace(o, kind=kind, reason="; ".join(t for t in (o.reason, text) if t),
                                       reason_kind=ReasonKind.NOT_DELIVERED, delivery_error=error)


def _one(repo, plan: SweepPlan, w: BranchWork, settings, mode: str, gh, nix) -> Delivered:
    remote = settings.repo_remote
    now = all_branches(repo, remote, prefer_remote=plan.prefer_remote).get(w.branch)
    if now != w.tip:
        raise _moved(w, now)
    sha, made = w.tip, []
    for bp in w.plans:
        sha = gitops.make_commit(repo, sha, bp.edit.changes, bp.message, settings.git_author_name,
                                 settings.git_author_email)
        made.append((sha, bp.message))
    d = _deliver(repo, plan, w, settings, mode, sha, gh, nix)
    d.commits = made if d.how != "pull request already up to date" else []
    return d


def _deliver(repo, plan: SweepPlan, w: BranchWork, settings, mode: str, sha: str, gh, nix) -> Delivered:
    remote = settings.repo_remote
    if mode == "local":
        make_local(repo, {w.branch: w.tip}, remote)  # (planned on local tips: prefer_remote is off)
        gitops.advance_branches(repo, {w.branch: (sha, w.tip)})
        return Delivered(w.branch, sha, "committed locally")
    if mode == "push":
        gitops.push(repo, remote, [f"{sha}:refs/heads/{w.branch}"])
        gitops.track_pushed(repo, remote, {w.branch: sha})
        if not w.remote_only:
            with suppress(TorchbotError):  # pushed; a local branch that cannot follow catches up at the next pull
                gitops.advance_branches(repo, {w.branch: (sha, w.tip)})
        return Delivered(w.branch, sha, "pushed")
    return _pull_request(repo, plan, w, settings, sha, gh, nix)


def _moved(w: BranchWork, now: str | None):
    from config.errors import ExternalError

    where = f"to {short(now)}" if now else "away"
    return ExternalError(f"branch '{w.branch}' moved {where} since the plan was made; nothing was changed for it")


def github_repo(repo, settings, first: bool) -> str:
    """``owner/name`` of a repository's pull requests: TORCHBOT_GITHUB_REPO for the first configured
    repository, else what its remote's URL names on github.com."""
    url = ""
    if not first:
        try:
            url = repo.git.remote("get-url", settings.repo_remote)
        except Exception:  # noqa: BLE001  no such remote: said below
            url = ""
    name = github_name(settings, first=first, remote_url=url)
    if first:
        return name
    if not name:
        from config.errors import RefusedError

        raise RefusedError(f"no GitHub repository is known for {Path(repo.working_tree_dir or repo.git_dir).name} "
                           f"(its remote '{settings.repo_remote}' is not on github.com), so no pull request can be "
                           "opened; deliver it with TORCHBOT_BUMP_DELIVERY=push or local")
    return name


def _pull_request(repo, plan: SweepPlan, w: BranchWork, settings, sha: str, gh, nix) -> Delivered:
    from release.pins.bump import pr_body

    prefix = bump_head_prefix(w.branch)
    where = github_repo(repo, settings, plan.first)
    existing = [p for p in gh.open_pulls(base=w.branch, repo=where) if p["head"].startswith(prefix)]
    head = existing[0]["head"] if existing else bump_head(w.branch, w)
    if existing and _same_tree(repo, existing[0].get("sha"), sha):
        pr = existing[0]
        return Delivered(w.branch, pr["sha"], "pull request already up to date", pr.get("url"), head, pr["number"])
    gitops.push(repo, settings.repo_remote, [f"+{sha}:refs/heads/{head}"])
    title, body = _title(w), _body(plan, w, settings, nix, head, pr_body)
    if existing:
        pr = gh.update_pr(existing[0]["number"], title=title, body=body, repo=where)
        return Delivered(w.branch, sha, "pull request updated", pr.get("url"), head, pr.get("number"))
    pr = gh.open_pr(head=head, base=w.branch, title=title, body=body, repo=where)
    return Delivered(w.branch, sha, "pull request opened", pr.get("url"), head, pr.get("number"))


def _same_tree(repo, old: str | None, new: str) -> bool:
    """Whether commit ``old`` (when this clone has it) holds exactly the files of ``new``."""
    if not old:
        return False
    try:
        return repo.git.rev_parse(f"{old}^{{tree}}") == repo.git.rev_parse(f"{new}^{{tree}}")
    except Exception:  # noqa: BLE001  not in this clone: push and update
        return False


def _title(w: BranchWork) -> str:
    if len(w.plans) == 1:
        return w.plans[0].message
    moves = ", ".join(f"{short(bp.edit.group.pin)} -> {short(bp.edit.new_pin)}" for bp in w.plans)
    return f"nixpkgs: bump {len(w.plans)} pins of {w.branch} ({moves})"


def _body(plan: SweepPlan, w: BranchWork, settings, nix, head: str, pr_body) -> str:
    parts = []
    for bp, i in zip(w.plans, w.outcomes, strict=True):
        o = plan.outcomes[i]
        source = f"{'newest commit of ' if o.kind == 'kept-promise' else 'head of '}{w.tracks}"
        pseudo = SimpleNamespace(new_rev=bp.edit.new_pin, source=source, repo_path=plan.repo_path)
        note = f"> **Kept the promise**: {o.reason}\n\n" if o.kind == "kept-promise" else ""
        parts.append(note + pr_body(bp, pseudo, settings, nix, head=head))
    return "\n---\n\n".join(parts)
