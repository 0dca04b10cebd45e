"""The loopback HTTP server the GitHub and nixpkgs stand-ins run on: every method they answer
goes to the stand-in's ``_handle(request, method)``."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
