"""Issue 5's goals checked against a report's numbers."""

from __future__ import annotations

from typing import Any

from bench.report_data import (
    fmt,
    median,
    memory_rows,
)
from bench.report_first_text import first_text_checks

H200_BANDWIDTH_LIMIT_TOK_S = {"1024x128": 38_500.0, "128x1024": 65_000.0}
"""Issue 5's estimate of the output tokens/s an H200's memory bandwidth allows at these
workloads (weights and KV cache read once per decode step)."""

H200_TB_S = 4.8
GPU_TB_S = {"H100 80GB HBM3": 3.35}
"""Memory bandwidth of the other GPUs leases have lent (nvidia-smi's name; the H100 SXM's
HBM3), to scale the H200's limit by: a decode step's bytes are the same on either."""


def bandwidth_scale(hardware: str, gpu: str = "") -> tuple[float, str] | None:
    """The share of the H200's limit this run's GPU allows, and a line saying so; None
    where unknown (a CPU run, another GPU)."""
    if "h200" in hardware.lower() or "h200" in gpu.lower():
        return 1.0, ""
    for name, tb_s in GPU_TB_S.items():
        if name.lower() in gpu.lower():
            return tb_s / H200_TB_S, (
                f" Scaled here to this GPU's memory bandwidth ({name}: {tb_s} TB/s against "
                f"the H200's {H200_TB_S})."
            )
    return None


def bandwidth_table(hardware: str, rows: list[dict[str, Any]], gpu: str = "") -> list[str]:
    """Output tokens/s as a share of the memory-bandwidth limit (an H200, or a GPU whose
    bandwidth GPU_TB_S knows)."""
    scaled = bandwidth_scale(hardware, gpu)
    if scaled is None:
        return []
    scale, note = scaled
    lines = [
        *_bandwidth_heading(note, "Medians over rounds."),
        "| workload | conc | limit tok/s | vllm serve tok/s | share | gateway tok/s | share |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        limit = H200_BANDWIDTH_LIMIT_TOK_S.get(r["workload"])
        if limit is None:
            continue
        limit *= scale
        cells = [r["workload"], str(r["concurrency"]), f"{limit:,.0f}"]
        for server in ("vllm", "gateway"):
            tok_s = r[server]["output_throughput"]
            cells += [fmt(tok_s, "{:,.0f}"), fmt(tok_s and 100 * tok_s / limit, "{:.0f}%")]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""] if len(lines) > 6 else []


def _bandwidth_heading(note: str, medians: str) -> list[str]:
    return [
        "## Output tokens/s against the memory-bandwidth limit",
        "",
        "The issue's estimate of what an H200's memory bandwidth allows (weights and KV "
        "cache read once per decode step): ≈38.5k output tokens/s at 1024/128, ≈65k at "
        f"128/1024.{note} {medians}",
        "",
    ]


def variant_bandwidth_table(hardware: str, summary: list[dict[str, Any]], gpu: str) -> list[str]:
    """`bench.report_variants`' medians (`point` as "1024x128@256", `variant`,
    `output_throughput`) as shares of the bandwidth limit, where the GPU is known."""
    scaled = bandwidth_scale(hardware, gpu)
    if scaled is None:
        return []
    scale, note = scaled
    rows = []
    for s in summary:
        limit = H200_BANDWIDTH_LIMIT_TOK_S.get(s["point"].split("@")[0])
        tok_s = s["output_throughput"]
        if limit is None or tok_s is None:
            continue
        limit *= scale
        rows.append(
            f"| {s['point']} | `{s['variant']}` | {limit:,.0f} | {tok_s:,.0f} | "
            f"{100 * tok_s / limit:.0f}% |"
        )
    if not rows:
        return []
    return [
        *_bandwidth_heading(note, "Medians over every run of a variant."),
        "| point | variant | limit tok/s | out tok/s | share |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]


Check = tuple[str, str, bool | None]
"""(goal, measured, met); met None where the goal does not apply to this run's machine."""


def gpu_name(data: dict[str, Any]) -> str:
    """nvidia-smi's line for the run's GPU as the harness recorded it ("" on a CPU run)."""
    return str(data.get("versions", {}).get("gpu") or "")


def other_gpu(data: dict[str, Any]) -> str | None:
    """The GPU a GPU run had where it was not an H200, whose figures the issue's absolute
    GPU goals are (session 46's lease lent an H100); None on an H200 or where unrecorded."""
    gpu = gpu_name(data)
    if not gpu or "h200" in gpu.lower():
        return None
    return gpu.split(",")[0].strip()


def absolute(data: dict[str, Any], text: str, measured: str, met: bool) -> Check:
    """An absolute GPU goal's check: judged on an H200 only."""
    gpu = other_gpu(data)
    if gpu is None:
        return (text, measured, met)
    return (text, f"{measured} (on an {gpu}: the goal is an H200's figure)", None)


def verdict(met: bool | None) -> str:
    """A goal row's last cell."""
    return "not judged here" if met is None else "yes" if met else "**no**"


def goal_checks(data: dict[str, Any], rows: list[dict[str, Any]]) -> list[Check]:
    """(goal, measured, met) for the profile's targets from the issue."""
    checks: list[Check] = []
    find = {(r["workload"], r["concurrency"]): r for r in rows}
    if data["profile"] == "cpu":
        for conc in (32, 64):
            r = find.get(("128x64", conc))
            if r:
                ratio = r["ratio_of_medians"]["request_throughput"]
                checks.append(
                    (
                        f"request throughput ≥ 1.1× vllm serve at c={conc}",
                        f"{fmt(ratio, '{:.3f}')}× of medians "
                        f"({fmt(r['gateway']['request_throughput'], '{:.2f}')} vs "
                        f"{fmt(r['vllm']['request_throughput'], '{:.2f}')} req/s); median of "
                        f"per-round ratios "
                        f"{fmt(r['median_round_ratio']['request_throughput'], '{:.3f}')}×",
                        ratio is not None and ratio >= 1.1,
                    )
                )
        for r in rows:
            g, v = r["gateway"]["median_ttft_ms"], r["vllm"]["median_ttft_ms"]
            pairs = [x for x in r["round_ratios"]["median_ttft_ms"] if x is not None]
            # judged on the medians; the pairs say how often each round agreed
            paired = (
                f"; lower in {sum(x < 1 for x in pairs)} of {len(pairs)} rounds (median of "
                f"per-round ratios {fmt(r['median_round_ratio']['median_ttft_ms'], '{:.3f}')})"
                if pairs
                else ""
            )
            checks.append(
                (
                    f"TTFT p50 ≤ vllm serve at c={r['concurrency']} ({r['workload']})",
                    f"{fmt(g, '{:.1f}')} vs {fmt(v, '{:.1f}')} ms{paired}",
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
                met = g is not None and g >= target
                checks.append(absolute(data, text, fmt(g, "{:,.1f}"), met))
        r = find.get(("1024x128", 1))
        if r:
            g = r["gateway"]["median_ttft_ms"]
            checks.append(
                absolute(
                    data,
                    "TTFT p50 ≤ 27 ms at c=1, 1024/128",
                    fmt(g, "{:.1f}") + " ms",
                    g is not None and g <= 27.0,
                )
            )
            t = r["gateway"]["median_tpot_ms"]
            checks.append(
                absolute(
                    data,
                    "TPOT p50 ≤ 1.9 ms at c=1, 1024/128",
                    fmt(t, "{:.2f}") + " ms",
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
            # single rounds scatter more than medians on a shared machine: show the lowest
            rounds = [
                (x, f"{r['workload']}@{r['concurrency']}")
                for r in rows
                for x in r.get("round_ratios", {}).get("request_throughput", [])
                if x is not None
            ]
            lowest = min(rounds) if rounds else None
            single = f"; lowest single round {lowest[0]:.3f}× ({lowest[1]})" if lowest else ""
            checks.append(
                (
                    "never below 1.0× vllm serve (throughput, medians over rounds)",
                    f"lowest {low[0]:.3f}× ({low[1]}){single}",
                    low[0] >= 1.0,
                )
            )
    mem = memory_rows(data)

    def per_server(key: str) -> dict[str, float | None]:
        """Each server's median of a memory row's figure, over the sessions that have it."""
        return {
            s: median([m[key] for m in mem if m["server"] == s and m[key]])
            for s in ("vllm", "gateway")
        }

    hwm, pss = per_server("front_end_mib"), per_server("front_end_pss_mib")
    if hwm["vllm"] and hwm["gateway"]:
        shared = ""
        if pss["vllm"] and pss["gateway"]:
            shared = (
                f" (by PSS, shared pages counted once: {pss['gateway']:.0f} vs {pss['vllm']:.0f})"
            )
        checks.append(
            (
                "HTTP front-end peak RSS (API-server process + HTTP workers) ≤ vllm serve's",
                f"{hwm['gateway']:.0f} vs {hwm['vllm']:.0f} MiB{shared}",
                hwm["gateway"] <= hwm["vllm"],
            )
        )
    text_ms = {
        s: median(
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
    checks += first_text_checks(data)
    return checks
