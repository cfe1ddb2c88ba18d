"""bench.runs_table: each run of a results file as a row, in the order it ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.runs_table import COLUMNS, main, run_row, table


def _run(server: str, rnd: int, **extra: object) -> dict[str, object]:
    return {
        "server": server,
        "round": rnd,
        "workload": "1024x128",
        "concurrency": 64,
        "metrics": {
            "request_throughput": 90.25,
            "output_throughput": 11536.4,
            "p50_ttft_ms": 120.0,
            "p50_tpot_ms": 4.5,
            "mean_ttft_ms": 130.0,
        },
        "engine_timings": {
            "time_to_first_token": {"mean_ms": 100.0},
            "request_queue_time": {"mean_ms": 20.0},
            "request_prefill_time": {"mean_ms": 50.0},
            "inter_token_latency": {"mean_ms": 4.25},
            "prefix_cache": {"hit_rate": 0.0312, "queried_tokens": 66000.0},
        },
        "engine_core_threads_cpu_s": [{"cpu_s": 2.5}, {"cpu_s": 0.1}],
        "api_server_cpu_us_per_token": 101.5,
        "http_workers_cpu_s": {"APIServer_0": 2.46, "APIServer_1": 0.04},
        **extra,
    }


def test_a_row_holds_the_derived_timings() -> None:
    row = run_row(_run("gateway", 2))
    assert row is not None and len(row) == len(COLUMNS)
    cells = dict(zip(COLUMNS, row, strict=True))
    assert cells["run"] == "gateway r2 1024x128@64"
    assert cells["req/s"] == "90.25"
    assert cells["out tok/s"] == "11,536"
    assert cells["pre-engine"] == "30.00"  # 100 - 20 - 50
    assert cells["front end"] == "30.00"  # the client's 130 - vLLM's 100
    assert cells["cache hits"] == "3%"
    assert cells["main CPU-s"] == "2.50"  # the busiest engine core thread
    assert cells["µs/token"] == "101.5"
    assert cells["workers' CPU-s"] == "2.5/0.0"  # in the workers' order


def test_missing_parts_show_as_dashes_and_runs_without_results_are_left_out() -> None:
    bare = _run("vllm", 1, engine_timings={}, engine_core_threads_cpu_s=[])
    bare.pop("api_server_cpu_us_per_token")
    bare.pop("http_workers_cpu_s")
    row = run_row(bare)
    assert row is not None and row[5:8] == ["–", "–", "–"] and row[-4:] == ["–"] * 4
    assert run_row({"server": "vllm", "round": 1, "metrics": {}}) is None
    skipped = {"server": "gateway", "round": 1}
    text = table({"runs": [_run("vllm", 1), skipped, _run("gateway", 1)]})
    names = [r.split(" | ")[0] for r in text.splitlines()[2:]]
    assert names == ["| vllm r1 1024x128@64", "| gateway r1 1024x128@64"]


def test_main_prints_a_table_per_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"runs": [_run("vllm", 1)]}))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(str(path)) and "| vllm r1 1024x128@64 |" in out
