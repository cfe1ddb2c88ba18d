"""Every run of one or more `bench.run` results, in the order they ran, one row each:

    python -m bench.runs_table call2/results.json call3/results.json

`bench.report` gives medians over rounds; reading a lease needs each run beside its
neighbours in time (the host drifts within a call): throughput, the client's TTFT and
TPOT, vLLM's own timings (the path before the engine = vLLM's TTFT − queue − prefill;
the front end = the client's mean TTFT − vLLM's), the prefix cache's hit rate over the
run's prompt tokens (results since session 26), the engine core main thread's CPU-seconds,
the front end's CPU per output token and each HTTP worker's CPU-seconds (since session 26:
how `--connections-per-worker` shared the load). Markdown on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.report_timing import run_timings

COLUMNS = (
    "run", "req/s", "out tok/s", "TTFT p50", "TPOT p50", "vLLM TTFT", "pre-engine",
    "front end", "prefill", "ITL", "cache hits", "main CPU-s", "µs/token", "workers' CPU-s",
)  # fmt: skip


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def run_row(run: dict[str, Any]) -> list[str] | None:
    """One run's cells (COLUMNS), or None for a run without results (skipped, failed)."""
    metrics = run.get("metrics") or {}
    if not metrics:
        return None
    ms = run_timings(run) or {}
    vllm, queue, prefill = ms.get("vllm"), ms.get("queue"), ms.get("prefill")
    pre = None if vllm is None or queue is None or prefill is None else vllm - queue - prefill
    threads = run.get("engine_core_threads_cpu_s") or []
    main = max((t["cpu_s"] for t in threads), default=None)
    hit_rate = ((run.get("engine_timings") or {}).get("prefix_cache") or {}).get("hit_rate")
    name = f"{run['server']} r{run['round']} {run['workload']}@{run['concurrency']}"
    return [
        name,
        _num(metrics["request_throughput"], 2),
        _num(metrics["output_throughput"], 0),
        _num(metrics["p50_ttft_ms"], 1),
        _num(metrics["p50_tpot_ms"], 2),
        _num(vllm, 1),
        _num(pre, 2),
        _num(ms.get("front_end"), 2),
        _num(prefill, 1),
        _num(ms.get("itl"), 2),
        "–" if hit_rate is None else f"{hit_rate:.0%}",
        _num(main, 2),
        _num(run.get("api_server_cpu_us_per_token"), 1),
        "/".join(f"{cpu:.1f}" for cpu in (run.get("http_workers_cpu_s") or {}).values()) or "–",
    ]


def table(data: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for run in data.get("runs", []):
        row = run_row(run)
        if row is not None:
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.results:
        print(f"{path}\n\n{table(json.loads(path.read_text()))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
