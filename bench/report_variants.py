"""A report of servers under different flags, session by session (say the gateway with
`--api-server-count` 4, 1 and 2, from `gpu_run.sh`'s BENCH_SETS):

    python -m bench.report_variants call*/*/results.json --hardware gpu-h200-s18-workers

`bench.report` sets `vllm serve` against the gateway; here each server with its own extra
flags (results.json's `server_args`) is a variant, each session a row, and each variant's
medians per point are set against the first variant's (`--baseline` names another, or
its server), as are its runs round by round (`bench.report_pairs`); on a GPU whose memory
bandwidth `bench.report_goals` knows, the medians as shares of issue 5's limit too. Writes
NAME.md, NAME.json (the rows, medians and pairs) and NAME.png (every run's output tokens/s and
vLLM's inter-token latency, per variant) into --docs-dir."""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.profiles import LABELS
from bench.report_data import fmt, median, ratio
from bench.report_goals import gpu_name, variant_bandwidth_table
from bench.report_pairs import file_runs, pair_ratios, pairs_section
from bench.report_plots import variant_plot

HEADER_KEYS = (
    "hardware", "started", "finished", "host", "model", "sampling", "engine_args", "env",
    "server_args", "vllm_frontend", "versions", "commands", "engine_configs",
)  # fmt: skip


def variant_label(data: dict[str, Any], server: str) -> str:
    """'gateway --api-server-count=2': the server's name and the flags only it was given."""
    name = LABELS.get(server, server)
    if server == "vllm" and data.get("vllm_frontend") == "rust":
        name += " (Rust frontend)"
    return " ".join([name, *(data.get("server_args") or {}).get(server, [])])


def _share(used: float | None, wall: float | None) -> float | None:
    return used / wall if used is not None and wall else None


def _busiest_thread_cores(runs: list[dict[str, Any]], most: int = 2) -> list[float | None]:
    """The engine core's busiest threads (bench.client records them), the k-th busiest's
    CPU-seconds over the run's wall time, medians over the runs; [] if none recorded."""
    seen = [r for r in runs if r.get("engine_core_threads_cpu_s") and r.get("wall_s")]
    if not seen:
        return []
    return [
        median([
            r["engine_core_threads_cpu_s"][k]["cpu_s"] / r["wall_s"]
            for r in seen
            if len(r["engine_core_threads_cpu_s"]) > k
        ])
        for k in range(most)
    ]  # fmt: skip


def _session_of(data: dict[str, Any], run: dict[str, Any]) -> dict[str, Any] | None:
    """The session a run ran in: its server's last session started at or before its round
    (one per round, or with `bench.run --together` one for all rounds)."""
    mine = [s for s in data.get("sessions", []) if s["server"] == run["server"]]
    started = [s for s in mine if s["round"] <= run["round"]]
    return max(started, key=lambda s: s["round"]) if started else None


def session_rows(files: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per session and point, in the order the runs started; pinned runs
    (`bench.run --pin-engine-cores`) are left out."""
    rows = []
    for source, data in files:
        for session in data.get("sessions", []):
            runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for run in data.get("runs", []):
                if run.get("metrics") and _session_of(data, run) is session:
                    runs[f"{run['workload']}@{run['concurrency']}"].append(run)
            for point, point_runs in runs.items():
                metrics = [r["metrics"] for r in point_runs]
                ttft = [m["median_ttft_ms"] for m in metrics]
                itl = [(r.get("engine_timings") or {}).get("inter_token_latency") or {}
                       for r in point_runs]  # fmt: skip
                rows.append(
                    {
                        "source": source,
                        "started": min(r.get("started") or "" for r in point_runs),
                        "variant": variant_label(data, session["server"]),
                        "server": session["server"],
                        "point": point,
                        "ready_after_s": session.get("ready_after_s"),
                        "output_throughput": [m["output_throughput"] for m in metrics],
                        "request_throughput": [m["request_throughput"] for m in metrics],
                        "engine_itl_ms": [i.get("mean_ms") for i in itl],
                        "ttft_p50_ms": ttft,
                        "median_ttft_ms": median(ttft),
                        "median_tpot_ms": median([m["median_tpot_ms"] for m in metrics]),
                        "front_end_cores": median(
                            [_share(r.get("api_server_cpu_s"), r.get("wall_s")) for r in point_runs]
                        ),
                        "engine_cores": median(
                            [
                                _share(r.get("engine_procs_cpu_s"), r.get("wall_s"))
                                for r in point_runs
                            ]
                        ),
                        "front_end_pss_mib": (session.get("memory") or {}).get(
                            "front_end_pss_peak_mib"
                        ),
                        "engine_thread_cores": _busiest_thread_cores(point_runs),
                    }
                )
    return sorted(rows, key=lambda row: row["started"])


def _pooled(group: list[dict[str, Any]], key: str) -> list[Any]:
    """Every run's value of `key` over a group of session rows."""
    return [x for row in group for x in row[key]]


def summarize(rows: list[dict[str, Any]], baseline: str | None = None) -> list[dict[str, Any]]:
    """Per point and variant: medians over every run (TTFT: of each run's p50), and
    output tokens/s against the baseline variant's (`baseline` names a variant or a
    server; default: the first variant seen at that point)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["point"], row["variant"])].append(row)
    out = []
    for point in dict.fromkeys(row["point"] for row in rows):
        variants = [v for p, v in groups if p == point]
        servers = {row["variant"]: row["server"] for row in rows if row["point"] == point}
        named = [v for v in variants if baseline in (v, servers[v])]
        base = named[0] if named else variants[0]
        tok = {v: _pooled(groups[(point, v)], "output_throughput") for v in variants}
        for variant in variants:
            group = groups[(point, variant)]
            out.append(
                {
                    "point": point,
                    "variant": variant,
                    "sessions": len(group),
                    "runs": len(tok[variant]),
                    "output_throughput": median(tok[variant]),
                    "output_throughput_min": min(tok[variant]),
                    "output_throughput_max": max(tok[variant]),
                    "request_throughput": median(_pooled(group, "request_throughput")),
                    "engine_itl_ms": median(_pooled(group, "engine_itl_ms")),
                    "median_ttft_ms": median(_pooled(group, "ttft_p50_ms")),
                    "median_tpot_ms": median([row["median_tpot_ms"] for row in group]),
                    "front_end_pss_mib": median([row["front_end_pss_mib"] for row in group]),
                    "vs_baseline": ratio(median(tok[variant]), median(tok[base])),
                    "baseline": base,
                }
            )
    return out


def _k(values: list[float]) -> str:
    return ", ".join(f"{v / 1000:.1f}k" for v in values)


def _ms(values: list[float | None]) -> str:
    return ", ".join(fmt(v, "{:.2f}") for v in values)


def render(
    rows: list[dict[str, Any]], summary: list[dict[str, Any]], hardware: str,
    sources: list[str], plot_name: str | None, json_name: str,
    pairs: list[dict[str, Any]], bandwidth: list[str],
) -> str:  # fmt: skip
    lines = [
        f"# {hardware}: one server, different flags",
        "",
        f"Generated by `python -m bench.report_variants` from {len(sources)} results files "
        f"(numbers, and how each file's runs were made: command lines, versions, engine "
        f"config: [{json_name}]({json_name})):",
        "",
        *[f"- `{s}`" for s in sources],
        "",
        "## Medians per variant",
        "",
        "| point | variant | sessions | runs | out tok/s (min-max) | vs baseline | req/s | "
        "vLLM's ITL mean (ms) | TTFT p50 (ms) | TPOT p50 (ms) | front-end PSS (MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['point']} | `{s['variant']}` | {s['sessions']} | {s['runs']} | "
            f"{fmt(s['output_throughput'], '{:,.0f}')} ({s['output_throughput_min']:,.0f}-"
            f"{s['output_throughput_max']:,.0f}) | {fmt(s['vs_baseline'], '{:.2f}×')} | "
            f"{fmt(s['request_throughput'], '{:.2f}')} | {fmt(s['engine_itl_ms'], '{:.2f}')} | "
            f"{fmt(s['median_ttft_ms'], '{:.0f}')} | {fmt(s['median_tpot_ms'], '{:.2f}')} | "
            f"{fmt(s['front_end_pss_mib'], '{:,.0f}')} |"
        )
    bases = sorted({s["baseline"] for s in summary})
    lines += ["", f"Baseline: `{'`, `'.join(bases)}`. Medians over every run of a variant.", ""]
    lines += pairs_section(pairs)
    lines += bandwidth
    if plot_name:
        lines += [f"![runs per variant]({plot_name})", ""]
    lines += [
        "## Sessions, in the order they ran",
        "",
        "CPU in cores: CPU-seconds over a run's wall time, medians of the session's runs; "
        "the engine core's two busiest threads (its busy loop first) where recorded.",
        "",
        "| started | source | variant | point | ready (s) | out tok/s per run | vLLM's ITL "
        "per run (ms) | TTFT p50 | TPOT p50 | front end CPU | engine core CPU | its two "
        "busiest threads | PSS (MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['started'][11:19]} | `{r['source']}` | `{r['variant']}` | {r['point']} | "
            f"{fmt(r['ready_after_s'], '{:.0f}')} | {_k(r['output_throughput'])} | "
            f"{_ms(r['engine_itl_ms'])} | {fmt(r['median_ttft_ms'], '{:.0f}')} | "
            f"{fmt(r['median_tpot_ms'], '{:.2f}')} | {fmt(r['front_end_cores'], '{:.2f}')} | "
            f"{fmt(r['engine_cores'], '{:.2f}')} | {_ms(r['engine_thread_cores']) or '–'} | "
            f"{fmt(r['front_end_pss_mib'], '{:,.0f}')} |"
        )
    return "\n".join(lines) + "\n"


def write_report(
    paths: list[Path], docs_dir: Path, hardware: str, baseline: str | None = None
) -> Path:
    files = [(str(p), json.loads(p.read_text())) for p in paths]
    rows = session_rows(files)
    if not rows:
        raise SystemExit("report_variants: no runs with results in those files")
    summary = summarize(rows, baseline)
    bases = {s["point"]: s["baseline"] for s in summary}
    pairs = pair_ratios(file_runs(files, variant_label), bases)
    docs_dir.mkdir(parents=True, exist_ok=True)
    json_name = f"{hardware}.json"
    sources = [f for f, _ in files]
    # what bench.report's JSON keeps too: how each file's runs were made
    made = {f: {k: data.get(k) for k in HEADER_KEYS} for f, data in files}
    doc = {"sources": sources, "files": made, "summary": summary, "pairs": pairs, "sessions": rows}
    (docs_dir / json_name).write_text(json.dumps(doc, indent=1) + "\n")
    plot_name = f"{hardware}.png"
    drawn = variant_plot(rows, docs_dir / plot_name)
    md = docs_dir / f"{hardware}.md"
    plot_file = plot_name if drawn else None
    gpu = next((gpu_name(data) for _, data in files if gpu_name(data)), "")
    bandwidth = variant_bandwidth_table(hardware, summary, gpu)
    md.write_text(render(rows, summary, hardware, sources, plot_file, json_name, pairs, bandwidth))
    return md


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.report_variants")
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--hardware", required=True, help="the report's name, e.g. gpu-h200-s18")
    p.add_argument("--baseline", default=None, help="variant the others are set against")
    p.add_argument(
        "--docs-dir",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "docs" / "benchmarks",
    )
    args = p.parse_args(argv)
    print(write_report(list(args.results), args.docs_dir, args.hardware, args.baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
