"""The dashboard's collector: the plain facts ``release.dashboard.model.build`` takes, gathered at
the edge from the repositories (the reader's models, README tables, the torchvision pairing), the
state DB (builds, publishes, the schedule's bump runs), nixpkgs (pin dates, channel heads, how far
behind; cached in the cache directory) and GitHub (open bump pull requests).

Each source that cannot be read adds a note and leaves its facts unknown: the dashboard still
shows the rest. Bump outcomes come from ``bump_outcomes`` (``release.pins`` outcome objects when
that module has them) or, failing that, from the result line the schedule's ``bump:<branch>``
runs recorded."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from config.errors import TorchbotError

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
            if err.message.startswith("GitHub knows no"):  # this fact only (a commit nixpkgs lacks)
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
# State DB


OUTCOME_STATE = {"bumped": "bumped", "kept-promise": "bumped", "current": "current", "held": "held",
                 "skipped": "skipped"}


def outcome_rows(result) -> tuple[list[str], list[dict]]:
    """(repositories, rows) of a bump of every branch (``release.pins``' result: ``plan.plans``
    with their ``PinOutcome``s, ``delivered`` with each pull request), as the schedule records them
    (``State.record_bump_outcomes``)."""
    plans = getattr(getattr(result, "plan", None), "plans", None) or []
    prs = {(d.repo, d.branch): d for d in getattr(result, "delivered", None) or [] if getattr(d, "head", None)}
    rows = []
    for p in plans:
        for o in p.outcomes:
            d = prs.get((str(p.repo_path), o.branch))
            rows.append({**o.to_dict(), "repo": str(p.repo_path), "pr_url": d.url if d else None,
                         "pr_number": d.number if d else None, "head": d.head if d else None})
    return [str(p.repo_path) for p in plans], rows


def _key(repo: str) -> str:
    return str(Path(repo).resolve())


def recorded_outcomes(st) -> tuple[dict[tuple[str, str], list[dict]], dict[tuple[str, str], dict]]:
    """((repository, branch) -> its groups' outcomes of the last recorded bump, as facts;
    (repository, branch) -> the pull request that bump went out as)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    prs: dict[tuple[str, str], dict] = {}
    for o in st.bump_outcomes():
        key = (_key(o.repo), o.branch)
        reason = o.reason or ""
        if o.kind in ("bumped", "kept-promise") and not reason:
            reason = f"{(o.old_pin or '?')[:7]} -> {(o.new_pin or '?')[:7]} ({o.tracks or 'channel'})"
        groups.setdefault(key, []).append({
            "group": o.grp or "", "state": OUTCOME_STATE.get(o.kind, "unknown"), "kind": o.kind,
            "reason": reason + (f"; {o.delivery}" if o.delivery else ""),
            "when": o.recorded.isoformat(timespec="seconds") + "Z", "tracks": o.tracks,
            "rev": o.new_pin if o.kind == "held" else None, "pytorch": o.torch_new if o.kind == "held" else None})
        if o.head and o.pr_url:
            prs[key] = {"number": o.pr_number, "url": o.pr_url, "head": o.head}
    return groups, prs


def bump_runs(st) -> list:
    """The schedule's finished ``bump:<branch>`` runs, oldest first."""
    from sqlalchemy import select

    from release.state import JobRun

    with st.session() as s:
        q = select(JobRun).where(JobRun.job_id.like("bump:%"), JobRun.finished.is_not(None)).order_by(JobRun.id)
        return list(s.scalars(q))


def bump_outcomes_from_runs(runs) -> dict[str, list[dict]]:
    """Branch -> its bump outcome, read from the last finished ``bump:<branch>`` run of the
    schedule (its result line): held (a refusal), current (up to date) or bumped."""
    last: dict[str, object] = {}
    for r in runs:
        if r.job_id.startswith("bump:") and r.finished is not None and r.result:
            last[r.job_id[5:]] = r
    out = {}
    for branch, r in last.items():
        line = r.result.strip()
        when = r.finished.isoformat(timespec="seconds") + "Z"
        if line.startswith("error:") or "Refusing" in line or "held" in line.split(";")[0]:
            state, reason = "held", line.removeprefix("error:").strip()
        elif "up to date" in line or line.startswith("skipped"):
            state, reason = "current", line
        else:
            state, reason = "bumped", line
        out[branch] = [{"group": "", "state": state, "reason": reason, "when": when}]
    return out


def build_facts(st, branches: set[str]) -> tuple[dict, dict]:
    """((branch, package) -> its latest Build row as a dict), ((branch, package) -> published pins)."""
    from sqlalchemy import select

    from release.state import Build, Publish

    latest: dict[tuple[str, str], dict] = {}
    published: dict[tuple[str, str], set[str]] = {}
    with st.session() as s:
        q = select(Build.branch, Build.package, Build.state, Build.commit, Build.pin).order_by(Build.id)
        for branch, package, state, commit, pin in s.execute(q.where(Build.branch.in_(branches))):
            latest[(branch, package)] = {"state": state, "commit": commit, "pin": pin}
        for branch, package, pin in s.execute(select(Publish.branch, Publish.package, Publish.pin)
                                              .where(Publish.branch.in_(branches))):
            published.setdefault((branch, package), set()).add(pin or "")
    return latest, published


def variant_facts(bm, branch: str, latest: dict, published: dict) -> list[dict]:
    out = []
    for v in bm.variants:
        b = latest.get((branch, v.package))
        pins = published.get((branch, v.package)) or set()
        out.append({"package": v.package, "platform": v.platform, "gpu_arch": v.gpu_arch,
                    "build": b["state"] if b else None, "at_head": bool(b and b["commit"] == bm.tip),
                    "published": (v.pin or "") in pins or bool(pins and v.pin in (None, "none"))})
    return out


def pr_builds(latest: dict, head: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for (branch, _), b in latest.items():
        if branch == head:
            state = {"succeeded": "built", "interrupted": "failed", "queued": "running"}.get(b["state"], b["state"])
            counts[state] = counts.get(state, 0) + 1
    return counts


def open_bump_prs(settings, repo: str, notes: list[str]) -> dict[str, dict]:
    """Branch -> its open bump pull request (head ``bump/<branch>-<rev>``), newest kept: torchbot's
    own only (``release.adapters.github.own_pull``: a fork's PR named like one is not shown, so it
    gets no Rebase action)."""
    from release.adapters.github import GitHub

    gh = GitHub(settings)
    try:
        pulls = gh.own_pulls(repo)
    except TorchbotError as err:
        notes.append(f"GitHub: open pull requests of {repo}: {err.message}")
        return {}
    finally:
        gh.close()
    out: dict[str, dict] = {}
    for p in pulls:
        ref = ((p.get("head") or {}).get("ref") or "")
        base = ((p.get("base") or {}).get("ref") or "")
        if ref.startswith(f"bump/{base}-") and base not in out:
            out[base] = {"number": p.get("number"), "url": p.get("html_url"), "head": ref}
    return out


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="seconds")
