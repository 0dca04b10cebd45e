"""What each recipe would build: its derivation path, evaluated by ``nix-instantiate``.

``drv_paths`` extracts the repository's ``.flox`` at a commit into a temporary directory and
evaluates every asked recipe's ``drvPath`` and ``outPath`` in one ``nix-instantiate --eval --strict --json``
(read-only: nothing is written to the store, nothing is built). A recipe that is a function is
called with its defaults (``{ pkgs ? import <nixpkgs> {} }:``). Each recipe is evaluated for the
platform it builds on (``systems``: package -> ``aarch64-linux``, ``aarch64-darwin``, ...), one
evaluation per platform with ``--option system``, so ``import <nixpkgs> {}`` gives that platform's
packages and the output path is the one its runner builds and pushes to the cache, not this
host's. Evaluation fetches what the
recipes pin (their nixpkgs tarball), so without Nix, or without the network for a pin not
already in the store, it is impossible: the answer is then None and one line saying why, and
the caller decides by the recipes' syntax instead (``release.builds.changes``).

May import: config.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from config.errors import ExternalError

TOOL = "nix-instantiate"
_EXPR = ("builtins.mapAttrs (n: f: let r = import f; d = (if builtins.isFunction r then r { } else r); "
         "in { drv = d.drvPath; out = d.outPath; }) (builtins.fromJSON (builtins.readFile FILES))")


def available() -> bool:
    return shutil.which(TOOL) is not None


def drv_paths(repo: Path, commit: str, packages: list[str], timeout: float = 120.0,
              systems: Mapping[str, str | None] | None = None) -> tuple[dict[str, str] | None, str]:
    """(package -> drv path, "") or (None, why evaluation is impossible), at ``commit``."""
    found, why = evaluate(repo, commit, packages, timeout, systems)
    return (None if found is None else {p: v.drv for p, v in found.items()}), why


class Paths(NamedTuple):
    """What a recipe would build (``drv``) and the store path of its output (``out``: the path a
    binary cache serves as ``<hash>.narinfo``)."""

    drv: str
    out: str


def evaluate(repo: Path, commit: str, packages: list[str], timeout: float = 120.0,
             systems: Mapping[str, str | None] | None = None) -> tuple[dict[str, Paths] | None, str]:
    """(package -> its derivation and output paths, "") or (None, why evaluation is impossible),
    at ``commit``, one evaluation per platform of ``systems`` (a package it does not name: this
    host's)."""
    if not packages:
        return {}, ""
    if not available():
        return None, f"no {TOOL} on this host"
    groups: dict[str | None, list[str]] = {}
    for p in packages:
        groups.setdefault((systems or {}).get(p), []).append(p)
    with tempfile.TemporaryDirectory(prefix="torchbot-eval-") as d:
        tree = Path(d)
        try:
            archive = subprocess.run(["git", "-C", str(repo), "archive", commit, ".flox"], capture_output=True,
                                     check=True, timeout=timeout)
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True, capture_output=True,
                           timeout=timeout)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            raise ExternalError(f"Could not read .flox at {commit[:12]} in {repo}: {err}") from None
        found: dict[str, Paths] = {}
        for system, group in sorted(groups.items(), key=lambda kv: kv[0] or ""):
            paths, why = _evaluate_in(tree, group, system, timeout)
            if paths is None:
                return None, why
            found.update(paths)
    return found, ""


def _evaluate_in(tree: Path, packages: list[str], system: str | None,
                 timeout: float) -> tuple[dict[str, Paths] | None, str]:
    files = {p: str(tree / ".flox" / "pkgs" / f"{p}.nix") for p in packages}
    listing = tree / f"torchbot-recipes-{system or 'host'}.json"
    listing.write_text(json.dumps(files))
    expr = _EXPR.replace("FILES", str(listing))
    on = ["--option", "system", system] if system else []
    try:
        proc = subprocess.run([TOOL, "--readonly-mode", "--eval", "--strict", "--json",
                               "--option", "download-attempts", "1", "--option", "connect-timeout", "5", *on,
                               "-E", expr], capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"{TOOL} took more than {timeout:g} s"
    if proc.returncode != 0:
        errors = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip().startswith("error:")]
        why = (errors[-1] if errors else (proc.stderr.strip().splitlines() or ["failed"])[-1])[:200]
        return None, f"{TOOL}: {why}"
    try:
        return {str(k): Paths(str(v["drv"]), str(v["out"])) for k, v in json.loads(proc.stdout).items()}, ""
    except (ValueError, AttributeError, KeyError, TypeError):
        return None, f"{TOOL} answered something other than derivation paths"
