"""The dashboard's collector: the plain facts ``release.dashboard.model.build`` takes, gathered at
the edge from the repositories as their remote has them (the reader's models at ``origin/*``, README
tables, the torchvision pairing), the release record (``release.state.record``: each pin group's
bump outcome and its branch's delivery), the builds by the commit they ran at, publishes and failed
publishes, nixpkgs (pin dates, channel heads, how far behind; cached in the cache directory) and
GitHub (the bump pull requests and where they stand).

Each source that cannot be read adds a note and leaves its facts unknown: the dashboard still
shows the rest. Nothing here reads a sentence back: the record's fields are typed."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from config.errors import TorchbotError, UnknownThere

log = logging.getLogger("torchbot.dashboard")
HEAD_TTL = 900.0  # seconds a channel head (and how far behind it a pin is) is reused
FAILED_TTL = 900.0  # seconds nixpkgs is not asked again after it did not answer


def cache_file(settings, name: str) -> Path | None:
    """A file of the dashboard's in torchbot's cache directory; None when caching is off."""
    if not settings.cache_dir or str(settings.cache_dir).lower() == "off":
        return None
    return Path(settings.cache_dir) / name


# ---------------------------------------------------------------------------------------------
# Repositories


def repo_name(model) -> str:
    return model.kind


def pin_groups(bm) -> list[dict]:
    """One pin group per nixpkgs pin of the branch's variants: what it covers (CUDA versions,
    CPU, Darwin) and how many packages, most packages first."""
    groups: dict[str, dict] = {}
    for v in bm.variants:
        if not v.pin or v.pin == "none":
            continue
        g = groups.setdefault(v.pin, {"rev": v.pin, "labels": [], "packages": 0})
        label = f"CUDA {v.cuda}" if v.cuda else ("Darwin" if v.darwin else "CPU")
        if label not in g["labels"]:
            g["labels"].append(label)
        g["packages"] += 1
    return sorted(groups.values(), key=lambda g: -g["packages"])


def readme_drift(model, skip) -> dict[str, list[str]]:
    """Branch -> its README's stale cross-branch rows (as ``release docs --check`` finds them)."""
    from release.docs.facts import docs_from_model, skipped
    from release.docs.tables import check_readme

    docs = {n: d for n, d in docs_from_model(model).items() if not skipped(n, skip)}
    out: dict[str, list[str]] = {}
    for name in docs:
        text = model.branches[name].readme
        if text is None:
            continue
        checked = check_readme(text, name, docs, existing=set(model.branches), skip=skip)
        out[name] = [s.text() for s in checked.stale]
    return out


def companion_drift(pytorch, vision, skip) -> dict[str, list[str]]:
    from release.docs.pairing import check_pairing

    out: dict[str, list[str]] = {}
    for m in check_pairing(pytorch, vision, skip):
        out.setdefault(m.branch, []).append(m.text())
    return out


def cached_by_tips(settings, models, skip, compute: Callable[[], dict]) -> dict:
    """``compute()`` (README and companion drift), kept in the cache directory until a branch of
    any repository moves (the tables are cross-branch: every tip is part of the key)."""
    import hashlib

    key = hashlib.sha256(json.dumps([[m.path, sorted((n, b.tip) for n, b in m.branches.items())] for m in models]
                                    + [list(skip)]).encode()).hexdigest()
    path = cache_file(settings, "dashboard-drift.json")
    if path is None:
        return compute()
    try:
        kept = json.loads(path.read_text())
        if kept.get("key") == key:
            return kept["value"]
    except (OSError, ValueError, AttributeError):
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": key, "value": value}))
        tmp.replace(path)
    except OSError as err:
        log.warning("could not keep the drift in %s: %s", path, err)
    return value


# ---------------------------------------------------------------------------------------------
# nixpkgs (cached)


class NixpkgsFacts:
    """Pin dates (kept for ever), channel heads and how far behind them a pin is (kept
    ``HEAD_TTL``), in one JSON file under the cache directory."""

    def __init__(self, settings, now: Callable[[], float] = time.time):
        self.settings, self.now = settings, now
        self.path = cache_file(settings, "dashboard-nixpkgs.json")
        try:
            self.data = json.loads(self.path.read_text()) if self.path else {}
        except (OSError, ValueError):
            self.data = {}
        for key in ("dates", "heads", "behind"):
            self.data.setdefault(key, {})
        self.client = None
        self.notes: list[str] = []
        self.dirty = False

    def _client(self):
        if self.data.get("failed_until", 0) > self.now():
            return None
        if self.client is None:
            from release.adapters.nixpkgs import NixpkgsClient

            self.client = NixpkgsClient(self.settings)
        return self.client

    def _ask(self, what: str, fn):
        """``fn(client)``, or None: a fact nixpkgs does not have is not asked for again for a while
        (``misses``); nixpkgs not answering at all stops every question for a while."""
        misses = self.data.setdefault("misses", {})
        if misses.get(what, 0) > self.now():
            return None
        client = self._client()
        if client is None:
            return None
        try:
            return fn(client)
        except TorchbotError as err:
            self.notes.append(f"nixpkgs: {what}: {err.message}")
            if isinstance(err, UnknownThere):  # this fact only (a commit nixpkgs lacks)
                misses[what] = self.now() + FAILED_TTL
            else:
                self.data["failed_until"] = self.now() + FAILED_TTL
            self.dirty = True
            return None

    def date(self, rev: str) -> str | None:
        if rev not in self.data["dates"]:
            got = self._ask(f"the date of {rev[:7]}", lambda c: c.commit_date(rev))
            if got is None:
                return None
            self.data["dates"][rev], self.dirty = got, True
        return self.data["dates"][rev]

    def head(self, channel: str) -> str | None:
        hit = self.data["heads"].get(channel)
        if hit and self.now() - hit[1] < HEAD_TTL:
            return hit[0]
        got = self._ask(f"the head of {channel}", lambda c: c.channel_head(channel))
        if got is None:
            return hit[0] if hit else None
        self.data["heads"][channel], self.dirty = [got, self.now()], True
        return got

    def behind(self, rev: str, head: str) -> int | None:
        if rev == head:
            return 0
        key = f"{rev}...{head}"
        if key not in self.data["behind"]:
            got = self._ask(f"{rev[:7]}...{head[:7]}", lambda c: c.compare(rev, head, per_page=1, max_pages=1))
            if got is None:
                return None
            self.data["behind"][key], self.dirty = got["total"], True
        return self.data["behind"][key]

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.dirty and self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(self.data))
                tmp.replace(self.path)
            except OSError as err:
                log.warning("could not keep the nixpkgs facts in %s: %s", self.path, err)


def pin_facts(groups: list[dict], channel: str, nix: NixpkgsFacts | None) -> list[dict]:
    head = nix.head(channel) if nix else None
    head_date = nix.date(head) if nix and head else None
    out = []
    for g in groups:
        out.append({**g, "channel": channel, "channel_head": head, "channel_date": head_date,
                    "date": nix.date(g["rev"]) if nix else None,
                    "behind": nix.behind(g["rev"], head) if nix and head else None})
    return out


# ---------------------------------------------------------------------------------------------
# The release record (release.state.record) and the builds by the commit they ran at


def _key(repo: str) -> str:
    return str(Path(repo).resolve())


def record_rows(st) -> dict[tuple[str, str], list]:
    """(repository path, branch) -> its rows of the release record, one per pin group."""
    from release.state.record import rows

    out: dict[tuple[str, str], list] = {}
    for r in rows(st):
        out.setdefault((r.repo, r.branch), []).append(r)
    return out


def decision_facts(st) -> dict[tuple[str, str], list[dict]]:
    """(repository folder name, branch) -> people's decisions about its bump pull requests
    (``release.state.decisions``: closed unmerged, edited, paused, recreate, merge refused), as
    the model's facts."""
    from release.state import decisions

    out: dict[tuple[str, str], list[dict]] = {}
    for d in decisions.decisions(st):
        out.setdefault((d.repo, d.branch), []).append(
            {"kind": d.kind, "number": d.number or None, "head": d.head or None, "by": d.by or None,
             "at": d.at.isoformat(timespec="seconds") if d.at else None, "note": d.note or ""})
    return out


def bump_facts(rows: list) -> list[dict]:
    """A branch's record rows as the model's bump facts (typed fields only; the reason is shown
    as written, never read back)."""
    return [{"group": r.grp, "kind": r.bump_kind, "reason_kind": r.reason_kind, "reason": r.reason,
             "when": r.bumped.isoformat(timespec="seconds") + "Z", "tracks": r.tracks, "old_pin": r.old_pin,
             "rev": r.target, "pytorch": r.pytorch, "cuda": [c for c in (r.cuda or "").split(",") if c]}
            for r in rows]


def delivery_of(rows: list) -> dict | None:
    """The branch's last delivery as a pull request, from its record rows (every group carries it)."""
    r = next((r for r in rows if r.pr_number), None)
    if r is None:
        return None
    return {"number": r.pr_number, "url": r.pr_url, "head": r.head_ref, "sha": r.head_sha,
            "state": r.pr_state or "open", "closed_by": r.closed_by,
            "waits_for": getattr(r, "waits_for", None) or "", "pair_pr": getattr(r, "pair_pr", None)}


def observe_pull(pr: dict, seen: dict | None, merged_into: bool) -> tuple[str, str | None, str | None]:
    """(state, closed_by, head sha) of a recorded pull request: what GitHub says of it (``seen``,
    its pull-request object), else whether the remote branch holds its head (``merged_into``)."""
    from config.outcomes import PrState

    if seen is not None:
        head = (seen.get("head") or {}).get("sha") or pr.get("sha")
        if seen.get("merged_at"):
            return PrState.MERGED, None, head
        if seen.get("state") == "closed":
            return PrState.CLOSED, ((seen.get("closed_by") or {}).get("login")), head
        if seen.get("mergeable") is False or seen.get("mergeable_state") == "dirty":
            return PrState.CONFLICT, None, head
        return (pr["state"] if pr["state"] == PrState.CONFLICT else PrState.OPEN), None, head
    if merged_into:
        return PrState.MERGED, None, pr.get("sha")
    return pr["state"], pr.get("closed_by"), pr.get("sha")


def closer_of(settings, repo: str, number: int) -> str:
    """Who closed pull request ``number`` of ``repo`` (GitHub's ``closed_by`` of the PR as an
    issue; its PR list lacks it), "" when GitHub does not say."""
    from release.adapters.github import GitHub

    if settings.github_token is None:
        return ""
    return GitHub(settings).closed_by(repo, number)


def pulls_of(settings, repo: str, notes: list[str]) -> list[dict]:
    """torchbot's own recent pull requests of ``repo`` (open and closed, one page;
    ``release.adapters.github.own_pull``: a fork's PR named like a bump is never shown, so it gets
    no Rebase action), or [] with a note."""
    from release.adapters.github import GitHub

    gh = GitHub(settings)
    try:
        return gh.own_pulls(repo, state="all")
    except TorchbotError as err:
        notes.append(f"GitHub: pull requests of {repo}: {err.message}")
        return []
    finally:
        gh.close()


def open_bump_prs(pulls: list[dict]) -> dict[str, dict]:
    """Branch -> its open bump pull request (head ``bump/<branch>-<rev>``), newest kept."""
    from config.policy import bump_head_prefix

    out: dict[str, dict] = {}
    for p in pulls:
        if p.get("state") != "open":
            continue
        ref = ((p.get("head") or {}).get("ref") or "")
        base = ((p.get("base") or {}).get("ref") or "")
        if ref.startswith(bump_head_prefix(base)) and base not in out:
            out[base] = {"number": p.get("number"), "url": p.get("html_url"), "head": ref,
                         "sha": (p.get("head") or {}).get("sha"), "state": "open", "closed_by": None}
    return out


def build_facts(st, branches: set[str], commits: set[str]) -> tuple[dict, dict]:
    """((commit, package) -> the latest build of that package at that commit, as a dict; a
    variant carried to a bump PR's new head from its success at an earlier head counts as
    succeeded there, ``release.state.carried``), ((repository, branch, package) -> published pins;
    the repository as ``Publish.repo``: None for the first one, else its GitHub owner/name)."""
    from sqlalchemy import select

    from release.state import Build, Publish
    from release.state.carried import CarriedBuild

    latest: dict[tuple[str, str], dict] = {}
    published: dict[tuple[str | None, str, str], set[str]] = {}
    with st.session() as s:
        q = select(Build.branch, Build.package, Build.state, Build.commit, Build.pin).order_by(Build.id)
        for branch, package, state, commit, pin in s.execute(q.where(Build.commit.in_(commits))):
            latest[(commit, package)] = {"state": state, "branch": branch, "pin": pin}
        for c in s.scalars(select(CarriedBuild).where(CarriedBuild.commit.in_(commits)).order_by(CarriedBuild.id)):
            if (c.commit, c.package) not in latest:
                pin = s.scalar(select(Build.pin).where(Build.commit == c.from_commit, Build.package == c.package,
                                                       Build.state == "succeeded").order_by(Build.id.desc()))
                latest[(c.commit, c.package)] = {"state": "succeeded", "branch": c.branch, "pin": pin,
                                                 "carried_from": c.from_commit}
        for repo, branch, package, pin in s.execute(select(Publish.repo, Publish.branch, Publish.package, Publish.pin)
                                                    .where(Publish.branch.in_(branches))):
            published.setdefault((repo, branch, package), set()).add(pin or "")
    return latest, published


def variant_facts(bm, branch: str, latest: dict, published: dict, also: str | None = None,
                  repo: str | None = None) -> list[dict]:
    """Each variant of the branch: its build at the branch's tip (the commit it ran at), else at
    ``also`` (a merged pull request's head with the same recipes: what the branch now builds was
    built there), and whether its pin is published in ``repo`` (None: the first repository)."""
    out = []
    for v in bm.variants:
        b = latest.get((bm.tip, v.package)) or (latest.get((also, v.package)) if also else None)
        pins = published.get((repo, branch, v.package)) or set()
        out.append({"package": v.package, "platform": v.platform, "gpu_arch": v.gpu_arch,
                    "build": b["state"] if b else None, "at_head": b is not None,
                    "published": (v.pin or "") in pins or bool(pins and v.pin in (None, "none"))})
    return out


def pr_builds(latest: dict, sha: str | None) -> dict[str, list[str]]:
    """The builds that ran at a pull request's head commit: bucket -> packages."""
    from config.policy import bucket

    out: dict[str, list[str]] = {}
    if not sha:
        return out
    for (commit, package), b in sorted(latest.items()):
        if commit == sha:
            out.setdefault(bucket(b["state"]), []).append(package)
    return out


def publish_failures(st, branches: set[str]) -> dict[tuple[str | None, str], list[dict]]:
    """(repository as ``Publish.repo``, branch) -> its failed publishes."""
    from release.state.record import publish_failures as failures

    out: dict[tuple[str | None, str], list[dict]] = {}
    for f in failures(st, branches):
        out.setdefault((f.repo, f.branch), []).append({"package": f.package, "pin": f.pin, "message": f.message})
    return out


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="seconds")
