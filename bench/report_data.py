"""The numbers a report shows: results merged from runs, medians and ratios per point,
memory and CPU per token per session."""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

METRICS = [
    ("request_throughput", "req/s", "{:.2f}"),
    ("output_throughput", "out tok/s", "{:,.0f}"),
    ("median_ttft_ms", "TTFT p50 ms", "{:.1f}"),
    ("p99_ttft_ms", "TTFT p99 ms", "{:.1f}"),
    ("median_tpot_ms", "TPOT p50 ms", "{:.2f}"),
]
HIGHER_IS_BETTER = {"request_throughput", "output_throughput"}


def load(paths: Iterable[Path]) -> dict[str, Any]:
    """One results dict from one or more files (rounds renumbered after the first)."""
    merged: dict[str, Any] | None = None
    offset = 0
    for path in paths:
        data = json.loads(Path(path).read_text())
        backfill_engine_config(data, Path(path).parent)
        if merged is None:
            merged = data
            # a report's own JSON (already merged) keeps the runs' files it came from
            merged["sources"] = data.get("sources") or [str(path)]
        else:
            for key in ("sessions", "runs"):
                for item in data.get(key, []):
                    item = dict(item)
                    item["round"] = item["round"] + offset
                    merged[key].append(item)
            merged["sources"].append(str(path))
            merged.setdefault("extra_starts", []).append(data.get("started"))
            merged["finished"] = data.get("finished", merged.get("finished"))
            merged["loadavg_end"] = data.get("loadavg_end", merged.get("loadavg_end"))
            merged.setdefault("skipped", []).extend(data.get("skipped", []))
            for key in ("workloads", "concurrencies"):
                # a later invocation may have run other points (the header lists them all)
                seen = merged.setdefault(key, [])
                seen.extend(x for x in data.get(key, []) if x not in seen)
            merged["concurrencies"].sort()
            _add_commit(merged, data)
        offset = max([r["round"] for r in merged["runs"]] + [offset])
    if merged is None:
        raise SystemExit("no results given")
    merged["rounds_total"] = offset
    return merged


def as_gateway(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The results with server `name`'s sessions and runs as the gateway's (a second
    gateway, `gwb`: the report compares it with vllm serve), the gateway's left out."""
    if name == "gateway":
        return data
    picked = dict(data)
    root = data.get("gwb_root") or "its own checkout"
    picked["notes"] = [*data.get("notes", []), f"the gateway here is `{name}`, run from {root}"]
    for key in ("sessions", "runs"):
        picked[key] = [
            item | {"server": "gateway"} if item.get("server") == name else item
            for item in data.get(key, [])
            if item.get("server") != "gateway"
        ]
    for key in ("commands", "server_args"):  # its command line, not the other gateway's
        by_server = dict(data.get(key) or {})
        if name in by_server:
            by_server["gateway"] = by_server.pop(name)
            picked[key] = by_server
    return picked


def _add_commit(merged: dict[str, Any], data: dict[str, Any]) -> None:
    """The header's "gateway commit": every invocation's, in order, each once."""
    commit = data.get("versions", {}).get("gateway_commit")
    versions = merged.setdefault("versions", {})
    seen = [c for c in str(versions.get("gateway_commit") or "").split(", ") if c]
    if commit and commit not in seen:
        versions["gateway_commit"] = ", ".join([*seen, commit])


def backfill_engine_config(data: dict[str, Any], folder: Path) -> None:
    """Engine-config hashes for results written before bench.run recorded them."""
    import hashlib

    from bench.machine import engine_config_line

    for session in data.get("sessions", []):
        if session.get("engine_config_sha1") or not session.get("log"):
            continue
        config = engine_config_line(folder / session["log"])
        if config:
            sha = hashlib.sha1(config.encode()).hexdigest()[:12]
            session["engine_config_sha1"] = sha
            data.setdefault("engine_configs", {})[sha] = config


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The value at quantile `q` of `values`, by nearest rank (the load probe's p90s)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else spec.format(value)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def runs_by_key(data: dict[str, Any]) -> dict[tuple[str, int, str], dict[int, dict[str, Any]]]:
    """(workload, concurrency, server) -> {round: metrics}; failed runs left out."""
    out: dict[tuple[str, int, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for run in data["runs"]:
        metrics = run.get("metrics")
        if not metrics or not metrics.get("completed"):
            continue
        out[(run["workload"], run["concurrency"], run["server"])][run["round"]] = metrics
    return out


def summarize(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (workload, concurrency): medians per server and per-round ratios."""
    by_key = runs_by_key(data)
    rows = []
    workloads = data["workloads"]
    concs = sorted({k[1] for k in by_key})
    for workload in workloads:
        for conc in concs:
            row: dict[str, Any] = {"workload": workload, "concurrency": conc}
            present = False
            for server in ("vllm", "gateway"):
                rounds = by_key.get((workload, conc, server), {})
                present = present or bool(rounds)
                row[server] = {
                    metric: median([m.get(metric) for m in rounds.values()])
                    for metric, _, _ in METRICS
                }
                row[server]["n"] = len(rounds)
                row[server]["failed"] = sum(int(m.get("failed") or 0) for m in rounds.values())
                row[server]["input_tokens"] = sorted(
                    {t for m in rounds.values() if (t := m.get("total_input_tokens")) is not None}
                )
            if not present:
                continue
            vr = by_key.get((workload, conc, "vllm"), {})
            gr = by_key.get((workload, conc, "gateway"), {})
            both = sorted(set(vr) & set(gr))
            row["round_ratios"] = {
                metric: [ratio(gr[r].get(metric), vr[r].get(metric)) for r in both]
                for metric, _, _ in METRICS
            }
            # Pairs: the gateway's round r with vllm's round r, the two sessions that ran
            # back to back (bench.profiles.session_order)
            row["ratio_of_medians"] = {
                metric: ratio(row["gateway"][metric], row["vllm"][metric])
                for metric, _, _ in METRICS
            }
            row["median_round_ratio"] = {
                metric: median([x for x in row["round_ratios"][metric] if x is not None])
                for metric, _, _ in METRICS
            }
            rows.append(row)
    return rows


def front_end_mib(mem: dict[str, Any]) -> float | None:
    """Memory that serves HTTP: the API-server process's peak, plus the peak of its HTTP
    worker processes together when there are several (`--api-server-count N`)."""
    hwm = mem.get("vm_hwm_mib")
    if hwm is None:
        return None
    return float(hwm) + float(mem.get("api_workers_rss_peak_mib") or 0.0)


def memory_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for s in data["sessions"]:
        mem = s.get("memory") or {}
        rows.append(
            {
                "server": s["server"],
                "round": s["round"],
                "ready_after_s": s.get("ready_after_s"),
                "vm_hwm_mib": mem.get("vm_hwm_mib"),
                "rss_peak_polled_mib": mem.get("rss_peak_polled_mib"),
                "rss_peak_under_load_mib": mem.get("rss_peak_under_load_mib"),
                "engine_children_rss_mib": mem.get("engine_children_rss_mib"),
                "api_workers": mem.get("api_workers") or 0,
                "api_workers_rss_peak_mib": mem.get("api_workers_rss_peak_mib"),
                "front_end_mib": front_end_mib(mem),
                "front_end_pss_mib": mem.get("front_end_pss_peak_mib"),
                "loadavg_before": s.get("loadavg_before"),
                "loadavg_after": s.get("loadavg_after"),
                "error": s.get("error"),
                "probe": s.get("probe") or {},
                "first_text": s.get("first_text") or {},
            }
        )
    return rows


def cpu_per_token(data: dict[str, Any]) -> list[tuple[str, int, float | None, float | None]]:
    """Front-end CPU per output token, medians per point and server. Runs of sessions with
    HTTP workers recorded before the harness counted the workers' CPU are left out, and so
    are vLLM's with its Rust frontend recorded before it counted that child process
    (`vllm-rs`, which serves the HTTP) as the front end's: the launcher alone only waits."""
    rust = data.get("vllm_frontend") == "rust"
    workers = {
        (s["server"], s["round"])
        for s in data.get("sessions", [])
        if (s.get("memory") or {}).get("api_workers")
    }
    per: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for run in data["runs"]:
        if (run["server"], run["round"]) in workers and not run.get("cpu_counts_http_workers"):
            continue
        if rust and run["server"] == "vllm" and not run.get("cpu_counts_rust_frontend"):
            continue
        if run.get("api_server_cpu_us_per_token") is not None:
            per[(run["workload"], run["concurrency"], run["server"])].append(
                run["api_server_cpu_us_per_token"]
            )
    points = sorted(
        {(w, c) for w, c, _ in per},
        key=lambda p: (data["workloads"].index(p[0]) if p[0] in data["workloads"] else 0, p[1]),
    )
    return [
        (w, c, median(per.get((w, c, "vllm"), [])), median(per.get((w, c, "gateway"), [])))
        for w, c in points
    ]


def prompt_token_gap(data: dict[str, Any]) -> str | None:
    """Prompt tokens per request, gateway minus vllm serve (from the servers' usage)."""
    per: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for run in data["runs"]:
        m = run.get("metrics")
        if m and m.get("completed"):
            key = (run["server"], run["workload"], run["concurrency"])
            per[key].append(m["total_input_tokens"] / m["completed"])
    gaps = [
        statistics.median(per[("gateway", w, c)]) - statistics.median(v)
        for (server, w, c), v in per.items()
        if server == "vllm" and per.get(("gateway", w, c))
    ]
    if not gaps or all(abs(x) < 1e-9 for x in gaps):
        return None
    lo, hi = min(gaps), max(gaps)
    return f"{lo:+.1f}" if abs(hi - lo) < 0.05 else f"{lo:+.1f} to {hi:+.1f}"


def skipped_text(tags: Sequence[str]) -> str:
    """The skipped sessions and runs, each server's point once with its rounds: a deadline
    that cut `--rounds 30` after eight skips 22 rounds of every point, listed as
    `vllm-1024x128-c64 (rounds 9-30)`; other tags as they are."""
    rounds: dict[str, list[int]] = {}
    for tag in tags:
        m = re.fullmatch(r"(.+?)-r(\d+)-(.+)", tag)
        key = f"{m[1]}-{m[3]}" if m else tag
        rounds.setdefault(key, []).extend([int(m[2])] if m else [])
    return ", ".join(
        f"{key} (round{'s' if len(set(rnds)) > 1 else ''} {_spans(rnds)})" if rnds else key
        for key, rnds in rounds.items()
    )


def _spans(numbers: list[int]) -> str:
    """`[9, 10, 11, 14]` as `9-11, 14`."""
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
