"""vLLM's inter-token latency histogram written once per engine step, not once per token.

vLLM's Prometheus logger observes `vllm:inter_token_latency_seconds` once for every
generated token after a request's first. With several HTTP workers prometheus_client
runs in multiprocess mode, where one observation is two locked writes to a memory-mapped
file (the sum and one bucket): 3.5 µs on the CI machine, for every token of every stream.
`batched_prometheus_logger` gives vLLM a subclass of its own `PrometheusStatLogger` (the
documented `stat_loggers` extension point of `AsyncLLM`) that collects a step's
latencies and writes them at the end of the step's `record`: one write per bucket the
step touched and one for the sum. The counts and the sum are those of observing each
value, as any scrape between steps reads them.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

ITL_ATTRIBUTE = "histogram_inter_token_latency"


class StepHistogram:
    """Stands in for one prometheus_client `Histogram` child: `observe` keeps the value,
    `flush` adds what was kept to the child's buckets and sum."""

    __slots__ = ("bounds", "buckets", "total", "values")

    def __init__(self, child: Any) -> None:
        self.bounds: list[float] = list(child._upper_bounds)
        self.buckets: list[Any] = child._buckets
        self.total: Any = child._sum
        self.values: list[float] = []

    def observe(self, amount: float) -> None:
        self.values.append(amount)

    def flush(self) -> None:
        if not self.values:
            return
        values, self.values = self.values, []
        # prometheus_client counts a value in the first bucket whose bound is >= it
        for index, count in Counter(bisect.bisect_left(self.bounds, v) for v in values).items():
            self.buckets[index].inc(count)
        self.total.inc(sum(values))


def batchable(child: Any) -> bool:
    """Whether `child` has the prometheus_client internals `StepHistogram` writes to."""
    return all(hasattr(child, name) for name in ("_upper_bounds", "_buckets", "_sum"))


def batched_prometheus_logger() -> type | None:
    """vLLM's `PrometheusStatLogger` with the inter-token latencies written per step; None
    where this vLLM has no such logger (its own then records as it always does)."""
    try:
        from vllm.v1.metrics.loggers import PrometheusStatLogger
    except ImportError:
        return None

    class StepPrometheusStatLogger(PrometheusStatLogger):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            children = getattr(self, ITL_ATTRIBUTE, None)
            self.step_histograms: dict[Any, StepHistogram] = {}
            if isinstance(children, dict) and all(batchable(c) for c in children.values()):
                self.step_histograms = {k: StepHistogram(c) for k, c in children.items()}
                setattr(self, ITL_ATTRIBUTE, self.step_histograms)

        def record(self, *args: Any, **kwargs: Any) -> None:
            try:
                super().record(*args, **kwargs)
            finally:
                for histogram in self.step_histograms.values():
                    histogram.flush()

    return StepPrometheusStatLogger


def writes_per_step(llm: Any) -> bool:
    """Whether `llm` (an AsyncLLM) records through a logger of `batched_prometheus_logger`."""
    manager = getattr(llm, "logger_manager", None)
    loggers = getattr(manager, "stat_loggers", None) or []
    return any(getattr(logger, "step_histograms", None) for logger in loggers)
