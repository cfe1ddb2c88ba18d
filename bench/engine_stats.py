"""vLLM's own request timings, read from a server's `/metrics` around a benchmark run.

Both servers run vLLM's `AsyncLLM`, whose Prometheus histograms time each request:
`vllm:time_to_first_token_seconds` from the request's arrival time to the engine step that
made its first token, and the engine core's queue and prefill times. Both set the arrival
when their chat handler takes the request, before rendering and tokenizing (vllm serve in
its renderer, the gateway in `prepare_chat`), so subtracting vLLM's mean time to first
token from the client's says how much of the client's TTFT went to HTTP in and out (and
the client itself), for either server.

`snapshot` sums each histogram's `_sum` and `_count` over its label sets, and the prefix
cache's two token counters; `timings` turns two snapshots into per-request means over the
requests that finished in between, and the prefix cache's hit rate over the tokens looked
up in between (a run whose prompts an earlier run already sent is served from the cache).
`fetch` and `counter_total` read one counter (bench.profile's generated tokens).
"""

from __future__ import annotations

import urllib.request
from typing import Final

HISTOGRAMS: Final = (
    "time_to_first_token",
    "request_queue_time",
    "request_prefill_time",
    "request_decode_time",
    "inter_token_latency",
    "e2e_request_latency",
)
"""vLLM histogram names without the `vllm:` prefix and the `_seconds` suffix."""

COUNTERS: Final = ("prefix_cache_hits", "prefix_cache_queries")
"""vLLM counters (tokens) without the `vllm:` prefix and the `_total` suffix."""

Snapshot = dict[str, tuple[float, float]]  # name -> (sum of seconds, count); counters: (total, 0)


def parse(text: str) -> Snapshot:
    """Sums and counts of the HISTOGRAMS, and totals of the COUNTERS, in a Prometheus text
    exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = {f"vllm:{name}_seconds": name for name in HISTOGRAMS}
    wanted |= {f"vllm:{name}": name for name in COUNTERS}
    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        name = wanted.get(family.name)
        if name is None:
            continue
        acc = out.setdefault(name, [0.0, 0.0])
        for sample in family.samples:
            if sample.name.endswith(("_sum", "_total")):
                acc[0] += sample.value
            elif sample.name.endswith("_count"):
                acc[1] += sample.value
    return {name: (acc[0], acc[1]) for name, acc in out.items()}


def fetch(base_url: str, timeout: float = 10.0) -> str | None:
    """The `/metrics` text of the server at `base_url`; None when it cannot be read."""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/metrics", timeout=timeout) as r:
            return str(r.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None


def snapshot(base_url: str, timeout: float = 10.0) -> Snapshot | None:
    """The HISTOGRAMS of the server at `base_url`; None when /metrics cannot be read."""
    text = fetch(base_url, timeout)
    return None if text is None else parse(text)


def counter_total(text: str, name: str) -> float | None:
    """A counter's value summed over its label sets (`name` without `_total`, e.g.
    `vllm:generation_tokens`); None when the exposition has no such counter."""
    from prometheus_client.parser import text_string_to_metric_families

    values = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name + "_total"
    ]
    return sum(values) if values else None


def timings(before: Snapshot | None, after: Snapshot | None) -> dict[str, dict[str, float]]:
    """`{name: {"mean_ms", "count"}}` for the observations between two snapshots, and
    `{"prefix_cache": {"hit_rate", "queried_tokens"}}` where prompt tokens were looked up."""
    if before is None or after is None:
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, (total, count) in after.items():
        total0, count0 = before.get(name, (0.0, 0.0))
        n = count - count0
        if n > 0 and name not in COUNTERS:
            out[name] = {"mean_ms": round((total - total0) / n * 1000, 3), "count": n}
    hits, queries = (after.get(k, (0.0, 0.0))[0] - before.get(k, (0.0, 0.0))[0] for k in COUNTERS)
    if queries > 0:
        out["prefix_cache"] = {"hit_rate": round(hits / queries, 4), "queried_tokens": queries}
    return out
