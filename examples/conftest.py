"""Fixtures for the example benchmarks: a local HTTP server the HTTP benchmark talks to."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        size = int(self.path.rsplit("/", 1)[-1] or 0) if self.path.startswith("/bytes/") else 2
        body = b"x" * size
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep pytest's output clean


class _Server(ThreadingHTTPServer):
    # The standard library's listen backlog is 5: a sixth connection arriving at once (the
    # benchmark opens eight) is dropped and retried by the kernel a second later, a 1 s
    # "request" that has nothing to do with the response size.
    request_queue_size = 128
    daemon_threads = True


@pytest.fixture(scope="session")
def local_server() -> Iterator[str]:
    """Base URL of a threaded HTTP server on 127.0.0.1, started once per session."""
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
