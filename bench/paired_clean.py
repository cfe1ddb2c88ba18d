"""`bench.paired`'s pairs without the slow prefills, from a run's summary.json:

    python -m bench.paired_clean summary.json old new --prefill-below 50

On the 2-core box a quarter or more of the requests of a side-by-side run hit prefills of
400-900 ms (two engines on two cores), in phases that fall on one server and then the
other; their medians then say more about the phases than about the servers. This keeps
request i only where neither server's prefill reached `--prefill-below` ms and prints, as
JSON, the pairs kept and per measure (client TTFT, front end = client TTFT less vLLM's,
vLLM's TTFT, TPOT) each server's median and the median of the paired differences
(second server less first).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

Sample = dict[str, float]

MEASURES: dict[str, Callable[[Sample], float]] = {
    "ttft_ms": lambda s: s["ttft_ms"],
    "front_end_ms": lambda s: s["ttft_ms"] - s["vllm_ttft_ms"],
    "vllm_ttft_ms": lambda s: s["vllm_ttft_ms"],
    "tpot_ms": lambda s: s["tpot_ms"],
}


def clean_pairs(
    first: list[Sample | None], second: list[Sample | None], prefill_below_ms: float
) -> list[tuple[Sample, Sample]]:
    """Request i's samples where both were answered and neither prefill was slow."""
    return [
        (a, b)
        for a, b in zip(first, second, strict=True)
        if a is not None
        and b is not None
        and a.get("prefill_ms", float("inf")) < prefill_below_ms
        and b.get("prefill_ms", float("inf")) < prefill_below_ms
    ]


def compare(pairs: list[tuple[Sample, Sample]]) -> dict[str, Any]:
    """Per measure: [first's median, second's median, median of second − first]."""
    out: dict[str, Any] = {"pairs": len(pairs)}
    if not pairs:
        return out
    for name, read in MEASURES.items():
        firsts = [read(a) for a, _ in pairs]
        seconds = [read(b) for _, b in pairs]
        diffs = [read(b) - read(a) for a, b in pairs]
        out[name] = [round(statistics.median(v), 3) for v in (firsts, seconds, diffs)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summary", type=Path)
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--prefill-below", type=float, default=50.0, help="ms")
    args = parser.parse_args(argv)
    samples = json.loads(args.summary.read_text())["samples"]
    pairs = clean_pairs(samples[args.first], samples[args.second], args.prefill_below)
    result = {"of": len(samples[args.first]), **compare(pairs)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
