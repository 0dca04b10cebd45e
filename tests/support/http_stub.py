"""What the GitHub and nixpkgs stand-ins share: the loopback HTTP server they run on (every
method they answer goes to the stand-in's ``_handle(request, method)``), and GitHub's paging."""

from __future__ import annotations

import math
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

MAX_PER_PAGE, DEFAULT_PER_PAGE = 100, 30  # GitHub's: per_page defaults to 30 and is capped at 100


def serve(fake) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 (a free port) whose GET, POST, PATCH and PUT go to ``fake._handle``;
    the caller starts ``serve_forever`` in its own thread."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            fake._handle(self, "GET")

        def do_POST(self):
            fake._handle(self, "POST")

        def do_PATCH(self):
            fake._handle(self, "PATCH")

        def do_PUT(self):
            fake._handle(self, "PUT")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


def page(req, base_url: str, path: str, query: dict, total: int) -> tuple[slice, dict]:
    """The slice of one page of ``total`` items and its Link header, as GitHub pages
    (``per_page`` default 30, at most 100; links on the host the request named)."""
    try:
        per_page = min(MAX_PER_PAGE, max(1, int(query.get("per_page", DEFAULT_PER_PAGE))))
        number = max(1, int(query.get("page", 1)))
    except ValueError:
        per_page, number = DEFAULT_PER_PAGE, 1
    last = max(1, math.ceil(total / per_page))
    host = req.headers.get("Host") or base_url.split("//", 1)[1].rstrip("/")

    def link(n: int) -> str:
        return f"http://{host}{path}?{urlencode({**query, 'page': n})}"

    rels = []
    if number < last:
        rels += [f'<{link(number + 1)}>; rel="next"', f'<{link(last)}>; rel="last"']
    if number > 1:
        rels += [f'<{link(number - 1)}>; rel="prev"', f'<{link(1)}>; rel="first"']
    return slice((number - 1) * per_page, number * per_page), ({"Link": ", ".join(rels)} if rels else {})
