"""The build cache check (release/adapters/nixcache.py) against a real HTTP server on 127.0.0.1:
a Nix binary cache answers ``nix-cache-info``; anything else is one line, and a URL with a
password is never said with it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from config.errors import ExternalError, UsageError
from release.adapters.nixcache import check, shown
from tests.support import http_stub


class _Cache:
    def __init__(self, body: str, status: int = 200):
        self.body, self.status, self.asked = body, status, []
        self.server = http_stub.serve(self)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/cache"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handle(self, req, method: str) -> None:
        self.asked.append((method, req.path))
        data = self.body.encode()
        req.send_response(self.status)
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_cache_that_serves_nix_cache_info_answers() -> None:
    cache = _Cache("StoreDir: /nix/store\nWantMassQuery: 1\nPriority: 40\n")
    try:
        assert check(cache.url + "?priority=30") == f"{cache.url}: answers"
        assert cache.asked == [("GET", "/cache/nix-cache-info")]
    finally:
        cache.close()


def test_a_server_that_is_not_a_cache_is_one_line() -> None:
    cache = _Cache("<html>not found</html>", status=404)
    try:
        with pytest.raises(ExternalError) as err:
            check(cache.url)
        assert err.value.message == (f"The build cache {cache.url} is not a Nix binary cache (nix-cache-info: "
                                     "HTTP 404); nothing was dispatched.")
    finally:
        cache.close()


def test_file_and_s3_caches_and_bad_urls(tmp_path: Path) -> None:
    assert check(f"file://{tmp_path}") == f"file://{tmp_path}: empty (the first push creates it)"
    with pytest.raises(ExternalError):
        check(f"file://{tmp_path / 'missing'}")
    assert "not checked from here" in check("s3://bucket?region=eu-west-1&profile=ci")
    with pytest.raises(UsageError):
        check("ftp://example.org/cache")
    assert shown("https://user:secret@cache.example.org:8443/x?token=abc") == "https://cache.example.org:8443/x"
