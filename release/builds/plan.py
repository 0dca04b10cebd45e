"""What a build covers (pure, no I/O): the items of a build plan, chosen by globs,
``--changed-only`` against the last successful recipe blob and ``--resume``; the companion ->
pytorch ordering; the nixpkgs pin of a recipe; where each variant builds (its recipe's
platform, ``release.recipes.platforms``): what the local host can build, and the GitHub
runner labels of each platform.

May import: config, release.recipes.platforms. Never git, HTTP, processes or the state DB.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from release.recipes.platforms import BuildTarget, recipe_target

RECIPE_DIR = ".flox/pkgs"
KINDS = ("pytorch", "torchvision", "torchaudio")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_PIN_RE = re.compile(r"nixpkgs/archive/([0-9a-f]{7,40})")
_IMPORT_RE = re.compile(r"import\s+\./((?:pytorch)[A-Za-z0-9._+-]*)\.nix")



@dataclass(frozen=True)
class BuildItem:
    package: str
    blob: str
    pin: str | None = None
    after: str | None = None  # the pytorch variant a companion waits for (when in this build)
    platform: str | None = None  # where it builds (its recipe's platform)
    features: tuple[str, ...] = ()  # requiredSystemFeatures
    note: str | None = None  # where the recipe text and the hardware disagree
    runs_on: tuple[str, ...] = ()  # GitHub runner labels (github backend)

    @property
    def kind(self) -> str:
        return self.package.split("-", 1)[0]

    def to_dict(self, backend: str = "local") -> dict:
        d = {"package": self.package, "platform": self.platform, "recipe_blob": self.blob, "pin": self.pin,
             "after": self.after}
        if backend == "github":
            d["runs_on"] = list(self.runs_on)
        if self.features:
            d["features"] = list(self.features)
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class Skip:
    """A selected variant this backend does not build, and why."""

    package: str
    platform: str | None
    reason: str

    def to_dict(self) -> dict:
        return {"package": self.package, "platform": self.platform, "reason": self.reason}


@dataclass
class BuildPlan:
    repo: Path
    branch: str
    commit: str
    items: list[BuildItem]
    unchanged: list[str] = field(default_factory=list)
    backend: str = "local"
    skipped: list[Skip] = field(default_factory=list)
    tool: str | None = None  # how the local backend builds here (``Builder.describe()``)
    head: str | None = None  # the remote branch GitHub builds (a bump PR's head); None: the branch itself
    cache: str | None = None  # the binary cache the jobs push to / substitute from (shown form); None: none
    publish_only: bool = False  # a publish after the merge of what a pull request's head built
    rule: str | None = None  # which rule decided what changed (--changed-only): derivation or syntax, and why
    order: str | None = None  # how the items are ordered (longest first from history), when not by name
    adopted: dict[str, str] = field(default_factory=dict)  # package -> the GitHub run (request id) already building it
    github: str | None = None  # the GitHub repository (owner/name) of a companion repository; None: the first's

    @property
    def ref(self) -> str:
        """The git ref the build runs from (the GitHub dispatch ref): a bump PR's head branch,
        else the branch itself. ``commit`` is that ref's head on the remote (what GitHub has)."""
        return self.head or self.branch

    @property
    def publishes(self) -> bool:
        """Whether the GitHub workflow publishes what it builds: only a build of the branch's
        own head; a bump PR's head is built and reported, and published once merged."""
        return self.backend == "github" and self.ref == self.branch

    def to_dict(self) -> dict:
        return {
            "branch": self.branch,
            "ref": self.ref,
            "commit": self.commit,
            **({"publish": self.publishes} if self.backend == "github" else {}),
            "backend": self.backend,
            "build": [i.to_dict(self.backend) for i in self.items],
            "platforms": platform_counts(self.items),
            "skipped": [s.to_dict() for s in self.skipped],
            "unchanged": list(self.unchanged),
            **({"tool": self.tool} if self.tool else {}),
            **({"cache": self.cache, "substitute": self.substitute} if self.backend == "github" else {}),
            **({"publish_only": True} if self.publish_only else {}),
            **({"rule": self.rule} if self.rule else {}),
            **({"order": self.order} if self.order else {}),
        }

    @property
    def substitute(self) -> bool:
        """Whether the jobs substitute from the cache instead of building: a publish after the
        merge with a cache configured."""
        return self.publish_only and bool(self.cache)

    def cache_line(self) -> str | None:
        """What the cache means for this plan, plainly (the github backend)."""
        if self.backend != "github":
            return None
        if self.substitute:
            return (f"Publishing from the cache {self.cache}: the outputs built at the pull request's head "
                    "are substituted, not built again.")
        if self.cache:
            return (f"Outputs go to the cache {self.cache}; publishing after the merge substitutes them"
                    + ("." if not self.publishes else " (this build publishes them itself)."))
        if self.publish_only:
            return ("No build cache (TORCHBOT_BUILD_CACHE unset): publishing builds these variants again on "
                    "their runners.")
        if self.publishes:
            return "No build cache (TORCHBOT_BUILD_CACHE unset); this build publishes what it builds."
        return ("No build cache (TORCHBOT_BUILD_CACHE unset): publishing after the merge builds these variants "
                "again on their runners.")

    def text(self) -> str:
        where = self.backend
        if self.backend == "github":
            where = f"github, ref {self.ref}" + ("" if self.publishes else ", not published: a pull request's head")
        verb = "Publish" if self.publish_only else "Build"
        lines = [f"{verb} {len(self.items)} variant(s) of {self.branch} at {self.commit[:12]} ({where})."]
        if self.tool:
            lines.append(f"  {self.tool[0].upper()}{self.tool[1:]}.")
        if self.cache_line():
            lines.append(f"  {self.cache_line()}")
        if self.rule:
            lines.append(f"  Changed: {self.rule}.")
        if self.order:
            lines.append(f"  Order: {self.order}.")
        for platform, n in platform_counts(self.items).items():
            runners = {" ".join(i.runs_on) for i in self.items if i.platform == platform and i.runs_on}
            on = f" on {', '.join(sorted(runners))}" if runners else ""
            lines.append(f"  {n} {platform}{on}")
        for i in self.items:
            lines.append(f"  {i.package}" + (f"  (after {i.after})" if i.after else "")
                         + (f"  [{i.note}]" if i.note else ""))
        for s in self.skipped:
            lines.append(f"  skipped {s.package}: {s.reason}")
        if self.unchanged:
            lines.append(f"{len(self.unchanged)} unchanged since their last successful build: skipped.")
        return "\n".join(lines)


def platform_counts(items: Iterable[BuildItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in items:
        key = i.platform or "unknown"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def recipe_pin(text: str) -> str | None:
    """The nixpkgs commit a recipe fetches, if it names one."""
    m = _PIN_RE.search(text)
    return m.group(1) if m else None


def companion_of(package: str, text: str, packages: Iterable[str]) -> str | None:
    """The pytorch variant a torchvision/torchaudio recipe builds against: the recipe's
    ``import ./pytorch-...nix``, else the same name with the pytorch prefix."""
    kind = package.split("-", 1)[0]
    if kind == "pytorch":
        return None
    m = _IMPORT_RE.search(text)
    if m:
        return m.group(1)
    candidate = "pytorch-" + package.split("-", 1)[1]
    return candidate if candidate in set(packages) else None


def select_packages(packages: Iterable[str], globs: Iterable[str] | None) -> list[str]:
    pkgs = sorted(packages)
    globs = [g for g in (globs or []) if g]
    if not globs:
        return pkgs
    chosen = [p for p in pkgs if any(fnmatch.fnmatchcase(p, g) for g in globs)]
    return chosen


def order_items(items: list[BuildItem]) -> list[BuildItem]:
    """pytorch variants first, then companions: a stable order that respects ``after``."""
    return sorted(items, key=lambda i: (i.after is not None, i.package))


def longest_first(items: list[BuildItem], seconds: Mapping[str, float]) -> tuple[list[BuildItem], str | None]:
    """The items longest first by their recorded build time (``seconds``: package -> its last
    build's duration), pytorch variants before the companions that wait for them, and a line
    saying so (None with no history). GitHub starts matrix entries in order, so under a
    concurrency cap this is the longest-processing-time-first list schedule, whose makespan is
    within 4/3 of the optimum and near max(longest job, total work / cap) for many jobs. A
    variant with no history counts as the longest known (a new variant is not left for last)."""
    known = [seconds[i.package] for i in items if i.package in seconds]
    if not known:
        return items, None
    top = max(known)

    def key(i: BuildItem) -> tuple:
        return (i.after is not None, -seconds.get(i.package, top), i.package)

    return sorted(items, key=key), (f"longest first from the recorded build times of {len(known)} of "
                                    f"{len(items)} variant(s)")


def plan_items(
    recipes: dict[str, str],
    texts: dict[str, str],
    selected: list[str],
    *,
    last_success_blobs: dict[str, str] | None = None,
) -> tuple[list[BuildItem], list[str]]:
    """The items to build for ``selected`` packages. With ``last_success_blobs`` (changed-only)
    a package is built when its blob differs from its last success, or when the pytorch
    variant it imports is being built. Returns (items, unchanged)."""
    deps = {p: companion_of(p, texts.get(p, ""), recipes) for p in selected}
    chosen = set(selected)
    if last_success_blobs is not None:
        chosen = {p for p in selected if last_success_blobs.get(p) != recipes[p]}
        chosen |= {p for p in selected if deps[p] and deps[p] in chosen}
    items = [
        BuildItem(p, recipes[p], recipe_pin(texts.get(p, "")), deps[p] if deps[p] in chosen else None)
        for p in selected
        if p in chosen
    ]
    unchanged = [p for p in selected if p not in chosen]
    return order_items(items), unchanged


def with_targets(items: list[BuildItem], texts: Mapping[str, str], catalog) -> list[BuildItem]:
    """The items with the platform and features their recipes ask for (the reader's facts)."""
    out = []
    for i in items:
        t: BuildTarget = recipe_target(i.package, texts.get(i.package, ""), catalog)
        out.append(replace(i, platform=t.platform, features=t.features, note=t.note))
    return out


def _drop(items: list[BuildItem], skipped: list[Skip]) -> tuple[list[BuildItem], list[Skip]]:
    """Companions whose pytorch variant is skipped are skipped too (they would wait forever)."""
    gone = {s.package for s in skipped}
    kept = []
    for i in items:
        if i.after and i.after in gone:
            skipped.append(Skip(i.package, i.platform, f"its pytorch variant {i.after} is skipped"))
            gone.add(i.package)
        else:
            kept.append(i)
    return kept, skipped


def hold_back(items: list[BuildItem], busy: Mapping[str, str]) -> tuple[list[BuildItem], list[Skip]]:
    """Items another build holds (``busy``: package -> why, e.g. "already building since …") are
    skipped, and the companions waiting for them."""
    kept, skipped = [], []
    for i in items:
        if i.package in busy:
            skipped.append(Skip(i.package, i.platform, busy[i.package]))
        else:
            kept.append(i)
    return _drop(kept, skipped)


def place_local(items: list[BuildItem], host_platforms: Iterable[str]) -> tuple[list[BuildItem], list[Skip]]:
    """What this host builds: the items whose platform is one of ``host_platforms``."""
    hosts = tuple(host_platforms)
    kept, skipped = [], []
    for i in items:
        if i.platform is None or i.platform in hosts:
            kept.append(i)
        else:
            skipped.append(Skip(i.package, i.platform,
                                f"{i.platform} recipe; this host builds {', '.join(hosts)}"))
    return _drop(kept, skipped)


def runner_labels(platform: str | None, features: Iterable[str], runners: Mapping[str, list[str]],
                  big_parallel: Mapping[str, list[str]]) -> tuple[str, ...]:
    """The runs-on labels of a variant: the big-parallel pool for recipes requiring
    ``big-parallel`` when one is set for the platform, else the platform's runners."""
    if platform is None:
        return ()
    if "big-parallel" in features and big_parallel.get(platform):
        return tuple(big_parallel[platform])
    return tuple(runners.get(platform) or ())


def place_github(items: list[BuildItem], runners: Mapping[str, list[str]],
                 big_parallel: Mapping[str, list[str]]) -> tuple[list[BuildItem], list[Skip]]:
    """Every item with its runner labels; items of a platform without runners are skipped."""
    kept, skipped = [], []
    for i in items:
        labels = runner_labels(i.platform, i.features, runners, big_parallel)
        if labels:
            kept.append(replace(i, runs_on=labels))
        else:
            skipped.append(Skip(i.package, i.platform,
                                f"no GitHub runner for {i.platform or 'an unknown platform'} "
                                "(set TORCHBOT_GITHUB_RUNNERS)"))
    return _drop(kept, skipped)
