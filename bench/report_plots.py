"""A report's plots: one PNG per workload, medians and rounds against concurrency
(`bench.report`); per point, each variant's runs (`bench.report_variants`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.profiles import LABELS
from bench.report_data import (
    METRICS,
    median,
    runs_by_key,
)


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


def tick_labels(variants: list[str]) -> list[str]:
    """Axis labels for variants named `name --flag value --flag ...`: each name with only the
    flags not every variant has (the engine settings they share would overprint), one a line."""
    parts = [v.split(" --") for v in variants]
    shared = set.intersection(*(set(p[1:]) for p in parts)) if parts else set()
    return ["\n--".join([p[0], *(f for f in p[1:] if f not in shared)]) for p in parts]


def variant_plot(rows: list[dict[str, Any]], path: Path) -> bool:
    """`bench.report_variants`' plot. Per point, two panels: each run's output tokens/s
    and vLLM's ITL per variant (dots, one column of them per session), the variant's
    median as a bar."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report_variants: matplotlib missing, no plot", file=sys.stderr)
        return False
    points = list(dict.fromkeys(r["point"] for r in rows))
    fig, axes = plt.subplots(len(points), 2, figsize=(10, 3.6 * len(points)), squeeze=False)
    for (ax_tok, ax_itl), point in zip(axes, points, strict=True):
        prow = [r for r in rows if r["point"] == point]
        variants = list(dict.fromkeys(r["variant"] for r in prow))
        for ax, key, title in (
            (ax_tok, "output_throughput", "output tok/s"),
            (ax_itl, "engine_itl_ms", "vLLM's inter-token latency, mean (ms)"),
        ):
            for x, variant in enumerate(variants):
                sessions = [r[key] for r in prow if r["variant"] == variant]
                values = [v for s in sessions for v in s if v is not None]
                ax.bar(x, median(values) or 0, width=0.6, alpha=0.25, color=f"C{x}")
                for j, s in enumerate(sessions):
                    dx = (j - (len(sessions) - 1) / 2) * 0.12
                    ax.scatter([x + dx] * len(s), s, s=14, color=f"C{x}")
            ax.set_xticks(range(len(variants)))
            ax.set_xticklabels(tick_labels(variants), fontsize=8)
            ax.set_title(f"{point}: {title}")
            ax.grid(alpha=0.3, axis="y")
    fig.suptitle("bars: medians over runs; dots: runs, one column per session")
    # room for the title above the first row's own titles (tight_layout leaves none)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
