"""bench.cold_start's pure parts and its bursts (against a loopback SSE server)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from bench.cold_start import burst_sizes, burst_summary, run_bursts
from tests.local_http import serving


def test_burst_sizes_parse_and_reject_nonsense() -> None:
    assert burst_sizes("1,16,17,1") == [1, 16, 17, 1]
    for bad in ("", "0,1", "1,-2"):
        with pytest.raises(ValueError):
            burst_sizes(bad)


def test_burst_summary_counts_failures_and_takes_ttfts_of_the_rest() -> None:
    samples: list[dict[str, float] | None] = [{"ttft_ms": 10.0}, None, {"ttft_ms": 30.0}]
    out = burst_summary(samples, 0.0456)
    assert (out["size"], out["failed"], out["wall_ms"]) == (3, 1, 45.6)
    assert (out["ttft_ms_p50"], out["ttft_ms_max"]) == (20.0, 30.0)
    assert burst_summary([None], 0.0)["ttft_ms_p50"] is None


class _Gate(BaseHTTPRequestHandler):
    """Answers only once `waiting` requests are in at the same time (a burst at once)."""

    barrier = threading.Barrier(1)
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(body["messages"][0]["content"])
        try:
            self.barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            self.send_response(503)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in (
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "a"}}]},
            {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
        ):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_bursts_requests_go_at_once_each_with_its_own_prompt() -> None:
    bodies = [{"messages": [{"role": "user", "content": f"p{i}"}]} for i in range(5)]
    _Gate.seen = []
    with serving(_Gate) as port:
        _Gate.barrier = threading.Barrier(1)
        first = run_bursts(port, bodies[:1], [1])
        _Gate.barrier = threading.Barrier(4)  # fails unless all four are in at once
        (second,) = run_bursts(port, bodies[1:], [4])
    assert first[0]["failed"] == 0 and second["failed"] == 0 and second["size"] == 4
    assert sorted(_Gate.seen) == [f"p{i}" for i in range(5)]
    assert all(s is not None and s["ttft_ms"] <= s["e2e_ms"] for s in second["samples"])
