"""The report's "Where the time to first token goes" section: the client's TTFT beside
vLLM's own request timings (recorded by `bench.engine_stats` around each run)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.profiles import LABELS
from bench.report_data import fmt, median

COLUMNS = ("client", "vllm", "front_end", "queue", "prefill", "itl")


def run_timings(run: dict[str, Any]) -> dict[str, float | None] | None:
    """One run's COLUMNS (ms), or None without the client's or vLLM's TTFT."""
    timings = run.get("engine_timings") or {}
    client = (run.get("metrics") or {}).get("mean_ttft_ms")
    engine = (timings.get("time_to_first_token") or {}).get("mean_ms")
    if client is None or engine is None:
        return None

    def mean(name: str) -> float | None:
        value = (timings.get(name) or {}).get("mean_ms")
        return float(value) if value is not None else None

    return {
        "client": float(client),
        "vllm": float(engine),
        "front_end": float(client) - float(engine),
        "queue": mean("request_queue_time"),
        "prefill": mean("request_prefill_time"),
        "itl": mean("inter_token_latency"),
    }


def timing_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (workload, concurrency, server): medians over rounds of each column."""
    grouped: dict[tuple[str, int, str], list[dict[str, float | None]]] = defaultdict(list)
    for run in data.get("runs", []):
        one = run_timings(run)
        if one is not None:
            grouped[(run["workload"], run["concurrency"], run["server"])].append(one)
    rows = []
    for (workload, conc, server), runs in sorted(grouped.items()):
        row: dict[str, Any] = {"workload": workload, "concurrency": conc, "server": server}
        row["n"] = len(runs)
        for col in COLUMNS:
            row[col] = median([r[col] for r in runs])
        rows.append(row)
    return rows


def timing_section(data: dict[str, Any]) -> list[str]:
    """Markdown lines; none when no run recorded vLLM's timings."""
    rows = timing_rows(data)
    if not rows:
        return []
    lines = [
        "## Where the time to first token goes",
        "",
        "Both servers run vLLM's `AsyncLLM`, whose Prometheus histograms time each request "
        "from its arrival (set when the chat handler takes it, before rendering and "
        "tokenizing: vllm serve in its renderer, the gateway since 7bcca29) to the engine "
        "step that made its first token; queue and prefill are the engine core's part of "
        "that. The client read them from `/metrics` before and after each run (warm-up "
        "requests included). 'front end' = the client's mean TTFT − vLLM's: HTTP in "
        "(parsing, validation), the way back to the client (for the gateway this includes "
        "waiting for the first visible text) and the client itself. Means per request, "
        "medians over rounds.",
        "",
        "| workload | conc | server | rounds | client TTFT mean ms | vLLM TTFT mean ms "
        "| front end ms | queue ms | prefill ms | vLLM inter-token ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['concurrency']} | {LABELS[r['server']]} | {r['n']} | "
            + " | ".join(fmt(r[col], "{:.2f}" if col == "itl" else "{:.1f}") for col in COLUMNS)
            + " |"
        )
    lines.append("")
    return lines
