"""bench.report_variants: one server under different flags, session by session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import report_variants
from bench.report_plots import tick_labels


def _run(tok: float, itl: float, started: str, **extra: Any) -> dict[str, Any]:
    ttft = 80.0 if tok >= 16000 else 90.0  # a slow run's first token later too
    return {
        "server": "gateway",
        "round": 1,
        "workload": "128x1024",
        "concurrency": 64,
        "started": started,
        "wall_s": 20.0,
        "api_server_cpu_s": 10.0,
        "engine_procs_cpu_s": 19.0,
        "engine_timings": {"inter_token_latency": {"mean_ms": itl}},
        "metrics": {
            "output_throughput": tok,
            "request_throughput": tok / 1024,
            "median_ttft_ms": ttft,
            "median_tpot_ms": itl + 0.1,
        },
        **extra,
    }


def _results(workers: int, toks: list[float], itls: list[float], hour: int) -> dict[str, Any]:
    runs = [
        _run(t, i, f"2026-12-01T{hour:02d}:0{n}:00+00:00")
        for n, (t, i) in enumerate(zip(toks, itls, strict=True))
    ]
    return {
        "server_args": {"gateway": [f"--api-server-count={workers}"]},
        "sessions": [
            {
                "server": "gateway",
                "round": 1,
                "ready_after_s": 60.0,
                "memory": {"front_end_pss_peak_mib": 1200.0 * workers},
            }
        ],
        "runs": runs,
        # pinned runs are bench.run's other list, never read as the session's runs
        "pinned_runs": [_run(1.0, 99.0, f"2026-12-01T{hour:02d}:09:00+00:00", pinned=True)],
    }


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = []
    # ran in the order w4 (18:xx), w1 (17:xx): rows sort by when the runs started
    for name, data in (
        ("a", _results(4, [15000, 16000, 17000], [3.9, 3.7, 3.6], 18)),
        ("b", _results(1, [18000, 17000], [3.3, 3.5], 17)),
    ):
        path = tmp_path / name / "results.json"
        path.parent.mkdir()
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


def test_a_variant_is_the_server_and_its_own_flags() -> None:
    data = {"server_args": {"gateway": ["--api-server-count=2"], "vllm": []}}
    assert report_variants.variant_label(data, "gateway") == "gateway --api-server-count=2"
    assert report_variants.variant_label(data, "vllm") == "vllm serve"
    rust = {**data, "vllm_frontend": "rust"}
    assert report_variants.variant_label(rust, "vllm") == "vllm serve (Rust frontend)"


def test_rows_per_session_in_the_order_they_ran(files: list[Path]) -> None:
    loaded = [(str(p), json.loads(p.read_text())) for p in files]
    rows = report_variants.session_rows(loaded)
    assert [r["variant"] for r in rows] == [
        "gateway --api-server-count=1",
        "gateway --api-server-count=4",
    ]
    w1, w4 = rows
    assert w1["output_throughput"] == [18000, 17000]
    assert w4["engine_itl_ms"] == [3.9, 3.7, 3.6]  # the pinned run's 99 ms left out
    assert w4["front_end_cores"] == pytest.approx(0.5)
    assert w4["engine_cores"] == pytest.approx(0.95)
    assert w4["front_end_pss_mib"] == 4800.0


def test_medians_and_ratios_against_the_baseline(files: list[Path]) -> None:
    loaded = [(str(p), json.loads(p.read_text())) for p in files]
    rows = report_variants.session_rows(loaded)
    first = {s["variant"]: s for s in report_variants.summarize(rows)}
    w1 = first["gateway --api-server-count=1"]
    assert (w1["runs"], w1["sessions"], w1["output_throughput"]) == (2, 1, 17500)
    assert w1["vs_baseline"] == pytest.approx(1.0)  # the first seen is the default baseline
    chosen = report_variants.summarize(rows, baseline="gateway --api-server-count=4")
    by_variant = {s["variant"]: s for s in chosen}
    assert by_variant["gateway --api-server-count=1"]["vs_baseline"] == pytest.approx(17500 / 16000)
    w4 = by_variant["gateway --api-server-count=4"]
    assert (w4["output_throughput_min"], w4["output_throughput_max"]) == (15000, 17000)
    assert w4["engine_itl_ms"] == pytest.approx(3.7)
    assert w4["median_ttft_ms"] == pytest.approx(80.0)  # the runs' p50s: 90, 80, 80
    assert by_variant["gateway --api-server-count=1"]["median_ttft_ms"] == pytest.approx(80.0)


def test_cli_writes_page_numbers_and_plot(files: list[Path], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    argv = [*map(str, files), "--hardware", "h", "--docs-dir", str(docs)]
    assert report_variants.main([*argv, "--baseline", "gateway --api-server-count=4"]) == 0
    page = (docs / "h.md").read_text()
    assert (
        "| 128x1024@64 | `gateway --api-server-count=1` | 1 | 2 | 17,500 (17,000-18,000) | 1.09× |"
        in page
    )
    # the four-worker medians: ITL 3.70, TTFT p50 80 (its runs' 90, 80, 80), TPOT 3.80
    assert "| 15.62 | 3.70 | 80 | 3.80 | 4,800 |" in page
    assert "| 17.0k, 18.0k |" not in page and "18.0k, 17.0k" in page
    assert "![runs per variant](h.png)" in page
    numbers = json.loads((docs / "h.json").read_text())
    assert len(numbers["sessions"]) == 2 and len(numbers["summary"]) == 2
    made = numbers["files"][str(files[0])]
    assert made["server_args"] == {"gateway": ["--api-server-count=4"]}
    assert (docs / "h.png").read_bytes()[:4] == b"\x89PNG"


def test_no_runs_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "results.json"
    empty.write_text(json.dumps({"sessions": [], "runs": []}))
    with pytest.raises(SystemExit, match="no runs"):
        report_variants.main([str(empty), "--hardware", "h", "--docs-dir", str(tmp_path)])


def test_the_engine_cores_busiest_threads_where_recorded(tmp_path: Path) -> None:
    """Runs of bench.client since session 18 record the engine core's busiest threads: the
    session row shows the first two as cores (CPU-seconds over wall time, medians)."""
    data = _results(2, [18000, 17000], [3.3, 3.4], 19)
    for run, (loop, out) in zip(data["runs"], [(18.0, 4.0), (19.0, 5.0)], strict=True):
        run["engine_core_threads_cpu_s"] = [
            {"thread": "7:VLLM::EngineCor", "cpu_s": loop},
            {"thread": "9:VLLM::EngineCor", "cpu_s": out},
        ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    (row,) = report_variants.session_rows([(str(path), data)])
    assert row["engine_thread_cores"] == pytest.approx([0.925, 0.225])
    docs = tmp_path / "docs"
    report_variants.write_report([path], docs, "h")
    assert "| 0.95 | 0.93, 0.23 | 2,400 |" in (docs / "h.md").read_text()
    older = _results(4, [15000], [3.9], 18)  # recorded before: a dash, not a zero
    assert report_variants.session_rows([("old", older)])[0]["engine_thread_cores"] == []


def test_a_together_session_holds_every_round_of_its_server() -> None:
    # bench.run --together: one session per server, started in round 1, up for all rounds;
    # a classic run: a session per round
    together = _results(4, [15000, 16000], [3.9, 3.7], 18)
    together["runs"][1]["round"] = 2
    rows = report_variants.session_rows([("t", together)])
    assert [r["output_throughput"] for r in rows] == [[15000, 16000]]
    apart = _results(4, [15000, 16000], [3.9, 3.7], 18)
    apart["runs"][1]["round"] = 2
    apart["sessions"].append({**apart["sessions"][0], "round": 2})
    rows = report_variants.session_rows([("a", apart)])
    assert [r["output_throughput"] for r in rows] == [[15000], [16000]]


def test_tick_labels_leave_out_the_flags_every_variant_has() -> None:
    shared = "--gpu-memory-utilization 0.267 --kv-cache-memory-bytes 34359738368"
    variants = [
        f"vllm serve (Rust frontend) {shared}",
        f"gateway {shared}",
        f"gateway B --api-server-count=2 {shared}",
    ]
    assert tick_labels(variants) == [
        "vllm serve (Rust frontend)",
        "gateway",
        "gateway B\n--api-server-count=2",
    ]
    assert tick_labels(["gateway --x 1"]) == ["gateway"]
    assert tick_labels([]) == []


def test_output_against_the_bandwidth_limit_on_a_known_gpu(tmp_path: Path) -> None:
    """Issue 5 asks for output tokens/s as a share of the memory-bandwidth limit: an H100's
    is the H200's scaled by 3.35 / 4.8 TB/s (128x1024: 65,000 -> 45,365 tok/s)."""
    data = _results(2, [18000, 17000], [3.3, 3.4], 19)
    data["versions"] = {"gpu": "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04"}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    page = report_variants.write_report([path], tmp_path / "gpu", "gpu-h100-x").read_text()
    assert "## Output tokens/s against the memory-bandwidth limit" in page
    assert "| 128x1024@64 | `gateway --api-server-count=2` | 45,365 | 17,500 | 39% |" in page
    assert "H100 80GB HBM3: 3.35 TB/s" in page
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps(_results(2, [18000], [3.3], 19)))  # no GPU recorded
    page = report_variants.write_report([cpu], tmp_path / "cpu", "cpu-2core").read_text()
    assert "bandwidth" not in page
