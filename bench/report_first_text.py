"""The report's section on the first-text load probe (bench/first_text_load.py)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.report_data import fmt, ratio

SERVERS = ("vllm", "gateway")
FIGURES = (
    "first_chunk_ms_p50",
    "first_text_ms_p50",
    "first_text_ms_p90",
    "first_wave_first_text_ms_p50",
    "later_first_text_ms_p50",
    "first_chunk_has_text_share",
    "req_per_s",
)


def load_medians(data: dict[str, Any]) -> dict[int, dict[str, dict[str, float | None]]]:
    """Per concurrency and server, each figure's median over the sessions that probed it
    (probes that failed or timed none left out)."""
    seen: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for session in data.get("sessions", []):
        name = session.get("server")
        for probe in session.get("first_text_load") or []:
            if name in SERVERS and probe.get("requests"):
                by_server = seen.setdefault(int(probe["concurrency"]), {})
                by_server.setdefault(name, []).append(probe)
    out: dict[int, dict[str, dict[str, float | None]]] = {}
    for c in sorted(seen):
        out[c] = {}
        for name in SERVERS:
            probes = seen[c].get(name, [])
            out[c][name] = {
                key: _median([p[key] for p in probes if p.get(key) is not None]) for key in FIGURES
            }
            out[c][name]["sessions"] = float(len(probes))
    return out


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def first_text_checks(data: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """One row per probed concurrency where both servers were probed: the gateway's time
    to first text p50 against vllm serve's."""
    checks = []
    for c, by_server in load_medians(data).items():
        gw, vl = by_server["gateway"]["first_text_ms_p50"], by_server["vllm"]["first_text_ms_p50"]
        if gw is None or vl is None:
            continue
        checks.append(
            (
                f"time to first text p50 at c={c} ≤ vllm serve's (load probe, not a goal of "
                "the issue: the like-for-like TTFT)",
                f"{gw:.1f} vs {vl:.1f} ms",
                gw <= vl,
            )
        )
    return checks


def first_text_section(data: dict[str, Any]) -> list[str]:
    """Markdown lines: the probe's medians per concurrency, both servers side by side."""
    medians = load_medians(data)
    if not medians:
        return []
    lines = [
        "## Time to first text under load",
        "",
        "`vllm bench serve` times the first chunk with `choices`. `vllm serve` sends one when "
        "the first token is generated, whatever its text (an empty role chunk, then deltas "
        'whose content may be ""); the gateway\'s first chunk waits for visible text, and '
        "with random weights many first tokens have none yet (part of a UTF-8 character, a "
        "skipped special token; in the gateway before 2026-12-04 also whitespace, held in "
        "case a `<think>` followed). After each session's benchmarks, "
        "`bench.first_text_load` drives the server as the benchmark does (that many streams "
        "at once, prompts made as the first workload's, `ignore_eos`, every stream read to "
        "its end; three waves, 40 requests at least) and times, for every request, the "
        "first chunk with choices and the first chunk with text. 'first wave': the first "
        "requests, sent at once (a burst of arrivals); 'later': those sent as others ended "
        "(steady state; '–' where not recorded). Medians over rounds.",
        "",
        "| conc | first chunk p50 ms vllm | gw | first text p50 ms vllm | gw | ratio | "
        "first text p90 ms vllm | gw | first wave first text p50 ms vllm | gw | "
        "later first text p50 ms vllm | gw | first chunk has text vllm | gw | "
        "req/s vllm | gw | rounds |",
        "|" + "---|" * 17,
    ]
    for c, by_server in medians.items():
        v, g = by_server["vllm"], by_server["gateway"]
        cells = [str(c)]
        cells += [fmt(v["first_chunk_ms_p50"], "{:.1f}"), fmt(g["first_chunk_ms_p50"], "{:.1f}")]
        cells += [fmt(v["first_text_ms_p50"], "{:.1f}"), fmt(g["first_text_ms_p50"], "{:.1f}")]
        cells.append(fmt(ratio(g["first_text_ms_p50"], v["first_text_ms_p50"]), "{:.3f}"))
        for key in ("first_text_ms_p90", "first_wave_first_text_ms_p50", "later_first_text_ms_p50"):
            cells += [fmt(v[key], "{:.1f}"), fmt(g[key], "{:.1f}")]
        share = "{:.0%}"
        cells += [
            fmt(v["first_chunk_has_text_share"], share),
            fmt(g["first_chunk_has_text_share"], share),
        ]
        cells += [fmt(v["req_per_s"], "{:.2f}"), fmt(g["req_per_s"], "{:.2f}")]
        cells.append(f"{v['sessions']:.0f} / {g['sessions']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines
