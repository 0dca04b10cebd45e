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
