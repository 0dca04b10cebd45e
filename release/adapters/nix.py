"""The nix-tools adapter: the sha256 of a nixpkgs tarball as ``builtins.fetchTarball`` checks
it, computed by ``nix-prefetch-url --unpack`` (the NAR hash of the unpacked tree, base32).

The store: ``Settings.nix_store`` when set (passed as ``--store``); else nix's default store
when this user can write it or reach the daemon; else a private chroot store under the
temporary directory (``local?root=...``), so an unprivileged user without a daemon (a CI
runner with Debian's nix-bin) gets the same hash. The tarball is stored under the name
``source``, the path ``fetchTarball`` itself uses, so a later build on this machine finds it.

May import: config.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from config.errors import ExternalError

_HASH_RE = re.compile(r"^[0-9abcdfghijklmnpqrsvwxyz]{52}$")  # nix base32 sha256


class HashMismatch(ExternalError):
    """The tarball does not have the expected hash."""


def _default_store_usable() -> bool:
    store = Path(os.environ.get("NIX_STORE_DIR", "/nix/store"))
    state = Path(os.environ.get("NIX_STATE_DIR", "/nix/var/nix"))
    if os.environ.get("NIX_REMOTE"):
        return True  # the user chose a store
    if os.access(store, os.W_OK) and os.access(state, os.W_OK):
        return True
    return os.access(state / "daemon-socket" / "socket", os.W_OK)


def store_args(store: str | None) -> list[str]:
    if store:
        return ["--store", store]
    if _default_store_usable():
        return []
    root = Path(tempfile.gettempdir()) / f"torchbot-nix-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    return ["--store", f"local?root={root}"]


def prefetch_tarball(url: str, *, store: str | None = None, timeout: float = 900.0,
                     expected: str | None = None) -> str:
    """The sha256 (nix base32) of the unpacked tarball at ``url``. With ``expected``, nix
    skips the download when the store already holds that path, and :class:`HashMismatch` is
    raised when the tarball has another hash. Anything else that fails is ExternalError."""
    cmd = ["nix-prefetch-url", "--unpack", "--type", "sha256", "--name", "source", *store_args(store), url]
    if expected:
        cmd.append(expected)
    try:
        proc = subprocess.run(
            cmd, check=False, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise ExternalError("nix-prefetch-url is not installed (Debian: nix-bin); nothing was changed.") from None
    except subprocess.TimeoutExpired:
        raise ExternalError(f"Fetching {url} took longer than {timeout:.0f} s; nothing was changed.") from None
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        if any("hash mismatch" in line for line in lines):
            raise HashMismatch(f"The tarball {url} does not have the sha256 the recipes record.")
        detail = next((line for line in reversed(lines) if line.startswith("error")), lines[-1] if lines else "")
        raise ExternalError(f"Could not fetch the nixpkgs tarball {url} ({detail.removeprefix('error: ')}); "
                            "nothing was changed.")
    value = (proc.stdout.strip().splitlines() or [""])[-1].strip()
    if not _HASH_RE.match(value):
        raise ExternalError(f"nix-prefetch-url printed no sha256 for {url}; nothing was changed.")
    return value
