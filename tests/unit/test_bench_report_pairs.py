"""bench.report_pairs: each variant's runs over the baseline's, round by round, in
bench.report_variants' report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import report_variants
from bench.report_pairs import pair_ratios

BASE, GW = "vllm serve (Rust frontend)", "gateway"


def test_pairs_are_runs_of_one_file_round_and_point() -> None:
    runs = [
        ("call1", 1, "1024x128@64", BASE, 100.0),
        ("call1", 1, "1024x128@64", GW, 90.0),
        ("call1", 2, "1024x128@64", GW, 120.0),
        ("call1", 2, "1024x128@64", BASE, 100.0),
        ("call2", 1, "1024x128@64", BASE, 50.0),  # call 2's round 1: its own pair
        ("call2", 1, "1024x128@64", GW, 55.0),
        ("call2", 2, "1024x128@64", GW, 70.0),  # the deadline cut the baseline's run
        ("call1", 1, "128x1024@256", GW, 26.0),
        ("call1", 1, "128x1024@256", BASE, 26.0),
    ]
    pairs = pair_ratios(runs, {"1024x128@64": BASE, "128x1024@256": BASE})
    assert {(p["point"], p["variant"]) for p in pairs} == {
        ("1024x128@64", GW),
        ("128x1024@256", GW),
    }
    c64 = next(p for p in pairs if p["point"] == "1024x128@64")
    assert c64["pairs"] == 3 and c64["below_1"] == 1
    assert (c64["min"], c64["median"], c64["max"]) == pytest.approx((0.9, 1.1, 1.2))
    # a point without a baseline variant gives no pairs
    assert pair_ratios(runs[:2], {}) == []


def _run(server: str, rnd: int, tok: float) -> dict[str, Any]:
    return {
        "server": server,
        "round": rnd,
        "workload": "1024x128",
        "concurrency": 64,
        "started": f"2026-12-06T10:0{rnd}:00+00:00",
        "metrics": {
            "output_throughput": tok,
            "request_throughput": tok / 128,
            "median_ttft_ms": 100.0,
            "median_tpot_ms": 5.0,
        },
    }


def test_report_names_its_baseline_by_server_and_lists_the_pairs(tmp_path: Path) -> None:
    # servers up together (one session each), the gateway first in the list and the runs
    data = {
        "vllm_frontend": "rust",
        "sessions": [{"server": "gateway", "round": 1}, {"server": "vllm", "round": 1}],
        "runs": [
            _run("gateway", 1, 9000.0),
            _run("vllm", 1, 10000.0),
            _run("vllm", 2, 10000.0),
            _run("gateway", 2, 10500.0),
            _run("gateway", 3, 11000.0),
            _run("vllm", 3, 10000.0),
        ],
    }
    path = tmp_path / "call1" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    docs = tmp_path / "docs"
    argv = [str(path), "--hardware", "h", "--docs-dir", str(docs), "--baseline", "vllm"]
    assert report_variants.main(argv) == 0
    page = (docs / "h.md").read_text()
    assert f"Baseline: `{BASE}`" in page  # by its server's name, though listed second
    assert "| 1024x128@64 | `gateway` | 3 | 1.05× | 0.90-1.10 | 1 |" in page
    numbers = json.loads((docs / "h.json").read_text())
    assert numbers["pairs"][0]["median"] == pytest.approx(1.05)
