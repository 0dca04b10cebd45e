"""The command layer: what every front end (CLI, console chat, Slack) calls.
Each function takes a Context and returns a result object (config/results.py)."""

from __future__ import annotations

from typing import Any

from bot.answer import Answer
from release.context import Context
from bot.hardware import parse
from bot.select import recommend


def ask(ctx: Context, text: str) -> Answer:
    """Answer a free-text hardware question with a variant, reasons and warnings."""
    catalog = ctx.catalog
    return recommend(catalog, parse(catalog, text or ""), ctx.settings.flox_org)


class CatalogResult:
    def __init__(self, ctx: Context, problems: list[str] | None = None):
        self.catalog = ctx.catalog
        self.problems = problems or []

    def to_dict(self) -> dict[str, Any]:
        out = []
        for b in self.catalog.branches.values():
            kinds: dict[str, int] = {}
            for v in b.variants:
                kinds[v.kind] = kinds.get(v.kind, 0) + 1
            out.append(
                {
                    "branch": b.name,
                    "pytorch": b.pytorch,
                    "python": b.python,
                    "cuda": list(b.cuda_versions),
                    "purpose": b.purpose,
                    "pins": list(b.pins),
                    "variants": len(b.variants),
                    "by_kind": kinds,
                    "gpu_archs": sorted({v.gpu_arch for v in b.variants if v.gpu_arch}, key=lambda a: int(a[2:])),
                }
            )
        return {"source": self.catalog.source, "recommended": self.catalog.recommended, "branches": out,
                "problems": list(self.problems)}

    def text(self) -> str:
        d = self.to_dict()
        rows = [("branch", "pytorch", "python", "cuda", "pins", "variants", "purpose")]
        for b in d["branches"]:
            mark = " *" if b["branch"] == d["recommended"] else ""
            rows.append(
                (b["branch"] + mark, b["pytorch"], b["python"], "/".join(b["cuda"]) or "-",
                 ",".join(p[:7] for p in b["pins"]), str(b["variants"]), b["purpose"])
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.append(f"(* recommended; source: {d['source']})")
        if self.problems:
            lines.append(f"Problems ({len(self.problems)}):")
            lines.extend(f"  - {p}" for p in self.problems)
        return "\n".join(lines)


def catalog(ctx: Context, with_problems: bool = False) -> CatalogResult:
    """Branches, pins and counts; with a repository, also the files the reader could not use."""
    problems: list[str] = []
    repo = ctx.settings.repo_path
    if with_problems and repo is not None and ctx.use_repo:
        from config.catalog import load_catalog
        from release.recipes.reader import read_repository

        ctx.catalog  # raises a clear CatalogError for a path that is not such a repository
        problems = read_repository(repo, load_catalog()).all_problems
    return CatalogResult(ctx, problems)
