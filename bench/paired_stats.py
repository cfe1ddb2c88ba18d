"""`bench.paired`'s numbers: one request's vLLM timings, and per target the medians and
the paired differences against the first target."""

from __future__ import annotations

import statistics
from typing import Any, Final

ENGINE_KEYS: Final = {
    "time_to_first_token": "vllm_ttft_ms",
    "request_queue_time": "queue_ms",
    "request_prefill_time": "prefill_ms",
    "inter_token_latency": "itl_ms",
}
"""vLLM's histograms read around each request (concurrency 1: the difference is that
request's own), and the sample keys they land in."""


def engine_sample(timings: dict[str, dict[str, float]]) -> dict[str, float]:
    """A request's vLLM timings (`bench.engine_stats.timings` of the scrapes around it)."""
    return {key: timings[name]["mean_ms"] for name, key in ENGINE_KEYS.items() if name in timings}


def _quartiles(values: list[float]) -> list[float]:
    if len(values) < 2:
        return [round(values[0], 2)] * 3 if values else []
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 2), round(statistics.median(values), 2), round(q[2], 2)]


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summarize(samples: dict[str, list[dict[str, float] | None]]) -> dict[str, Any]:
    """Per target: medians of the client's and vLLM's per-request timings and, against
    the first target, the quartiles of request i's differences (requests both answered)
    and in how many of those pairs this target's time was the longer."""
    labels = list(samples)
    base = samples[labels[0]]
    out: dict[str, Any] = {}
    for label in labels:
        ok = [s for s in samples[label] if s is not None]
        row: dict[str, Any] = {
            "requests": len(ok),
            "failed": len(samples[label]) - len(ok),
            "ttft_ms_quartiles": _quartiles([s["ttft_ms"] for s in ok]),
        }
        for key in ("text_ms", "tpot_ms", "prompt_tokens", *ENGINE_KEYS.values()):
            row[f"{key}_p50"] = _median([s[key] for s in ok if key in s])
        fronts = [s["ttft_ms"] - s["vllm_ttft_ms"] for s in ok if "vllm_ttft_ms" in s]
        row["front_end_ms_p50"] = _median(fronts)
        if label != labels[0]:
            pairs = [
                (s, b)
                for s, b in zip(samples[label], base, strict=True)
                if s is not None and b is not None
            ]
            for key in ("ttft_ms", "text_ms", "prefill_ms", "tpot_ms", "itl_ms"):
                diffs = [s[key] - b[key] for s, b in pairs if key in s and key in b]
                row[f"{key}_minus_{labels[0]}_quartiles"] = _quartiles(diffs)
                row[f"{key}_above_{labels[0]}"] = [sum(d > 0 for d in diffs), len(diffs)]
        out[label] = row
    return out
