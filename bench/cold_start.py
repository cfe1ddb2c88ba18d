"""A fresh server's first requests: what the first clients of a new machine wait for.

    python -m bench.cold_start --profile gpu --model DIR --server vllm \\
        --server 'gw=gateway --api-server-count 1' \\
        --server 'nowarm=gateway --api-server-count 1 --no-warmup'

Each server in turn (one at a time) starts with an empty Triton cache of its own
(`TRITON_CACHE_DIR`, so kernels compiled by an earlier start don't hide the cost), is
timed to ready, and then gets bursts of streamed requests with the profile's sampling,
all of a burst at once and the bursts one after another (default 1, 16, 17, 1: vLLM 0.26
builds a top-k/top-p Triton kernel per batch-size class, alone, a multiple of 16, other,
the first time each occurs). Per burst: every request's TTFT (first chunk with choices),
time to first text and end-to-end time, and the burst's wall time. `--repeats N` runs the
whole list N times, in turn. Results: --out/summary.json, rewritten after every server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.commands import bench_server, ensure_model
from bench.first_text import random_prompts
from bench.machine import favoured_client
from bench.paired import timed_request
from bench.paired_specs import ServerSpec, parse_specs
from bench.profiles import PROFILES, ROOT
from bench.servers import stop_all_on_exit


def burst_sizes(text: str) -> list[int]:
    sizes = [int(x) for x in text.split(",") if x.strip()]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--bursts {text!r}: expected positive integers, comma-separated")
    return sizes


def burst_summary(samples: list[dict[str, float] | None], wall_s: float) -> dict[str, Any]:
    """One burst: its size, failures, wall time, and the TTFTs' median and maximum."""
    done = [s for s in samples if s is not None]
    ttfts = [s["ttft_ms"] for s in done]
    return {
        "size": len(samples),
        "failed": len(samples) - len(done),
        "wall_ms": round(wall_s * 1000, 1),
        "ttft_ms_p50": round(statistics.median(ttfts), 1) if ttfts else None,
        "ttft_ms_max": round(max(ttfts), 1) if ttfts else None,
        "samples": samples,
    }


def run_bursts(port: int, bodies: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """The bursts in order; a burst's requests all at once, each with its own prompt."""
    out = []
    used = 0
    with ThreadPoolExecutor(max(sizes)) as pool:
        for size in sizes:
            batch = bodies[used : used + size]
            used += size

            def one(body: dict[str, Any]) -> dict[str, float] | None:
                try:
                    return timed_request(port, body)
                except (OSError, ValueError):
                    return None

            start = time.perf_counter()
            samples = list(pool.map(one, batch))
            out.append(burst_summary(samples, time.perf_counter() - start))
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__)
    p.add_argument("--profile", default="gpu", choices=sorted(PROFILES))
    p.add_argument("--model", default=None, help="model directory (default: the profile's)")
    p.add_argument("--preset", default=None, help="tiny-model preset when --model is not given")
    p.add_argument("--server", action="append", default=[], help="[LABEL=[VAR=VALUE...]]KIND")
    p.add_argument("--bursts", type=burst_sizes, default=[1, 16, 17, 1])
    p.add_argument("--workload", default="128x16", help="IN x OUT tokens per request")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--deadline-s", type=float, default=None, help="start no server after it")
    p.add_argument("--start-estimate-s", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=18700)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    args.specs = parse_specs(p, args.server)
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    t0 = time.monotonic()
    stop_all_on_exit()
    prof = PROFILES[args.profile]
    model = ensure_model(args, prof)
    out = Path(args.out or ROOT / "bench" / "results" / "tmp" / "cold")
    out.mkdir(parents=True, exist_ok=True)
    in_len, out_len = (int(x) for x in args.workload.split("x"))
    prompts = random_prompts(model, in_len, sum(args.bursts), args.seed)
    bodies = [
        {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": out_len,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
            **prof.sampling,
        }
        for prompt in prompts
    ]
    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        for spec in args.specs:
            left = None if args.deadline_s is None else args.deadline_s - (time.monotonic() - t0)
            if left is not None and left < args.start_estimate_s:
                print(f"cold_start: {left:.0f} s left, not starting {spec.label}", flush=True)
                break
            runs.append(_one(spec, rep, args, prof, model, out, bodies))
            (out / "summary.json").write_text(
                json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs},
                           indent=1) + "\n"
            )  # fmt: skip
    return 0


def _one(
    spec: ServerSpec, rep: int, args: Any, prof: Any, model: str, out: Path, bodies: list[Any]
) -> dict[str, Any]:
    """Start one server on an empty Triton cache, time it to ready, run the bursts, stop."""
    server = bench_server(
        spec.kind, prof, python=args.python, model=model, port=args.port,
        log_path=out / f"server-{spec.label}-{rep}.log", extra=list(spec.flags),
    )  # fmt: skip
    server.env.update(spec.env)
    with tempfile.TemporaryDirectory(prefix="triton-") as cache:
        server.env["TRITON_CACHE_DIR"] = cache
        run: dict[str, Any] = {"label": spec.label, "repeat": rep, "env": dict(spec.env)}
        try:
            server.start()
            run["ready_s"] = round(server.wait_ready(900), 1)
            with favoured_client():
                run["bursts"] = run_bursts(server.port, bodies, args.bursts)
        except Exception as exc:  # a server that fails to start is a result too
            run["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            server.stop()
    firsts = [b["ttft_ms_max"] for b in run.get("bursts", [])]
    print(f"cold_start: {spec.label} #{rep} ready {run.get('ready_s')} s, "
          f"burst TTFT max {firsts} ms", flush=True)  # fmt: skip
    return run


if __name__ == "__main__":
    raise SystemExit(main())
