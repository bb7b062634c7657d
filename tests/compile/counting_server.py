"""A loopback HTTP server that serves a JSON Schema and counts the requests it gets.

A schema reference that escaped the graph would be fetched from here; tests assert it never is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class CountingServer:
    url: str
    requests: list[str] = field(default_factory=list)


@contextmanager
def counting_server() -> Iterator[CountingServer]:
    """Serve `{"type": "integer"}` at every path of http://127.0.0.1:<free port>/, recording each request."""
    body = json.dumps({"type": "integer"}).encode()
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.path} {self.headers.get('User-Agent')}")
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield CountingServer(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
