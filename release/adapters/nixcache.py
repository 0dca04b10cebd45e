"""The team's Nix binary cache (``TORCHBOT_BUILD_CACHE``): whether it answers.

A Nix binary cache serves ``nix-cache-info`` at its root (the file ``nix copy --to`` writes
first and every substituter reads). ``check`` asks for it before anything is dispatched that
pushes to or substitutes from the cache: an ``http(s)://`` cache (attic, cachix, an S3 bucket's
website endpoint) over HTTP, a ``file://`` cache on disk. An ``s3://`` cache needs the
runners' credentials, which torchbot does not hold: it is not checked from here, and the
answer says so. The URL is said without its query (which may carry a profile or region) and
never with a password.

May import: config.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from config.errors import ExternalError, UsageError

SCHEMES = ("http", "https", "file", "s3")


def shown(url: str) -> str:
    """The cache URL as it may be said: no query, no user or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check(url: str, timeout: float = 10.0) -> str:
    """One line on the cache when it answers ("answers", or why it is not checked); raises
    ``ExternalError`` (one line) when it does not, ``UsageError`` for a URL Nix would not take."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise UsageError(f"TORCHBOT_BUILD_CACHE '{shown(url)}' is not a Nix binary cache URL "
                         f"({', '.join(s + '://' for s in SCHEMES)}).")
    if parts.scheme == "s3":
        return f"{shown(url)}: an S3 cache, not checked from here (the runners hold its credentials)"
    if parts.scheme == "file":
        info = Path(parts.path) / "nix-cache-info"
        if not Path(parts.path).is_dir():
            raise ExternalError(f"The build cache {shown(url)} does not exist; nothing was dispatched.")
        return f"{shown(url)}: " + ("answers" if info.is_file() else "empty (the first push creates it)")
    target = url.split("?", 1)[0].rstrip("/") + "/nix-cache-info"
    try:
        resp = httpx.get(target, timeout=timeout, follow_redirects=True)
    except httpx.HTTPError as err:
        raise ExternalError(f"The build cache {shown(url)} does not answer ({type(err).__name__}); "
                            "nothing was dispatched.") from None
    if resp.status_code != 200 or "StoreDir:" not in resp.text:
        raise ExternalError(f"The build cache {shown(url)} is not a Nix binary cache (nix-cache-info: HTTP "
                            f"{resp.status_code}); nothing was dispatched.")
    return f"{shown(url)}: answers"


def narinfo_name(store_path: str) -> str:
    """The file a binary cache serves for a store path: ``<hash>.narinfo`` (pure)."""
    return store_path.rsplit("/", 1)[-1].split("-", 1)[0] + ".narinfo"


def missing(url: str, store_paths: dict[str, str], timeout: float = 10.0) -> tuple[set[str] | None, str]:
    """Which of ``store_paths`` (key -> output path) the cache lacks, as ``nix path-info --store``
    asks it: its ``<hash>.narinfo``, on disk (``file://``) or over HTTP (a 200 has it, a 404 or
    403 lacks it, as Nix's HTTP store reads them). (None, why) when it cannot be asked: an
    ``s3://`` cache (the runners hold its credentials) or a cache that does not answer; the
    caller then decides without it."""
    if not store_paths:
        return set(), ""
    parts = urlsplit(url)
    if parts.scheme == "s3":
        return None, f"{shown(url)} is an S3 cache, not asked from here (the runners hold its credentials)"
    if parts.scheme == "file":
        root = Path(parts.path)
        return {k for k, p in store_paths.items() if not (root / narinfo_name(p)).is_file()}, ""
    if parts.scheme not in ("http", "https"):
        return None, f"{shown(url)} is not a binary cache torchbot can ask"
    base = url.split("?", 1)[0].rstrip("/")
    lacks: set[str] = set()
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as client:
            for key, path in sorted(store_paths.items()):
                resp = client.head(f"{base}/{narinfo_name(path)}")
                if resp.status_code in (404, 403):
                    lacks.add(key)
                elif resp.status_code != 200:
                    return None, f"{shown(url)} answered HTTP {resp.status_code} for a narinfo"
    except httpx.HTTPError as err:
        return None, f"{shown(url)} does not answer ({type(err).__name__})"
    return lacks, ""
