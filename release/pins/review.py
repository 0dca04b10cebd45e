"""The body of a bump pull request: what a reviewer needs to judge the new pin.

``gather(bp, plan, settings, client)`` collects the facts (the compare link and size, the
nixpkgs commits between the pins that touch torch or CUDA paths, torch and the default CUDA
set before and after, the variants the bump makes rebuild, per platform, and the tarball
hash); a nixpkgs API failure does not stop the PR, the body then says what could not be
listed. ``render(review)`` is pure: facts -> Markdown, ending with Renovate-style notes on
schedule, automerge, rebasing and status that say only what torchbot does.

May import: config, release.adapters, release.recipes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from config.errors import ExternalError
from config.naming import short
from release.adapters import git as gitops
from release.recipes.platforms import recipe_catalog, recipe_target

RECIPES_DIR = ".flox/pkgs"
# nixpkgs paths whose commits a torch/CUDA reviewer wants to see
WATCHED: dict[str, tuple[str, ...]] = {
    "torch": ("pkgs/development/python-modules/torch",),
    "CUDA": ("pkgs/development/cuda-modules", "pkgs/top-level/cuda-packages.nix"),
}
SHOWN = 30  # commits listed per area; the rest are counted
_IMPORT_RE = re.compile(r"import\s+\./([A-Za-z0-9._+-]+)\.nix")


@dataclass
class Review:
    branch: str
    labels: tuple[str, ...]
    old: str
    new: str
    source: str
    compare_url: str
    torch: tuple[str | None, str | None]
    cuda_sets: tuple[str, ...]
    cuda_default: tuple[str | None, str | None] = (None, None)
    total_commits: int | None = None
    compare_complete: bool = True
    commits: dict[str, list[dict]] = field(default_factory=dict)  # area -> [{"sha", "title", "url"}]
    unavailable: str | None = None  # why commits could not be listed
    rebuild: dict[str, int] = field(default_factory=dict)  # platform -> variants to rebuild
    recipes_moved: int = 0
    sha256: str | None = None
    tarball_url: str | None = None
    bump_cron: str | None = None
    head: str = ""


def _clean(title: str, limit: int = 100) -> str:
    """A nixpkgs commit title safe in Markdown: no mentions, no code spans, one line."""
    t = " ".join(title.split()).replace("`", "'").replace("@", "@\u200b")
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _version(attr: str | None) -> str:
    return attr.split("_", 1)[1].replace("_", ".") if attr and "_" in attr else "?"


def rebuild_counts(texts: dict[str, str], moved: set[str], catalog) -> dict[str, int]:
    """Variants a bump makes rebuild, per platform: the moved recipes and the companions
    that import one of them (pure). ``texts``: recipe path -> text."""
    names = {p.rsplit("/", 1)[-1][: -len(".nix")]: p for p in texts}
    moved_names = {n for n, p in names.items() if p in moved}
    rebuilt = set(moved_names)
    for n, p in names.items():
        if n not in rebuilt and any(m in moved_names for m in _IMPORT_RE.findall(texts[p])):
            rebuilt.add(n)
    counts: dict[str, int] = {}
    for n in rebuilt:
        platform = recipe_target(n, texts[names[n]], catalog).platform or "unknown"
        counts[platform] = counts.get(platform, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def gather(bp, plan, settings, client, head: str = "") -> Review:
    """The facts for the PR of one branch's bump (see the module docstring)."""
    from release.pins.hashes import tarball_url

    g = bp.edit.group
    old, new = g.pin, plan.new_rev
    web = getattr(settings, "nixpkgs_web_url", "https://github.com/NixOS/nixpkgs/").rstrip("/")
    r = Review(bp.branch, g.labels, old, new, plan.source, f"{web}/compare/{old}...{new}",
               (bp.torch_old, bp.torch_new), g.cuda_attrs, sha256=bp.sha256,
               tarball_url=tarball_url(settings.nixpkgs_tarball_url, new) if bp.sha256 else None,
               bump_cron=settings.bump_cron, head=head)
    moved = {p for p in bp.edit.changes if p.startswith(RECIPES_DIR + "/")}
    r.recipes_moved = len(moved)
    texts = gitops.read_files(gitops.open_repo(plan.repo_path), bp.tip, RECIPES_DIR)
    texts = {p: t for p, t in texts.items() if p.endswith(".nix")}
    texts.update({p: bp.edit.changes[p] for p in moved})
    r.rebuild = rebuild_counts(texts, moved, recipe_catalog())
    try:
        if g.cuda_attrs or any("CUDA" in label for label in g.labels):
            r.cuda_default = (client.cuda_default(old), client.cuda_default(new))
        cmp = client.compare(old, new)
        r.total_commits, r.compare_complete = cmp["total"], cmp["complete"]
        in_range = set(cmp["shas"])
        for area, paths in WATCHED.items():
            seen: dict[str, dict] = {}
            for path in paths:
                for c in client.path_commits(new, path, in_range, complete=cmp["complete"]):
                    seen.setdefault(c["sha"], c)
            order = {sha: i for i, sha in enumerate(cmp["shas"])}
            r.commits[area] = sorted(seen.values(), key=lambda c: order.get(c["sha"], 0))
    except ExternalError as err:
        r.unavailable = err.message
    return r


def render(r: Review) -> str:
    """The PR body (Markdown) for a :class:`Review` (pure)."""
    n_rebuild = sum(r.rebuild.values())
    lines = [
        f"Bumps the nixpkgs pin of `{r.branch}` ({', '.join(r.labels)}) from `{short(r.old)}` to "
        f"`{short(r.new)}` ({r.source}).",
        "",
        "| | before | after |",
        "|---|---|---|",
        f"| nixpkgs | [`{short(r.old)}`](https://github.com/NixOS/nixpkgs/commit/{r.old}) "
        f"| [`{short(r.new)}`](https://github.com/NixOS/nixpkgs/commit/{r.new}) |",
        f"| torch | {r.torch[0] or '?'} | {r.torch[1] or '?'} |",
    ]
    if r.cuda_default != (None, None):
        lines.append(
            f"| default CUDA (`cudaPackages`) | {_version(r.cuda_default[0])} | {_version(r.cuda_default[1])} |"
        )
    for attr in r.cuda_sets:
        lines.append(f"| `{attr}` (the recipes' CUDA) | {_version(attr)} | {_version(attr)} (present) |")
    size = f"{r.total_commits} commits" if r.total_commits is not None else "the commits"
    lines += ["", f"**Compare**: {r.compare_url} ({size})", ""]
    lines.append("### nixpkgs commits touching torch or CUDA")
    if r.unavailable:
        lines.append(f"Could not be listed: {r.unavailable} See the compare link.")
    else:
        if not r.compare_complete:
            lines.append(f"(The compare API listed part of the {r.total_commits} commits; these are among them.)")
        for area, paths in WATCHED.items():
            commits = r.commits.get(area, [])
            where = ", ".join(f"`{p}`" for p in paths)
            lines.append(f"- **{area}** ({where}): {len(commits) or 'none'}")
            for c in commits[:SHOWN]:
                link = f"[`{short(c['sha'])}`]({c['url']})" if c.get("url") else f"`{short(c['sha'])}`"
                lines.append(f"  - {link} {_clean(c['title'])}")
            if len(commits) > SHOWN:
                lines.append(f"  - … and {len(commits) - SHOWN} more (see the compare)")
    per = ", ".join(f"{n} {p}" for p, n in r.rebuild.items())
    lines += ["", "### Rebuild",
              f"**{n_rebuild} variants** to rebuild ({per or 'none'}): {r.recipes_moved} recipes move to the new "
              "pin" + (f", {n_rebuild - r.recipes_moved} companions import one of them." if n_rebuild > r.recipes_moved
                       else ".")]
    lines += ["", "---", "", "### Configuration", ""]
    cron = f" (`{r.bump_cron}`, `TORCHBOT_BUMP_CRON`)" if r.bump_cron else ""
    lines += [
        f"📅 **Schedule**: torchbot's weekly bump{cron} delivers as `TORCHBOT_BUMP_DELIVERY` says; with GitHub "
        "configured, as this pull request.",
        "",
        "🚦 **Automerge**: disabled. torchbot never merges; merge when the review and the builds are good.",
        "",
        f"♻ **Updating**: the next bump of `{r.branch}` force-pushes `{r.head or 'the bump branch'}` and edits "
        "this pull request instead of opening another.",
        "",
        "🔕 **Ignore**: close this PR. Nothing reopens it; a later bump opens a new one.",
        "",
        "### Status",
        "",
        f"- ✅ Guards passed: torch stays {'.'.join((r.torch[1] or '?').split('.')[:2])}"
        + (f"; present at `{short(r.new)}`: {', '.join(f'`{a}`' for a in r.cuda_sets)}." if r.cuda_sets else "."),
    ]
    if r.sha256:
        lines.append(f"- ✅ Tarball hash: `sha256 = \"{r.sha256}\"` written into {r.recipes_moved} recipes "
                     f"(`nix-prefetch-url --unpack` of {r.tarball_url}); the recipes keep the GitHub URL.")
    lines += [
        f"- ⏳ Builds: not started. After merging: `torchbot release build --branch {r.branch} --changed-only` "
        f"({n_rebuild} variants; `--backend github` runs them on each platform's runners).",
        "",
        "Opened by torchbot.",
    ]
    return "\n".join(lines) + "\n"
