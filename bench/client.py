"""One benchmark client process per server session: its plan, and what its events record.

`bench.run` starts `python -m bench.vllm_bench --plan PLAN.json` once per server session;
the client prints `@@bench` events (see `bench.vllm_bench`) that `follow` passes on and
`on_start` / `on_end` turn into the run records of the results file.
"""

from __future__ import annotations

import datetime as dt
import json
import queue
import subprocess
import zlib
from pathlib import Path
from typing import IO, Any, Protocol

from bench.commands import client_argv, num_prompts, scalar_metrics
from bench.procfs import busiest_threads
from bench.profiles import Profile

Event = dict[str, Any]


class CpuMeter(Protocol):
    def cpu_seconds(self) -> tuple[float | None, float | None]: ...

    def engine_threads(self) -> dict[str, float]: ...

    def worker_cpu(self) -> dict[str, float]: ...


def prompt_seed(seed: int, rnd: int, workload: tuple[int, int], conc: int, pinned: bool) -> int:
    """The random dataset's seed for one run: `seed` mixed with the run's round and point.

    `vllm bench serve`'s random prompts follow from its seed alone (for a given count, and
    the first prompts of a longer run are a shorter run's), so one seed for every run
    served round 2's prompts from round 1's prefix cache: 99% hits at 1024x128@1 on the
    H200 (session 26), where the first round had none. Each run now has prompts of its
    own; a server's round r at a point gets the same prompts as the other servers' round r.
    """
    key = f"{rnd}:{workload[0]}x{workload[1]}@{conc}{':pin' if pinned else ''}"
    return (seed + zlib.crc32(key.encode())) % 2**31


def build_plan(
    prof: Profile,
    name: str,
    rnd: int,
    *,
    python: str,
    model: str,
    port: int,
    seed: int,
    results_dir: Path,
    pinned: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The client's plan (`[{"tag", "argv", "point"}]`) and an empty run record per tag;
    `pinned` runs (the engine core on CPUs of its own, `bench.affinity`) are tagged
    `NAME-pin-...`."""
    plan: list[dict[str, Any]] = []
    runs: dict[str, dict[str, Any]] = {}
    for workload, conc in prof.points():
        prompts = num_prompts(prof, workload, conc)
        warmups = min(conc, prof.warmups_cap)
        tag = f"{name}{'-pin' if pinned else ''}-r{rnd}-{workload[0]}x{workload[1]}-c{conc}"
        if tag in runs:  # the same point twice (`--concurrency 8,8`): keep both
            tag += f"-{sum(t.startswith(tag) for t in runs) + 1}"
        run_seed = prompt_seed(seed, rnd, workload, conc, pinned)
        argv = client_argv(
            python, model, port, workload, conc, prompts, warmups, run_seed, prof.sampling,
            results_dir, tag + ".json",
        )  # fmt: skip
        point = f"{workload[0]}x{workload[1]}-c{conc}"  # the client times each point's runs
        plan.append({"tag": tag, "argv": argv[3:], "point": point})  # argv less `python -m`
        runs[tag] = {
            "server": name,
            "round": rnd,
            "workload": f"{workload[0]}x{workload[1]}",
            "input_len": workload[0],
            "output_len": workload[1],
            "concurrency": conc,
            "num_prompts": prompts,
            "num_warmups": warmups,
            "seed": run_seed,
        }
        if pinned:
            runs[tag]["pinned"] = True
    return plan, runs


def follow(
    proc: subprocess.Popen[bytes], log: IO[bytes], events: queue.Queue[Event | None]
) -> None:
    """Copy the client's output to its log; pass `@@bench` events on, then None."""
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        log.flush()
        event = parse_event(line)
        if event is not None:
            events.put(event)
    events.put(None)


def parse_event(line: bytes) -> Event | None:
    """The event of a client's `@@bench {...}` output line (see `bench.vllm_bench`)."""
    if not line.startswith(b"@@bench "):
        return None
    try:
        event: Event = json.loads(line[8:])
    except ValueError:
        return None
    return event


def on_start(run: dict[str, Any], event: Event, server: CpuMeter) -> None:
    run["loadavg_before"] = event.get("loadavg")
    run["_cpu0"] = server.cpu_seconds()
    run["_threads0"] = server.engine_threads()
    run["_workers0"] = server.worker_cpu()
    run["started"] = (
        dt.datetime.fromtimestamp(event["time"]).astimezone().isoformat(timespec="milliseconds")
    )


def on_end(run: dict[str, Any], event: Event, server: CpuMeter, results_dir: Path) -> str:
    """Record a finished run (metrics, CPU used); the line to log about it."""
    run["loadavg_after"] = event.get("loadavg")
    run["wall_s"] = event.get("wall_s")
    run["client_ok"] = event.get("ok")
    cpu, busy = event.get("client_cpu_s"), event.get("client_busy_wall_s")
    if cpu is not None and busy:
        # the client's own CPU while it sent requests: near 1.0, it is the limit
        run["client_cpu_s"] = cpu
        run["client_cpu_util"] = round(cpu / busy, 2)
    _cpu_use(run, server)
    if event.get("engine_timings"):
        run["engine_timings"] = event["engine_timings"]  # vLLM's own means (bench.engine_stats)
    tag = event.get("tag", "")
    result_path = results_dir / (tag + ".json")
    if not (event.get("ok") and result_path.is_file()):
        run["error"] = "client failed; see the client log"
        return f"{tag}: client failed"
    run["metrics"] = m = scalar_metrics(json.loads(result_path.read_text()))
    if "api_server_cpu_s" in run and m.get("total_output_tokens"):
        tokens = m["total_output_tokens"] + run["num_warmups"] * run["output_len"]
        run["cpu_tokens"] = tokens
        run["api_server_cpu_us_per_token"] = round(run["api_server_cpu_s"] / tokens * 1e6, 1)
    return (
        f"{tag}: {m.get('request_throughput', 0):.2f} req/s, "
        f"{m.get('output_throughput', 0):.0f} tok/s, "
        f"TTFT p50 {m.get('median_ttft_ms', 0):.1f} ms, "
        f"TPOT p50 {m.get('median_tpot_ms', 0):.2f} ms, failed {m.get('failed')}"
    )


def _cpu_use(run: dict[str, Any], server: CpuMeter) -> None:
    """CPU the front end (API server and HTTP workers) and the engine processes spent on
    this run, warm-ups included; and the engine core's busiest threads (its busy loop,
    its output thread: how its one interpreter lock is shared)."""
    threads0, threads1 = run.pop("_threads0", {}), server.engine_threads()
    if threads1:
        run["engine_core_threads_cpu_s"] = busiest_threads(threads0, threads1)
    workers0, workers1 = run.pop("_workers0", {}), server.worker_cpu()
    if workers1:  # how the HTTP workers shared the load (`--connections-per-worker`)
        run["http_workers_cpu_s"] = {
            name: round(cpu - workers0.get(name, 0.0), 3) for name, cpu in sorted(workers1.items())
        }
    api0, eng0 = run.pop("_cpu0", (None, None))
    api1, eng1 = server.cpu_seconds()
    if api0 is None or api1 is None:
        return
    run["api_server_cpu_s"] = round(api1 - api0, 3)
    run["cpu_counts_http_workers"] = True  # results before this counted the launcher only
    run["cpu_counts_rust_frontend"] = True  # before this, vllm-rs counted as the engine's
    if eng0 is not None and eng1 is not None:
        run["engine_procs_cpu_s"] = round(eng1 - eng0, 3)
    run["cpu_tokens"] = (run["num_prompts"] + run["num_warmups"]) * run["output_len"]
