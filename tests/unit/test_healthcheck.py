"""`python -m app.healthcheck` against a real local HTTP server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from app.healthcheck import api_key, check, health_url, main
from tests.local_http import serving


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Health(BaseHTTPRequestHandler):
    status = 200
    seen_auth: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        Health.seen_auth.append(self.headers.get("Authorization"))
        code = Health.status if self.path == "/health" else 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b'{"status":"healthy"}')

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    try:
        with serving(Health) as port:
            yield port
    finally:
        Health.status = 200
        Health.seen_auth.clear()


def test_url_follows_gateway_port() -> None:
    assert health_url({}) == "http://127.0.0.1:8000/health"
    assert health_url({"GATEWAY_PORT": "9001"}) == "http://127.0.0.1:9001/health"


def test_healthy_and_unhealthy(server: int) -> None:
    env = {"GATEWAY_PORT": str(server)}
    assert main([], env) == 0
    Health.status = 503
    assert main([], env) == 1


def test_nothing_listening_is_unhealthy_quickly() -> None:
    assert check(f"http://127.0.0.1:{free_port()}/health", timeout=2) is False


def test_sends_the_api_key(server: int, tmp_path: Path) -> None:
    assert main([], {"GATEWAY_PORT": str(server), "GATEWAY_API_KEY": " k1 ,k2"}) == 0
    keys = tmp_path / "keys"
    keys.write_text("# comment\n\nfrom-file\n")
    assert main([], {"GATEWAY_PORT": str(server), "GATEWAY_API_KEY_FILE": str(keys)}) == 0
    assert Health.seen_auth == ["Bearer k1", "Bearer from-file"]


def test_api_key_sources(tmp_path: Path) -> None:
    assert api_key({}) == ""
    assert api_key({"GATEWAY_API_KEY_FILE": str(tmp_path / "missing")}) == ""
