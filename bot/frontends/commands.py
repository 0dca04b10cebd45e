"""The command layer: what every front end (CLI, console chat, Slack) calls.
Each function takes a Context and returns a result object (config/results.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.engine.answer import Answer
from bot.engine.companions import answer_companion, companion_kind
from bot.engine.hardware import parse
from bot.engine.select import recommend
from config.errors import TorchbotError, UsageError
from config.policy import is_vllm_branch
from release.context import Context

if TYPE_CHECKING:
    from datetime import datetime  # imported where a clock is read: `ask` imports this module and reads none


def not_text(text: str) -> bool:
    """Whether ``text`` is not text a person wrote or a tool printed: NUL bytes, undecodable bytes
    (U+FFFD, or surrogates from a lenient decode), or more than 2% control characters."""
    if "\x00" in text or "\ufffd" in text or any("\ud800" <= c <= "\udfff" for c in text):
        return True
    odd = sum(1 for c in text if (ord(c) < 32 and c not in "\t\n\r\f\v") or 0x7f <= ord(c) < 0xa0)
    return odd > max(2, len(text) // 50)


def ask(ctx: Context, text: str, flags_from: str | None = None) -> Answer:
    """Answer a free-text hardware question with a variant, reasons and warnings (a torchvision
    or torchaudio package when the question asks for one). ``flags_from`` says where CPU flags
    in the text were read when the user did not paste them (``ask --here``: this machine's
    /proc/cpuinfo)."""
    if not_text(text or ""):
        raise UsageError("This is not text I can read (binary or garbled bytes); paste a GPU or CPU name, "
                         "an instance type, or nvidia-smi / lscpu output.")
    catalog = ctx.catalog
    hw = parse(catalog, text or "")
    if flags_from and hw.flags_source == "pasted":
        hw.flags_from = flags_from
    answer = recommend(catalog, hw, ctx.settings.flox_org)
    kind = companion_kind(text or "")
    if kind:
        answer = answer_companion(catalog, hw, answer, kind, ctx.settings.flox_org)
    return answer


class CatalogResult:
    """Branches with their facts; with repositories, every branch read from git (build-pytorch
    and build-torchvision, each with its kind and repository) and the recipes that are problems."""

    def __init__(self, ctx: Context, problems: list[str] | None = None, repo_set=None):
        self.catalog = repo_set.catalog if repo_set is not None else ctx.catalog  # read once, not twice
        self.problems = problems or []
        self.repo_set = repo_set

    def _branch_dict(self, b, model=None) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for v in b.variants:
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
        d = {
            "branch": b.name,
            "kind": b.kind,
            "repository": b.repository,
            "pytorch": b.pytorch,
            "python": b.python,
            "cuda": list(b.cuda_versions) if b.kind == "build-pytorch" else _cudas(b),
            "purpose": b.purpose,
            "vllm": b.vllm,
            "pins": list(model.pins) if model is not None else list(b.pins),
            "variants": len(b.variants),
            "by_kind": kinds,
            "gpu_archs": sorted({v.gpu_arch for v in b.variants if v.gpu_arch}, key=lambda a: int(a[2:])),
            "packages": [v.package for v in b.variants],
        }
        if b.kind == "build-torchvision":
            d["pairs_with"] = b.pairs_with
            d["pairing"] = b.pairing
        return d

    def to_dict(self) -> dict[str, Any]:
        out = []
        details = []
        if self.repo_set is not None:
            cat = self.catalog
            by_repo = {}
            for b in [*cat.branches.values(), *cat.vision.values()]:
                by_repo[(b.repository, b.name)] = b
            for m in self.repo_set.models:
                for bm in m.branches.values():
                    b = by_repo.get((m.path, bm.name))
                    if b is not None:
                        out.append(self._branch_dict(b, bm))
                    else:
                        out.append({"branch": bm.name, "kind": m.kind, "repository": m.path, "pytorch": None,
                                    "python": None, "cuda": [], "purpose": None, "pins": [], "variants": 0,
                                    "by_kind": {}, "gpu_archs": [], "packages": []})
                    for p in bm.problems:
                        file, _, what = p.partition(": ")
                        details.append({"repository": m.path, "branch": bm.name, "file": file, "problem": what})
        else:
            out = [self._branch_dict(b) for b in self.catalog.branches.values()]
        d = {"source": self.catalog.source, "recommended": self.catalog.recommended, "branches": out,
             "problems": list(self.problems)}
        if self.repo_set is not None:
            d["repositories"] = [{"path": m.path, "kind": m.kind, "branches": len(m.branches)}
                                 for m in self.repo_set.models]
            d["problem_details"] = details
        return d

    def text(self) -> str:
        d = self.to_dict()
        rows = [("branch", "kind", "pytorch", "python", "cuda", "pins", "variants", "purpose")]
        for b in d["branches"]:
            mark = " *" if b["branch"] == d["recommended"] and b["kind"] == "build-pytorch" else ""
            kind = "torchvision" if b["kind"] == "build-torchvision" else "pytorch"
            rows.append(
                (b["branch"] + mark, kind, str(b["pytorch"]), str(b["python"]), "/".join(b["cuda"]) or "-",
                 ",".join(p[:7] for p in b["pins"]), str(b["variants"]), str(b["purpose"] or "-"))
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines.append(f"(* recommended; source: {d['source']})")
        paired = [b for b in d["branches"] if b.get("pairing")]
        for b in paired:
            lines.append(f"torchvision {b['branch']}: {b['pairing']}")
        if self.problems:
            lines.append(f"Problems ({len(self.problems)}):")
            lines.extend(f"  - {p}" for p in self.problems)
        return "\n".join(lines)


def _cudas(b) -> list[str]:
    from config.catalog import vtuple

    return sorted({v.cuda for v in b.variants if v.cuda}, key=vtuple, reverse=True)


def catalog(ctx: Context, with_problems: bool = False) -> CatalogResult:
    """Branches, pins and counts; with repositories, every branch of each and the recipes the
    reader could not use (each with its file)."""
    repo_set = ctx.repo_set()
    problems = repo_set.problems if (with_problems and repo_set is not None) else []
    return CatalogResult(ctx, problems, repo_set)


class PinsResult:
    """/pins: every branch of each repository with its PyTorch, CUDA, Python and nixpkgs pins and
    when the schedule next bumps it: a time from the bump trigger (APScheduler), "manual (vLLM
    pin)", or, for build-torchvision when the schedule bumps build-pytorch branch by branch, that
    nothing schedules it (it moves with ``/bump ... --with-companions``). ``/pins B...`` only
    those (an unknown one is a usage error naming the branches there are)."""

    def __init__(self, ctx: Context, only: list[str] | None = None):
        self.data = catalog(ctx).to_dict()
        self.cron = ctx.settings.bump_cron
        self.vllm = ctx.settings.bump_vllm_branches
        if only:
            names = [b["branch"] for b in self.data["branches"]]
            unknown = [b for b in only if b not in names]
            if unknown:
                raise UsageError(f"No branch {', '.join(unknown)}. Branches: {', '.join(dict.fromkeys(names))}.")
            self.data["branches"] = [b for b in self.data["branches"] if b["branch"] in only]
        try:
            from datetime import UTC, datetime

            from release.timetable import crontab_trigger, job_specs

            nxt = crontab_trigger(self.cron).get_next_fire_time(None, datetime.now(UTC))
            self.next_run = nxt.strftime("%Y-%m-%d %H:%M UTC") if nxt else None
            self.every_branch = any(spec.id == "bump" for spec in job_specs(ctx))  # one bump of every repository
        except (ValueError, TorchbotError):
            self.next_run, self.every_branch = None, False

    def next_bump(self, b: dict[str, Any]) -> str:
        if b["kind"] == "build-torchvision" and not self.every_branch:
            return "not scheduled (with --with-companions)"
        if is_vllm_branch(b["branch"], b.get("vllm")) and not self.vllm:
            return "manual (vLLM pin)"
        return self.next_run or f"invalid TORCHBOT_BUMP_CRON '{self.cron}'"

    def to_dict(self) -> dict[str, Any]:
        branches = [{**b, "next_bump": self.next_bump(b)} for b in self.data["branches"]]
        return {**self.data, "branches": branches, "bump_cron": self.cron, "next_scheduled_bump": self.next_run}

    def text(self) -> str:
        lead = []
        torch = [b for b in self.data["branches"] if b.get("kind") != "build-torchvision"]
        one = self.data["branches"] if len(self.data["branches"]) == 1 else torch
        if len(one) == 1:
            b = one[0]
            lead = [f"{b['branch']} is pinned to nixpkgs {' and '.join(b['pins']) or 'nothing'} "
                    f"(PyTorch {b['pytorch']}, Python {b['python']})."]
        rows = [("repository", "branch", "pytorch", "cuda", "python", "pin", "next bump")]
        for b in self.data["branches"]:
            repo = "torchvision" if b["kind"] == "build-torchvision" else "pytorch"
            rows.append((repo, b["branch"], str(b["pytorch"]), "/".join(b["cuda"]) or "-", str(b["python"]),
                         ",".join(p[:7] for p in b["pins"]), self.next_bump(b)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join(lead + ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                                 for r in rows])


# ---------------------------------------------------------------------------------------------
# Release questions in words (chat): answered from the dashboard's model and the state DB


def why_held(ctx: Context, names: list[str] | None = None, now: datetime | None = None):
    """"Why is X held?": each named branch's held groups with their reasons and the command that
    moves it anyway, or what its last bump did; without names, every held branch."""
    from config.results import MessageResult
    from release.dashboard.commands import dashboard
    from release.dashboard.words import why_held as words

    model = dashboard(ctx, now=now).model
    return MessageResult(words(model, list(names or [])),
                         data={"branches": [b.to_dict()["bump"] | {"branch": b.name, "repository": b.repository}
                                            for b in model.branches if not names or b.name in names]})


def changes(ctx: Context, days: int = 7, now: datetime | None = None):
    """"What changed since last week?": the bumps of the last ``days`` days (the dashboard's model),
    the builds that finished and the variants published since (the state DB's rows)."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import select

    from config.results import MessageResult
    from release.dashboard.commands import dashboard
    from release.dashboard.words import changes as words
    from release.state import Build, Publish, state_for

    now = now or datetime.now(UTC)
    since = now - timedelta(days=days)
    naive, until = since.replace(tzinfo=None), now.replace(tzinfo=None)  # the state DB keeps UTC without a zone
    builds: dict[str, dict[str, int]] = {}
    published: dict[str, int] = {}
    with state_for(ctx).session() as s:
        for b in s.scalars(select(Build).where(Build.finished >= naive, Build.finished <= until)):
            states = builds.setdefault(_branch_of(b), {})
            states[b.state] = states.get(b.state, 0) + 1
        for p in s.scalars(select(Publish).where(Publish.published >= naive, Publish.published <= until)):
            published[_branch_of(p)] = published.get(_branch_of(p), 0) + 1
    model = dashboard(ctx, now=now).model
    return MessageResult(words(model, since, now, builds, published),
                         data={"since": since.isoformat(timespec="seconds"), "builds": builds, "published": published})


def _branch_of(row) -> str:
    """A build's or publish's branch as people name it: build-torchvision's ``main`` is
    "build-torchvision main" (its row's ``repo``), build-pytorch's just ``main``."""
    return f"{row.repo.rsplit('/', 1)[-1]} {row.branch}" if row.repo else row.branch


def bump_pause(ctx: Context, args: list[str], by: str):
    """``/bump-pause BRANCH [--resume | --recreate HEAD]`` read from chat's words, then the same
    ``pause_bumps`` as ``torchbot release bump-pause``."""
    from release.pins.commands import pause_bumps

    usage = "Usage: /bump-pause <branch> [--resume | --recreate <closed PR's head branch>]"
    if not args or args[0].startswith("-"):
        raise UsageError(usage)
    recreate = None
    if "--recreate" in args:
        i = args.index("--recreate")
        if i + 1 >= len(args):
            raise UsageError(usage)
        recreate = args[i + 1]
    return pause_bumps(ctx, args[0], resume="--resume" in args, recreate=recreate, by=by)
