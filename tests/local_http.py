"""A throwaway HTTP server on loopback for unit tests of HTTP clients."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve `handler` on a free loopback port in a thread; the port."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


class SseChatHandler(BaseHTTPRequestHandler):
    """A stand-in chat server: a role chunk, then text; a 400 for the prompt "bad".
    `stream` writes the 200's events (override it to change them)."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["messages"][0]["content"] == "bad":
            payload = b'{"error": {"message": "too long"}}'
            self.send_response(400)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.stream(body)
        self.wfile.write(b"data: [DONE]\n\n")

    def stream(self, body: dict[str, Any]) -> None:
        for delta in ({"role": "assistant", "content": ""}, {"content": "hi"}):
            self.send_event({"choices": [{"delta": delta}]})

    def send_event(self, event: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass
