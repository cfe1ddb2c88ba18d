"""bench's engine timings (vLLM's histograms around a run), their report section, and the
order of server sessions within a round."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from bench import engine_stats
from bench.client import on_end, on_start
from bench.profiles import session_order
from bench.report_timing import timing_rows, timing_section
from tests.local_http import serving

EXPOSITION = """\
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.05",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.2
vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 1.0
vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 0.05
# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase.
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_count{engine="0",model_name="m"} 5.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="m"} 0.005
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
# HELP gateway_request_duration_seconds Time from request to the last byte.
# TYPE gateway_request_duration_seconds histogram
gateway_request_duration_seconds_count{method="POST",route="/v1/chat/completions"} 9.0
gateway_request_duration_seconds_sum{method="POST",route="/v1/chat/completions"} 7.0
"""


def test_parse_sums_each_histogram_over_its_label_sets() -> None:
    snap = engine_stats.parse(EXPOSITION)
    assert snap == {
        "time_to_first_token": (pytest.approx(0.25), 5.0),
        "request_queue_time": (pytest.approx(0.005), 5.0),
    }


def test_counter_total_sums_a_counter_over_its_label_sets() -> None:
    text = """\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 120.0
vllm:generation_tokens_total{engine="1",model_name="m"} 30.0
# HELP vllm:generation_tokens_created Number of generation tokens processed.
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{engine="0",model_name="m"} 1.7e9
"""
    assert engine_stats.counter_total(text, "vllm:generation_tokens") == 150.0
    assert engine_stats.counter_total(EXPOSITION, "vllm:generation_tokens") is None


def test_parse_and_timings_give_the_prefix_cache_hit_rate_between_snapshots() -> None:
    text = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 3000.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 500.0
"""
    before = engine_stats.parse(text)
    assert before == {
        "prefix_cache_queries": (3000.0, 0.0),
        "prefix_cache_hits": (1500.0, 0.0),
    }
    after = {"prefix_cache_queries": (7000.0, 0.0), "prefix_cache_hits": (4500.0, 0.0)}
    assert engine_stats.timings(before, after) == {
        "prefix_cache": {"hit_rate": 0.75, "queried_tokens": 4000.0}
    }
    assert engine_stats.timings(before, before) == {}  # nothing looked up in between


def test_timings_are_means_of_what_finished_between_two_snapshots() -> None:
    before = {"time_to_first_token": (0.25, 5.0), "request_queue_time": (0.005, 5.0)}
    after = {
        "time_to_first_token": (0.55, 8.0),
        "request_queue_time": (0.005, 5.0),  # nothing new: left out
        "request_prefill_time": (0.03, 3.0),  # absent before: counted from zero
    }
    assert engine_stats.timings(before, after) == {
        "time_to_first_token": {"mean_ms": 100.0, "count": 3.0},
        "request_prefill_time": {"mean_ms": 10.0, "count": 3.0},
    }
    assert engine_stats.timings(None, after) == {}
    assert engine_stats.timings(before, None) == {}


@pytest.fixture
def metrics_url() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = EXPOSITION.encode() if self.path == "/metrics" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as port:
        yield f"http://127.0.0.1:{port}/"


def test_snapshot_reads_a_servers_metrics_over_http(metrics_url: str) -> None:
    snap = engine_stats.snapshot(metrics_url)
    assert snap is not None and snap["time_to_first_token"][1] == 5.0


def test_snapshot_of_an_unreachable_server_is_none() -> None:
    with socket.socket() as s:  # a port bound but not listening: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert engine_stats.snapshot(f"http://127.0.0.1:{port}", timeout=2) is None


def test_snapshot_of_a_server_without_metrics_is_none(metrics_url: str) -> None:
    assert engine_stats.snapshot(metrics_url + "v1") is None  # /v1/metrics: 404


def _run(server: str, rnd: int, client: float, engine: float | None) -> dict[str, Any]:
    timings = {"request_queue_time": {"mean_ms": 0.5, "count": 41}}
    if engine is not None:
        timings["time_to_first_token"] = {"mean_ms": engine, "count": 41}
    return {
        "server": server,
        "round": rnd,
        "workload": "1024x128",
        "concurrency": 1,
        "metrics": {"mean_ttft_ms": client},
        "engine_timings": timings,
    }


def test_timing_rows_take_medians_over_rounds_of_the_front_end_share() -> None:
    data = {
        "runs": [
            _run("gateway", 1, 30.0, 20.0),
            _run("gateway", 2, 40.0, 22.0),
            _run("gateway", 3, 35.0, 21.0),
            _run("vllm", 1, 28.0, 24.0),
            _run("vllm", 2, 29.0, None),  # recorded without vLLM's timings: left out
        ]
    }
    gateway, vllm = timing_rows(data)
    assert (gateway["server"], gateway["n"], gateway["client"], gateway["vllm"]) == (
        "gateway",
        3,
        35.0,
        21.0,
    )
    assert gateway["front_end"] == 14.0  # median of 10, 18, 14
    assert gateway["queue"] == 0.5 and gateway["prefill"] is None
    assert (vllm["n"], vllm["front_end"]) == (1, 4.0)
    section = timing_section(data)
    assert section[0] == "## Where the time to first token goes"
    assert "| 1024x128 | 1 | gateway | 3 | 35.0 | 21.0 | 14.0 | 0.5 | – | – |" in section


def test_no_timing_section_for_results_recorded_before_the_timings() -> None:
    assert timing_section({"runs": [_run("vllm", 1, 28.0, None)]}) == []


def test_rounds_alternate_the_order_of_the_servers() -> None:
    servers = ["vllm", "gateway"]
    assert [session_order(servers, r) for r in (1, 2, 3)] == [
        ["vllm", "gateway"],
        ["gateway", "vllm"],
        ["vllm", "gateway"],
    ]
    assert servers == ["vllm", "gateway"]  # not reordered in place


class _NoMeter:
    def cpu_seconds(self) -> tuple[float | None, float | None]:
        return None, None

    def engine_threads(self) -> dict[str, float]:
        return {}

    def worker_cpu(self) -> dict[str, float]:
        return {}


def test_on_end_keeps_the_clients_engine_timings(tmp_path: Path) -> None:
    tag = "vllm-r1-1024x128-c1"
    (tmp_path / f"{tag}.json").write_text(json.dumps({"mean_ttft_ms": 30.0, "failed": 0}))
    run: dict[str, Any] = {"num_prompts": 8, "num_warmups": 1, "output_len": 128}
    timings = {"time_to_first_token": {"mean_ms": 21.5, "count": 9}}
    on_start(run, {"time": 0}, _NoMeter())
    on_end(run, {"tag": tag, "ok": True, "engine_timings": timings}, _NoMeter(), tmp_path)
    assert run["engine_timings"] == timings
    unread: dict[str, Any] = {"num_prompts": 8, "num_warmups": 1, "output_len": 128}
    on_start(unread, {"time": 0}, _NoMeter())
    on_end(unread, {"tag": tag, "ok": True, "engine_timings": {}}, _NoMeter(), tmp_path)
    assert "engine_timings" not in unread  # /metrics unreadable: no section row for it
