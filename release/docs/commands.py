"""Command layer for README upkeep, shared by the CLI, chat and the schedule.

``docs_check(ctx, repo=None, torchvision=None)`` reads the repository (git objects only) and
returns a :class:`DocsResult` listing every stale cross-branch row (exit code 1 on drift);
``docs_write(ctx, repo=None)`` makes one commit per branch whose README.md has stale tables,
touching only those tables, and moves the branches in one transaction (a clean checked-out
branch is fast-forwarded with its work tree; a dirty one is refused before anything moves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from release.context import repo_path

README = "README.md"
UNFIXABLE = 3  # exit status: what is left is drift no `docs --write` can fix (docs/releases-weekly-loop.md)
NO_WRITE_FIXES = ("No `docs --write` fixes these: a torchvision branch's pins and versions are its recipes' own; "
                  "move the pair together (`release bump-pins --with-companions`) or edit the recipes.")


@dataclass
class DocsResult:
    repo: str
    mode: str  # "check" | "write"
    checked: list[str] = field(default_factory=list)  # branches whose README was checked
    stale: list = field(default_factory=list)  # tables.Stale
    pairing: list = field(default_factory=list)  # pairing.Mismatch
    commits: dict[str, str] = field(default_factory=dict)
    lines_changed: dict[str, tuple[int, int]] = field(default_factory=dict)  # branch -> (changed, total)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    dry_run: bool = False  # a --write that writes nothing: ``changes`` holds what it would write
    changes: list = field(default_factory=list)  # config.diffs.FileChange
    left: list = field(default_factory=list)  # write: rows still stale after writing (tables.Stale)

    @property
    def drift(self) -> bool:
        return bool(self.stale or self.pairing)

    @property
    def unfixable(self) -> bool:
        """Drift no ``--write`` can fix: torchvision pairs that differ, rows a write left stale."""
        return bool(self.pairing or self.left) if self.mode == "write" else bool(self.pairing and not self.stale)

    @property
    def ok(self) -> bool:
        return not self.unfixable if self.mode == "write" else not self.drift

    @property
    def exit_code(self) -> int:
        """0: the tables match; 1 (--check): stale rows `--write` fixes; 3: only what no write can fix."""
        if self.unfixable:
            return UNFIXABLE
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "repo": self.repo,
            "mode": self.mode,
            "checked": self.checked,
            "stale": [s.to_dict() for s in self.stale],
            "torchvision": [m.to_dict() for m in self.pairing],
            "commits": self.commits,
            "lines_changed": {b: {"changed": c, "total": t} for b, (c, t) in self.lines_changed.items()},
            "notes": self.notes,
            "dry_run": self.dry_run,
        }

    def text(self) -> str:
        lines = []
        if self.mode == "check":
            if not self.drift:
                return f"README tables of {len(self.checked)} branches match the repository."
            by: dict[str, int] = {}
            for s in self.stale:
                by[s.readme] = by.get(s.readme, 0) + 1
            if self.stale:
                lines.append(f"{len(self.stale)} stale rows in {len(by)} of {len(self.checked)} READMEs:")
                lines.extend("  " + s.text() for s in self.stale)
            if self.stale:
                lines.append("Run `torchbot release docs --write` to bring the tables in line.")
            if self.pairing:
                lines.append(f"{len(self.pairing)} torchvision branches differ from their build-pytorch branch:")
                lines.extend("  " + m.text() for m in self.pairing)
                lines.append(NO_WRITE_FIXES)
        elif self.dry_run:
            by = {}
            for s in self.stale:
                by[s.readme] = by.get(s.readme, 0) + 1
            lines.extend(f"{b}: would commit README.md ({n} stale rows)" for b, n in by.items())
            lines.append("Dry run: nothing was written." if by else
                         f"README tables of {len(self.checked)} branches already match the repository.")
        else:
            if not self.commits:
                lines.append(f"README tables of {len(self.checked)} branches already match the repository; "
                             "nothing written.")
            for b, sha in self.commits.items():
                changed, total = self.lines_changed[b]
                lines.append(f"{b}: {sha[:7]} README.md, {changed} of {total} lines")
            if self.left:
                lines.append(f"{len(self.left)} rows are still stale after writing (no write can fix them):")
                lines.extend("  " + s.text() for s in self.left)
            if self.pairing:
                lines.append(f"{len(self.pairing)} torchvision branches differ from their build-pytorch branch:")
                lines.extend("  " + m.text() for m in self.pairing)
                lines.append(NO_WRITE_FIXES)
        lines.extend(self.notes)
        return "\n".join(lines)


def drift_message(result: DocsResult, limit: int = 30) -> str:
    """The announce-channel message for a drifted check (plain lines; at most ``limit`` rows)."""
    lines = [f":memo: README drift in {result.repo}: {len(result.stale)} stale cross-branch rows"
             + (f", {len(result.pairing)} torchvision branches off their pair" if result.pairing else "")]
    items = [s.text() for s in result.stale] + [m.text() for m in result.pairing]
    lines.extend(f"• {t}" for t in items[:limit])
    if len(items) > limit:
        lines.append(f"… and {len(items) - limit} more (`torchbot release docs --check`)")
    lines.append("Fix: `torchbot release docs --write` (one commit per branch, tables only).")
    return "\n".join(lines)


def _read(ctx, path: Path):
    from config.catalog_data import load_catalog
    from release.recipes.reader import read_repository

    return read_repository(path, load_catalog())


def plan_docs(ctx, path: Path, model=None):
    """(model, {branch: tables.Checked}) for every documented branch's README."""
    from release.adapters import git as gitops
    from release.docs.facts import docs_from_model, skipped
    from release.docs.tables import check_readme

    skip = ctx.settings.docs_skip_branches
    model = model or _read(ctx, path)
    docs = {n: d for n, d in docs_from_model(model).items() if not skipped(n, skip)}
    readmes = gitops.read_paths(path, [f"{model.branches[n].tip}:{README}" for n in docs])
    checked = {}
    for name in docs:
        text = readmes.get(f"{model.branches[name].tip}:{README}")
        if text is None:
            continue
        checked[name] = check_readme(text, name, docs, existing=set(model.branches), skip=skip)
    return model, checked


def docs_check(ctx, repo=None, torchvision=None) -> DocsResult:
    import time

    start = time.perf_counter()
    path = repo_path(ctx, repo)
    model, checked = plan_docs(ctx, path)
    result = DocsResult(str(path), "check", checked=list(checked))
    for c in checked.values():
        result.stale.extend(c.stale)
    from release.context import torchvision_model

    vision = torchvision_model(ctx, torchvision)
    if vision is not None:
        from release.docs.pairing import check_pairing

        result.pairing = check_pairing(model, vision, ctx.settings.docs_skip_branches)
    result.seconds = time.perf_counter() - start
    return result


def docs_write(ctx, repo=None, torchvision=None, dry_run: bool = False) -> DocsResult:
    """One commit per stale README, then the check again: what is left (rows a write cannot fix,
    torchvision pairs that differ) is named and makes the exit status 3. With ``dry_run``: what
    would be written (``result.changes``), nothing written."""
    path = repo_path(ctx, repo)
    result = _write(ctx, path, dry_run)
    if dry_run:
        return result
    model, checked = plan_docs(ctx, path)
    for c in checked.values():
        result.left.extend(c.stale)
    from release.context import torchvision_model

    vision = torchvision_model(ctx, torchvision)
    if vision is not None:
        from release.docs.pairing import check_pairing

        result.pairing = check_pairing(model, vision, ctx.settings.docs_skip_branches)
    return result


def _write(ctx, path: Path, dry_run: bool = False) -> DocsResult:
    from release.adapters import git as gitops
    from release.adapters import gitcheckouts
    from release.adapters.gitrefs import make_local

    model, checked = plan_docs(ctx, path)
    result = DocsResult(str(path), "write", checked=list(checked), dry_run=dry_run)
    work = {n: c for n, c in checked.items() if c.stale}
    for c in work.values():
        result.stale.extend(c.stale)
    if dry_run:
        from config.diffs import planned

        result.changes = planned([(n, model.branches[n].tip, {README: c.text}) for n, c in work.items()],
                                 lambda names: gitops.read_paths(path, names))
        return result
    if not work:
        return result
    repo_obj = gitops.open_repo(path)
    specs, names = [], []
    for name, c in work.items():
        bm = model.branches[name]
        rows = len(c.stale)
        specs.append((bm.tip, {README: c.text}, f"docs(README): cross-branch tables from the repository ({rows} rows)"))
        names.append(name)
    shas = gitops.make_commits(repo_obj, specs, ctx.settings.git_author_name, ctx.settings.git_author_email)
    # a branch read from origin/* (a fresh clone) gets its local branch, at the tip that was read
    made = make_local(repo_obj, {n: model.branches[n].tip for n in names if model.branches[n].ref != f"refs/heads/{n}"},
                      ctx.settings.repo_remote)
    if made:
        result.notes.append(f"Made local branches from {ctx.settings.repo_remote}/*: {', '.join(made)}.")
    moves = {}
    for name, sha in zip(names, shas, strict=True):
        moves[name] = (sha, model.branches[name].tip)
        old_text = gitops.read_paths(path, [f"{model.branches[name].tip}:{README}"])
        old = next(iter(old_text.values())) or ""
        a, b = old.splitlines(), work[name].text.splitlines()
        import difflib

        sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        changed = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")
        result.lines_changed[name] = (changed, len(b))
    result.notes.extend(gitcheckouts.advance_branches(repo_obj, moves))
    result.commits = dict(zip(names, shas, strict=True))
    return result
