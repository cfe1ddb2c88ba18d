"""Per-round pairs for `bench.report_variants`: each variant's output tokens/s over the
baseline's in the same results file, round and point, and per point and variant their
median, range and how many fell below 1.0.

Pairs cancel what medians over a lease carry: the host's drift falls on both servers of a
round (session 55's H100 slowed by a tenth for both within half an hour), and a server
that ran more rounds than the other weighs no more."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from bench.report_data import median

Run = tuple[str, int, str, str, float]  # source, round, point, variant, output tokens/s


def file_runs(
    files: list[tuple[str, dict[str, Any]]], label: Callable[[dict[str, Any], str], str]
) -> list[Run]:
    """Every run with results in `files` (pinned ones are kept apart by bench.run), its
    variant named by `label(data, server)`."""
    return [
        (source, run["round"], f"{run['workload']}@{run['concurrency']}",
         label(data, run["server"]), run["metrics"]["output_throughput"])
        for source, data in files
        for run in data.get("runs", [])
        if run.get("metrics")
    ]  # fmt: skip


def pair_ratios(runs: Iterable[Run], baselines: dict[str, str]) -> list[dict[str, Any]]:
    """Per point and variant other than the point's baseline (`baselines`: point ->
    variant): the ratios of its runs to the baseline's of the same source and round."""
    seen: dict[tuple[str, int, str], dict[str, float]] = defaultdict(dict)
    for source, rnd, point, variant, tok in runs:
        seen[(source, rnd, point)][variant] = tok
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (_, _, point), by_variant in seen.items():
        base = by_variant.get(baselines.get(point, ""))
        for variant, tok in by_variant.items():
            if base and variant != baselines[point]:
                ratios[(point, variant)].append(tok / base)
    return [
        {
            "point": point,
            "variant": variant,
            "pairs": len(values),
            "median": median(values),
            "min": min(values),
            "max": max(values),
            "below_1": sum(v < 1.0 for v in values),
        }
        for (point, variant), values in ratios.items()
    ]


def pairs_section(pairs: list[dict[str, Any]]) -> list[str]:
    """The report's lines for `pair_ratios`' rows; none without pairs."""
    if not pairs:
        return []
    lines = [
        "## Per-round pairs",
        "",
        "Each run's output tokens/s over the baseline's in the same results file, round and "
        "point; medians of those ratios.",
        "",
        "| point | variant | pairs | median | min-max | below 1.0 |",
        "|---|---|---|---|---|---|",
    ]
    for p in pairs:
        lines.append(
            f"| {p['point']} | `{p['variant']}` | {p['pairs']} | {p['median']:.2f}× | "
            f"{p['min']:.2f}-{p['max']:.2f} | {p['below_1']} |"
        )
    return [*lines, ""]
