"""Reproducible pins: a bump records the nixpkgs tarball's sha256 in every recipe it moves.

``record_hashes(plan, settings)`` runs after the bump's guards and before anything is
written. It hashes the new revision's tarball once (``TORCHBOT_NIXPKGS_TARBALL_URL`` + rev,
through the nix adapter's ``nix-prefetch-url --unpack``) and writes ``sha256`` into every
recipe of each moving pin group, replacing whatever hash was there. A branch already on the
revision gets its missing or wrong hashes repaired: a recorded hash is checked first (nix
does not download when its store already holds that path). When the tarball cannot be
fetched the bump refuses: nothing has been written by then.

May import: config, release.adapters, release.pins.
"""

from __future__ import annotations

from collections.abc import Callable

from config.errors import ExternalError, RefusedError
from config.naming import short
from release.adapters import git as gitops
from release.adapters.nix import HashMismatch, prefetch_tarball
from release.pins.hashes import set_tarball_hash, tarball_hashes, tarball_url

Prefetch = Callable[..., str]


class _Hasher:
    """The new revision's hash, fetched at most once and only when needed."""

    def __init__(self, url: str, settings, prefetch: Prefetch):
        self.url, self.settings, self.prefetch = url, settings, prefetch
        self.value: str | None = None

    def _run(self, expected: str | None = None) -> str:
        s = self.settings
        try:
            return self.prefetch(self.url, store=s.nix_store, timeout=s.prefetch_timeout, expected=expected)
        except HashMismatch:
            raise
        except ExternalError as err:
            raise RefusedError(f"Refusing the bump: the pin's tarball cannot be hashed. {err.message}") from None

    def get(self) -> str:
        if self.value is None:
            self.value = self._run()
        return self.value

    def check(self, recorded: str) -> str:
        """The right hash when ``recorded`` may already be it."""
        if self.value is None:
            try:
                self.value = self._run(expected=recorded)
            except HashMismatch:
                self.value = self._run()
        return self.value


def record_hashes(plan, settings, prefetch: Prefetch = prefetch_tarball) -> None:
    """Write the new revision's sha256 into the plan's edits (see the module docstring)."""
    rev = plan.new_rev
    hasher = _Hasher(tarball_url(settings.nixpkgs_tarball_url, rev), settings, prefetch)
    repo = None
    for bp in plan.branches:
        edit = bp.edit
        if not edit.up_to_date:
            if not edit.changes:
                continue
            sha = hasher.get()
            for path in edit.group.recipes:
                if path in edit.changes:
                    edit.changes[path] = set_tarball_hash(edit.changes[path], rev, sha)
                    edit.lines_changed += 1  # the sha256 line
            bp.sha256 = sha
            continue
        repo = repo or gitops.open_repo(plan.repo_path)
        texts = gitops.read_files(repo, bp.tip, ".flox/pkgs")
        recorded = {p: tarball_hashes(texts[p], rev) for p in edit.group.recipes if p in texts}
        values = {h for hs in recorded.values() for h in hs}
        if values == {None} or not values:
            sha = hasher.get()
        elif len(values) == 1:
            sha = hasher.check(values.pop())
        else:
            sha = hasher.get()
        bp.sha256 = sha
        base = {p: edit.changes.get(p, texts[p]) for p in recorded}  # a source move on this pin edits them too
        fixed = {p: set_tarball_hash(base[p], rev, sha) for p in recorded}
        fixed = {p: t for p, t in fixed.items() if t != base[p]}
        if fixed:
            edit.changes.update(fixed)
            edit.lines_changed += len(fixed)
            if not getattr(bp, "pytorch_new", None):
                bp.message = f"nixpkgs: record the sha256 of pin {short(rev)} ({len(fixed)} recipes)"


def record_all_hashes(plan, settings, prefetch: Prefetch = prefetch_tarball) -> None:
    """:func:`record_hashes` for a plan and its companion plans (``--with-companions``: the
    build-torchvision branches move to the same revision), hashing each tarball once."""
    done: dict[str, str] = {}

    def once(url: str, **kw) -> str:
        # by URL alone: a hash found with or without an expected one is the tarball's hash (a
        # wrong expected hash raises and caches nothing), so a companion's check reuses it
        if url not in done:
            done[url] = prefetch(url, **kw)
        return done[url]

    for p in [plan, *getattr(plan, "companions", [])]:
        record_hashes(p, settings, once)
