"""A report's plots: one PNG per workload, medians and rounds against concurrency."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.profiles import LABELS
from bench.report_data import (
    METRICS,
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
