"""Which variants changed since their last successful build (``--changed-only``), by what they
would build rather than by their bytes.

Two rules, the first that can decide:

1. **Derivation paths.** Each recipe's ``drvPath`` at the plan's commit and at the commit of its
   last success (``release.adapters.nixeval``: ``nix-instantiate``, read-only, for the platform
   each recipe builds on, ``systems``). Equal paths:
   nothing to build (a comment, re-indenting, a rename of a local binding that Nix folds away);
   different: build. Like nix-fast-build's ``--skip-cached`` and Flox's check-build, the question
   is what Nix would build, not how the file reads.
2. **Syntax trees,** when evaluation is impossible (no Nix on this host, or no network to fetch
   the pinned nixpkgs: the usual case away from a builder): the recipe's tree-sitter-nix tokens
   without comments and layout (``release.recipes.nixshape``), plus every file it names by a
   relative path (an imported recipe by its tokens, a patch by its bytes), plus
   ``.flox/env/manifest.lock`` for a recipe that uses the arguments Flox calls it with (the
   environment's nixpkgs). So a comment-only edit builds nothing, and a ``manifest.lock`` change
   rebuilds exactly the recipes that take their packages from it.

3. **The cache,** after the derivation rule: a variant whose derivation did not change is still
   built when the team's binary cache (``TORCHBOT_BUILD_CACHE``) lacks its output (its
   ``<hash>.narinfo``, ``release.adapters.nixcache.missing``), as ``--skip-cached`` does. Only
   evaluation gives output paths, so under the syntax rule the cache is not asked (said so);
   an ``s3://`` cache or one that does not answer is not asked either, saying why.

The plan says which rule decided, and why evaluation was impossible when it was.
``decide`` is pure; ``compare`` reads git and runs the evaluator.

May import: config, release.adapters, release.recipes.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from release.adapters import nixcache, nixeval
from release.adapters.git import read_paths
from release.recipes.nixshape import local_paths, shape, uses_arguments

RECIPES = ".flox/pkgs"
LOCK = ".flox/env/manifest.lock"


@dataclass(frozen=True)
class Last:
    """A variant's last successful build: where it was built, and the recipe it built."""

    commit: str | None
    blob: str | None


@dataclass
class Changes:
    changed: set[str] = field(default_factory=set)
    same: set[str] = field(default_factory=set)
    rule: str = ""
    uncached: set[str] = field(default_factory=set)  # unchanged, but missing from the cache: built again


def with_cache(found: Changes, outs: Mapping[str, str], lacks: set[str] | None, cache: str, why: str) -> Changes:
    """The derivation rule's answer after asking the cache for the unchanged variants' outputs
    (pure): an unchanged variant the cache lacks is built again (nix-fast-build's
    ``--skip-cached``); a cache that could not be asked leaves the answer as it was, saying why."""
    if lacks is None:
        return Changes(found.changed, found.same, f"{found.rule}; the cache was not asked: {why}")
    uncached = {p for p in found.same if p in lacks or p not in outs}
    return Changes(found.changed | uncached, found.same - uncached,
                   f"{found.rule}; cache {cache}: {len(uncached)} unchanged but missing, built again",
                   uncached)


def decide(now: Mapping[str, str | None], before: Mapping[str, str | None]) -> tuple[set[str], set[str]]:
    """(changed, same) of the packages in ``before``; an unknown fingerprint is a change (pure)."""
    changed, same = set(), set()
    for p, old in before.items():
        new = now.get(p)
        (same if old is not None and new is not None and old == new else changed).add(p)
    return changed, same


def compare(repo: Path, commit: str, last: Mapping[str, Last], *, evaluate: bool = True,
            cache: str | None = None, systems: Mapping[str, str | None] | None = None) -> Changes:
    """Which of ``last``'s packages changed between their last success and ``commit``; with a
    ``cache`` (TORCHBOT_BUILD_CACHE), an unchanged one whose output the cache lacks counts as
    changed (asked only where evaluation gave the output paths)."""
    if not last:
        return Changes(rule="nothing built before")
    why = "evaluation off"
    if evaluate:
        drvs, why, outs = _by_drv(repo, commit, last, systems)
        if drvs is not None:
            changed, same = decide(*drvs)
            found = Changes(changed, same, f"derivation paths ({nixeval.TOOL}): {len(changed)} changed, "
                                           f"{len(same)} unchanged")
            if cache and same:
                lacks, why = nixcache.missing(cache, {p: outs[p] for p in same if p in outs})
                found = with_cache(found, outs, lacks, nixcache.shown(cache), why)
            return found
    now = syntax(repo, commit, list(last))
    before: dict[str, str | None] = {}
    for old, pkgs in _by_commit(last).items():
        before.update(syntax(repo, old, pkgs) if old else dict.fromkeys(pkgs))
    changed, same = decide(now, before)
    unasked = "; the cache was not asked (without evaluation there are no output paths)" if cache and same else ""
    return Changes(changed, same, f"syntax trees without comments and layout, with the files they import "
                                  f"({why}): {len(changed)} changed, {len(same)} unchanged{unasked}")


def _by_commit(last: Mapping[str, Last]) -> dict[str | None, list[str]]:
    groups: dict[str | None, list[str]] = defaultdict(list)
    for p, b in sorted(last.items()):
        groups[b.commit].append(p)
    return groups


def _by_drv(repo: Path, commit: str, last: Mapping[str, Last], systems: Mapping[str, str | None] | None = None):
    found, why = nixeval.evaluate(repo, commit, sorted(last), systems=systems)
    if found is None:
        return None, f"evaluation impossible: {why}", {}
    now = {p: v.drv for p, v in found.items()}
    outs = {p: v.out for p, v in found.items()}
    before: dict[str, str | None] = {}
    for old, pkgs in _by_commit(last).items():
        if old is None:
            before.update(dict.fromkeys(pkgs))
            continue
        try:
            then, why = nixeval.drv_paths(repo, old, pkgs, systems=systems)
        except Exception:  # noqa: BLE001  the old commit is gone from this clone: those variants build
            then = None
        if then is None:
            return None, f"evaluation impossible at {old[:12]}: {why}", {}
        before.update(then)
    return (now, before), "", outs


def syntax(repo: Path, commit: str, packages: list[str]) -> dict[str, str | None]:
    """package -> its syntax fingerprint at ``commit`` (None: no such recipe there)."""
    texts: dict[str, str | None] = {}

    def read(paths: list[str]) -> None:
        want = [p for p in paths if p not in texts]
        if want:
            got = read_paths(repo, [f"{commit}:{p}" for p in want])
            texts.update({p: got.get(f"{commit}:{p}") for p in want})

    read([f"{RECIPES}/{p}.nix" for p in packages] + [LOCK])
    memo: dict[str, str | None] = {}

    def fingerprint(path: str, depth: int = 0) -> str | None:
        if path in memo:
            return memo[path]
        text = texts.get(path)
        if text is None:
            return None
        memo[path] = "…"  # an import cycle counts once
        h = hashlib.sha256(shape(text).encode() if path.endswith(".nix") else text.encode(errors="surrogateescape"))
        if path.endswith(".nix") and depth < 8:
            refs = [posixpath.normpath(posixpath.join(posixpath.dirname(path), r)) for r in local_paths(text)]
            read(refs)
            for r in refs:
                h.update(f"\0{r}\0{fingerprint(r, depth + 1)}".encode())
            if depth == 0 and uses_arguments(text):
                h.update(b"\0lock\0" + (texts.get(LOCK) or "").encode())
        memo[path] = h.hexdigest()
        return memo[path]

    return {p: fingerprint(f"{RECIPES}/{p}.nix") for p in packages}
