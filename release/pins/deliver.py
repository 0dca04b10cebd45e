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

A person's decision stands (``pr``; recorded in release.state.decisions, shown by the dashboard):
the branch paused (a ``torchbot:pause`` label on one of its bump PRs, or ``release bump-pause``)
gets no PR; a target whose PR a maintainer closed unmerged is not proposed again (a newer one
is); an open PR whose branch holds commits torchbot did not make (authors other than
TORCHBOT_GIT_AUTHOR_* and TORCHBOT_BUMP_IGNORED_AUTHORS) is never force-pushed again, and the
PR is told so once. Those groups are ``skipped`` with the reason, not held.

May import: config, release.adapters, release.state, release.pins.
"""

from __future__ import annotations

import logging
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
from release.adapters import gitcheckouts
from release.adapters.gitrefs import all_branches, make_local
from release.pins.sweep import BranchWork, SweepPlan

log = logging.getLogger("torchbot.pins.deliver")
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
    decision: str = ""  # a person's decision left it alone: closed-unmerged | edited | paused (release.state.decisions)
    notes: list[str] = field(default_factory=list)  # what the local move wants said (a checkout left as it was)

    def to_dict(self) -> dict:
        return {"repo": self.repo, "branch": self.branch, "commit": self.commit, "how": self.how, "url": self.url,
                "head": self.head, "number": self.number, "decision": self.decision or None,
                "commits": [{"sha": sha, "message": m} for sha, m in self.commits]}

    def describe(self) -> str:
        if self.decision:
            return self.how
        if self.url or self.number:
            return f"{self.how}: {self.url or '#' + str(self.number)} (head {self.head})"
        return f"{self.how} ({short(self.commit)})"


def _closed(state, repo, branch: str, number: int, by: str) -> None:
    """The release record's pull request ``number`` of ``branch``, seen closed unmerged, and by whom
    (GitHub's issue ``closed_by``: its PR list lacks it); the week's outcome rows carry it on."""
    from sqlalchemy.exc import SQLAlchemyError

    from config.outcomes import PrState
    from release.state.record import set_pr_state

    try:
        set_pr_state(state, repo, branch, number, PrState.CLOSED, closed_by=by or None)
    except (TorchbotError, SQLAlchemyError) as err:
        log.warning("#%s closed unmerged, not kept in the release record: %s", number, getattr(err, "message", err))


def bump_head(branch: str, work: BranchWork) -> str:
    return f"bump/{branch}-{short(work.plans[0].edit.new_pin)}"


def deliver(plan: SweepPlan, settings, mode: str, progress: Progress | None = None,
            counted: bool = False) -> list[Delivered]:
    """Commit and deliver every branch of ``plan`` (see the module docstring); outcomes of
    branches that could not be delivered become held."""
    repo = gitops.open_repo(plan.repo_path)
    progress = progress or Progress(verb="bumped")
    if plan.together and mode in ("push", "local"):
        return _together(repo, plan, settings, mode, progress)
    if not counted:  # else the caller counted every repository's branches
        progress.begin(len(plan.work))
    out: list[Delivered] = []
    gh = nix = None
    try:
        if mode == "push":  # a killed run's push that landed: its local branches follow now
            gitcheckouts.catch_up(repo, settings.repo_remote, plan.tips)
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
            if d.decision:  # a person decided (or the PR is ahead): left alone, and that is no failure
                _mark(plan, w, "current" if d.decision == "ahead" else "skipped", d.describe(),
                      why=ReasonKind.LEFT_ALONE)
                progress.finished(w.branch, "left alone", d.decision)
                continue
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


def _mark(plan: SweepPlan, w: BranchWork, kind: str | None, text: str, error: str = "",
          why: ReasonKind = ReasonKind.NOT_DELIVERED) -> None:
    for i in w.outcomes:
        o = plan.outcomes[i]
        if kind is None:
            plan.outcomes[i] = replace(o, delivery=text)
        else:
            plan.outcomes[i] = replace(o, kind=kind, reason="; ".join(t for t in (o.reason, text) if t),
                                       reason_kind=why, delivery_error=error)


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
        gitcheckouts.advance_branches(repo, {w.branch: (sha, w.tip)})
        return Delivered(w.branch, sha, "committed locally")
    if mode == "push":
        gitops.push(repo, remote, [f"{sha}:refs/heads/{w.branch}"])
        gitops.track_pushed(repo, remote, {w.branch: sha})
        if not w.remote_only:
            with suppress(TorchbotError):  # pushed; a local branch that cannot follow catches up at the next pull
                gitcheckouts.advance_branches(repo, {w.branch: (sha, w.tip)})
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
    mine = [p for p in gh.pulls_into(base=w.branch, repo=where, state="all") if p["head"].startswith(prefix)]
    existing = [p for p in mine if p.get("state") == "open"]
    head = existing[0]["head"] if existing else bump_head(w.branch, w)
    decided = _decided(repo, plan, w, settings, gh, where, mine, existing, sha, nix)
    if decided is not None:
        return decided
    if existing and _same_tree(repo, existing[0].get("sha"), sha):
        pr = existing[0]
        return Delivered(w.branch, pr["sha"], "pull request already up to date", pr.get("url"), head, pr["number"])
    gitops.push(repo, settings.repo_remote, [f"+{sha}:refs/heads/{head}"])
    title, body = _title(w), _body(plan, w, settings, nix, head, pr_body)
    if existing:
        pr = gh.update_pr(existing[0]["number"], title=title, body=body, repo=where)
        return Delivered(w.branch, sha, "pull request updated", pr.get("url"), head, pr.get("number"))
    try:
        pr = gh.open_pr(head=head, base=w.branch, title=title, body=body, repo=where)
    except TorchbotError:  # no PR: the branch pushed for it goes again (the remote as it was)
        with suppress(TorchbotError):
            gitops.delete_remote_refs(repo, settings.repo_remote, [f"refs/heads/{head}"])
        raise
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
        source = (w.tracks.removeprefix("=") if w.tracks.startswith("=")  # a single-branch bump's own source
                  else f"{'newest commit of ' if o.kind == 'kept-promise' else 'head of '}{w.tracks}")
        pseudo = SimpleNamespace(new_rev=bp.edit.new_pin, source=source, repo_path=plan.repo_path)
        note = f"> **Kept the promise**: {o.reason}\n\n" if o.kind == "kept-promise" else ""
        parts.append(note + pr_body(bp, pseudo, settings, nix, head=head))
    return "\n---\n\n".join(parts)


PAUSE_LABELS = ("torchbot:pause", "torchbot-pause")  # a label on any bump PR of the branch pauses its bumps


def _decided(repo, plan: SweepPlan, w: BranchWork, settings, gh, where: str, mine: list[dict],
             existing: list[dict], sha: str, gh_nix=None) -> Delivered | None:
    """A person's decision about this branch's bump PRs that leaves the bump alone (Renovate's
    rules): the branch paused; this very target closed unmerged; the open PR's branch holding
    commits torchbot did not make. Each is recorded (release.state.decisions) for the views."""
    from release.state import decisions, open_state

    state = open_state(settings.state_db)
    name = Path(plan.repo_path).name
    for p in mine:
        if set(p.get("labels") or ()) & set(PAUSE_LABELS):
            decisions.record(state, name, w.branch, "paused", by=f"label on #{p['number']}",
                             note=f"label {', '.join(set(p['labels']) & set(PAUSE_LABELS))}")
    pause = decisions.paused(state, name, w.branch)
    if pause is not None:
        why = f" ({pause.note})" if pause.note else ""
        return Delivered(w.branch, sha, f"left alone: bumps of {w.branch} are paused by {pause.by or 'a maintainer'} "
                                        f"on {pause.at:%Y-%m-%d}{why}; `release bump-pause {w.branch} --resume` "
                         "resumes them", decision="paused")
    target = _pins_at(repo, sha)
    recreate = {d.head for d in decisions.decisions(state, name, w.branch, "recreate")}
    for p in mine:
        if p.get("state") != "closed" or p.get("merged"):
            continue
        row = decisions.record(state, name, w.branch, "closed-unmerged", number=int(p["number"]), head=p["head"],
                               by=gh.closed_by(where, int(p["number"])) if not _known(state, name, w.branch, p)
                               else "", at=_when(p.get("closed_at")),
                               note=",".join(sorted(_pins_at(repo, p.get("sha")))))
        _closed(state, plan.repo_path, w.branch, int(p["number"]), row.by)
        same = (set(row.note.split(",")) == target) if row.note else p["head"] == bump_head(w.branch, w)
        if same and p["head"] not in recreate and not existing:
            who = f" by {row.by}" if row.by else ""
            return Delivered(w.branch, sha, f"left alone: pull request #{p['number']} for this nixpkgs was closed "
                                            f"unmerged{who} on {row.at:%Y-%m-%d}; a newer nixpkgs gets a new one",
                             p.get("url"), p["head"], int(p["number"]), decision="closed-unmerged")
    if existing and not plan.allow_older:
        pr = existing[0]
        proposed, new = _pins_at(repo, pr.get("sha")), w.plans[0].edit.new_pin
        if proposed and new not in proposed and any(_newer(gh_nix, new, p) for p in proposed):
            return Delivered(w.branch, sha, f"left alone: pull request #{pr['number']} already proposes a newer "
                                            f"nixpkgs than {w.tracks}'s head {short(new)} (the channel went back)",
                             pr.get("url"), pr["head"], int(pr["number"]), decision="ahead")
    if existing:
        pr = existing[0]
        others = _foreign_authors(repo, w.tip, pr.get("sha"), settings)
        if others:
            who = ", ".join(others)
            row = decisions.record(state, name, w.branch, "edited", number=int(pr["number"]), head=pr["head"], by=who)
            if decisions.mark_said(state, row.id):
                with suppress(TorchbotError):  # said on the dashboard either way
                    gh.comment(where, int(pr["number"]),
                               f"torchbot no longer updates this pull request: its branch `{pr['head']}` holds "
                               f"commits torchbot did not make ({who}). Merge or close it; once it is closed, a "
                               "newer nixpkgs gets a new pull request.")
            return Delivered(w.branch, sha, f"left alone: pull request #{pr['number']} holds commits by {who}; "
                                            "torchbot no longer updates it", pr.get("url"), pr["head"],
                             int(pr["number"]), decision="edited")
    return None


def _newer(nix, new: str, old: str) -> bool:
    """Whether ``old`` is newer than ``new`` in nixpkgs (False when it cannot be told)."""
    if nix is None:
        return False
    try:
        return nix.is_newer(new, old)
    except TorchbotError:
        return False


def _known(state, repo: str, branch: str, p: dict) -> bool:
    from release.state import decisions

    return any(d.number == int(p["number"]) for d in decisions.decisions(state, repo, branch, "closed-unmerged"))


def _when(stamp: str | None):
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError:
        return None


def _pins_at(repo, sha: str | None) -> set[str]:
    """The nixpkgs pins of the recipes at commit ``sha`` (empty when this clone lacks it)."""
    from release.pins.rules import RECIPES_DIR, find_groups

    if not sha:
        return set()
    try:
        files = gitops.read_files(repo, sha, RECIPES_DIR, ())
    except Exception:  # noqa: BLE001  a commit this clone does not have
        return set()
    return {g.pin for g in find_groups({p: t for p, t in files.items() if p.endswith(".nix")})}


def _foreign_authors(repo, base: str, head: str | None, settings) -> list[str]:
    """Authors of the commits on ``head`` but not ``base`` other than torchbot and the authors
    it may ignore (TORCHBOT_BUMP_IGNORED_AUTHORS): the people whose work a rewrite would lose."""
    if not head:
        return []
    try:
        out = repo.git.log(f"{base}..{head}", "--format=%ae%x09%an")
    except Exception:  # noqa: BLE001  this clone lacks the head: nothing known to be lost
        return []
    mine = {settings.git_author_email.lower(), settings.git_author_name.lower(),
            *(a.strip().lower() for a in settings.bump_ignored_authors)}
    found: dict[str, None] = {}
    for line in out.splitlines():
        email, _, author = line.partition("\t")
        if email.lower() not in mine and author.lower() not in mine:
            found[f"{author} <{email}>"] = None
    return list(found)


def _together(repo, plan: SweepPlan, settings, mode: str, progress: Progress) -> list[Delivered]:
    """``push``/``local`` of named branches, as one: every tip (and checkout) is checked before
    anything is written; the commits are made without touching a checkout; the push is one atomic
    push (an earlier killed run's landed push is adopted); then the local refs move in one
    transaction. Any failure before the push leaves every ref as it was; after it, it says so."""
    from config.errors import ExternalError
    from release.adapters.gitpush import push_or_adopt

    remote = settings.repo_remote
    work = [(w.branch, w.tip, p.edit.changes, p.message) for w in plan.work for p in w.plans]
    work += [(d.branch, d.tip, d.changes, d.message) for d in plan.docs]
    heads = all_branches(repo, remote)
    for name, tip, _, _ in work:
        if heads.get(name) != tip:
            raise ExternalError(f"Branch '{name}' moved since the plan was made; nothing was changed. "
                                "Run the bump again.")
    shas: dict[str, str] = {}
    made: dict[str, list[tuple[str, str]]] = {}
    for name, tip, changes, message in work:  # a branch's groups commit one on another
        sha = gitops.make_commit(repo, shas.get(name, tip), changes, message, settings.git_author_name,
                                 settings.git_author_email)
        shas[name] = sha
        made.setdefault(name, []).append((sha, message))
    make_local(repo, {b: heads[b] for b in shas}, remote)  # a branch only on <remote>/* gets its local branch
    checked = gitcheckouts.check_checkouts(repo, {b: (sha, heads[b]) for b, sha in shas.items()})  # before any push
    if mode == "push":  # an earlier run killed after its push reached the remote: its commits are adopted
        shas = push_or_adopt(repo, remote, {b: (heads[b], sha) for b, sha in shas.items()})
    try:
        notes = gitcheckouts.advance_branches(repo, {b: (sha, heads[b]) for b, sha in shas.items()}, checked=checked)
    except ExternalError as err:
        if mode != "push":
            raise
        raise ExternalError(
            f"The bump was pushed to '{remote}' ({', '.join(shas)}), but a local branch moved meanwhile, so local "
            f"branches were left as they were; run `git fetch {remote}` and reconcile. ({err.message})"
        ) from None
    if mode == "push":
        gitops.track_pushed(repo, remote, shas)
    how = "pushed" if mode == "push" else "committed locally"
    out = [Delivered(b, sha, how, repo=str(plan.repo_path), commits=made[b]) for b, sha in shas.items()]
    if out:
        out[0].notes = notes
    progress.begin(len(shas))
    for b, sha in shas.items():
        progress.finished(b, "pushed" if mode == "push" else "committed", short(sha))
    progress.end()
    return out
