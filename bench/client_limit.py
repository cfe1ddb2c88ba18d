"""Is the benchmark client the limit? The same load on one server from one `vllm bench
serve` process and from K of them sharing it (each at concurrency/K with prompts/K).

    python -m bench.client_limit --profile gpu --server gateway --workload 128x1024 \\
        --concurrency 256 --clients 1,2,1 --prompts 768

If K client processes get more out of the same server than one, one Python client (one
core: it parses every SSE chunk) was what the benchmark measured. For each step it prints
the summed output tokens/s, each client's own CPU use while it sent requests (near 1.0:
saturated), the server's front-end and engine CPU, and the GPU's busy share (nvidia-smi,
when there is one). Results: --out/summary.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.client import parse_event
from bench.commands import bench_server, client_argv, ensure_model
from bench.flag_strings import FLAGS, parse
from bench.profiles import PROFILES, ROOT
from bench.servers import stop_all


def run_clients(
    args: argparse.Namespace, model: str, k: int, step: int, out: Path
) -> list[dict[str, Any]]:
    """K client processes at once, each one item of `bench.vllm_bench --plan`; their
    `end` events and benchmark results."""
    i, o = (int(x) for x in args.workload.split("x"))
    procs = []
    for n in range(k):
        tag = f"s{step}-k{k}-{n}"
        argv = client_argv(
            args.python, model, args.port, (i, o), args.concurrency // k, args.prompts // k,
            0, args.seed + n, PROFILES[args.profile].sampling, out, tag + ".json",
        )  # fmt: skip
        (out / f"{tag}.json").unlink(missing_ok=True)  # no stale result from an earlier call
        plan = out / f"plan-{tag}.json"
        plan.write_text(json.dumps([{"tag": tag, "argv": argv[3:]}]))
        log = open(out / f"client-{tag}.log", "wb")  # noqa: SIM115 - closed below
        cmd = [args.python, "-m", "bench.vllm_bench", "--plan", str(plan)]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        procs.append((tag, log, proc))
    runs = []
    deadline = time.monotonic() + args.timeout_s
    for tag, log, proc in procs:
        try:
            proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # counted as failed (no end event, no result)
            proc.kill()
            proc.wait(10)
        log.close()
        end = _end_event(out / f"client-{tag}.log")
        result_path = out / f"{tag}.json"
        result = json.loads(result_path.read_text()) if result_path.is_file() else {}
        runs.append(
            {
                "tag": tag,
                "ok": bool(end.get("ok")) and bool(result),
                "client_cpu_s": end.get("client_cpu_s"),
                "client_busy_wall_s": end.get("client_busy_wall_s"),
                "client_busy_span": end.get("client_busy_span") or [None, None],
                "duration_s": result.get("duration"),
                "output_tokens": result.get("total_output_tokens"),
                "output_throughput": result.get("output_throughput"),
                "median_tpot_ms": result.get("median_tpot_ms"),
            }
        )
    return runs


def _end_event(log_path: Path) -> dict[str, Any]:
    for line in reversed(log_path.read_bytes().splitlines()):
        event = parse_event(line)
        if event is not None and event.get("event") == "end":
            return event
    return {}


def gpu_busy_sampler(out: Path) -> subprocess.Popen[bytes] | None:
    """nvidia-smi printing the GPU's busy percentage every 200 ms, when there is a GPU."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    return subprocess.Popen(
        [smi, "--query-gpu=timestamp,utilization.gpu", "--format=csv,noheader", "-lms", "200"],
        stdout=open(out / "gpu-util.txt", "wb"),
        stderr=subprocess.DEVNULL,
    )


def busy_share(path: Path, since: float, until: float) -> float | None:
    """Mean GPU busy % of nvidia-smi's samples (`YYYY/MM/DD HH:MM:SS.fff, pct` lines)
    taken between the epochs `since` and `until`."""
    values = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        stamp, _, pct = line.partition(",")
        with contextlib.suppress(ValueError):
            when = dt.datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            if since <= when <= until:
                values.append(float(pct.strip().rstrip("%").strip()))
    return round(sum(values) / len(values), 1) if values else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.client_limit")
    p.add_argument("--server", choices=("gateway", "vllm"), default="gateway")
    p.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    p.add_argument("--model", default=None)
    p.add_argument("--preset", default=None)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--workload", default="128x64")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--prompts", type=int, default=256)
    p.add_argument("--clients", default="1,2,1", help="client processes per step")
    p.add_argument("--server-args", default="", metavar=FLAGS, help="extra flags for the server")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=18491)
    p.add_argument("--timeout-s", type=float, default=300.0)
    p.add_argument("--out", default=None)
    args = parse(p, argv)
    prof = PROFILES[args.profile]
    model = ensure_model(args, prof)
    out = Path(args.out or ROOT / "bench" / "results" / "tmp" / f"client-limit-{args.server}")
    out.mkdir(parents=True, exist_ok=True)
    server = bench_server(
        args.server, prof, python=args.python, model=model, port=args.port,
        log_path=out / "server.log", extra=shlex.split(args.server_args),
    )  # fmt: skip
    sampler = None
    steps: list[dict[str, Any]] = []
    try:
        server.start()
        print(f"client_limit: {args.server} ready after {server.wait_ready(900):.0f} s", flush=True)
        sampler = gpu_busy_sampler(out)
        for step, k in enumerate(int(x) for x in args.clients.split(",")):
            cpu0 = server.cpu_seconds()
            runs = run_clients(args, model, k, step, out)
            cpu1 = server.cpu_seconds()
            # the span in which any client sent requests (the server idles outside it)
            since = min((r["client_busy_span"][0] or 1e18) for r in runs)
            until = max((r["client_busy_span"][1] or 0.0) for r in runs)
            wall = max(until - since, 1e-9)
            row = {
                "clients": k,
                "output_tok_s_sum": round(sum(r["output_throughput"] or 0 for r in runs), 1),
                "client_cpu_util": [
                    round(r["client_cpu_s"] / r["client_busy_wall_s"], 2)
                    if r["client_cpu_s"] is not None and r["client_busy_wall_s"]
                    else None
                    for r in runs
                ],
                "server_front_end_cpu_util": _util(cpu0[0], cpu1[0], wall),
                "server_engine_cpu_util": _util(cpu0[1], cpu1[1], wall),
                "busy_span_s": round(wall, 2),
                "gpu_busy_pct": busy_share(out / "gpu-util.txt", since, until) if sampler else None,
                "runs": runs,
            }
            steps.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
    finally:
        if sampler is not None:
            sampler.terminate()
        server.stop()
        stop_all()
        summary = {"args": vars(args), "steps": steps}
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if steps and all(r["ok"] for s in steps for r in s["runs"]) else 1


def _util(a: float | None, b: float | None, wall: float) -> float | None:
    return None if a is None or b is None else round((b - a) / wall, 2)


if __name__ == "__main__":
    sys.exit(main())
