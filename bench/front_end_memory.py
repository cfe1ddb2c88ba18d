"""The front end's memory with several HTTP workers, server by server: what a deployment
pays in RAM beside the engine.

    python -m bench.front_end_memory --profile cpu --preset tiny-qwen3-vocab --repeats 2 \\
        --server 'spawn=gateway --api-server-count 4 --worker-start spawn' \\
        --server 'forkserver=gateway --api-server-count 4 --worker-start forkserver'

Each server in turn (one at a time, the list `--repeats` times) is started, timed to
ready, sent `--requests` short chat requests at once, and then every process under it
but the engine core is read from /proc/PID/smaps (`bench.mem_map`): the launcher, the
fork server (`--worker-start forkserver`), each HTTP worker and any other helper. PSS
counts a page shared by several processes once in their sum, so the front end's total
PSS is what it costs the machine. Results: --out/summary.json (rewritten after every
server), and a Markdown table in --out/table.md and on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil

from bench.commands import bench_server, ensure_model
from bench.http_calls import post_json
from bench.mem_map import ProcessMemory, front_end, read_process
from bench.paired_specs import ServerSpec, parse_specs
from bench.procfs import is_api_worker, is_fork_server
from bench.profiles import PROFILES, ROOT
from bench.servers import stop_all_on_exit

DEFAULT_SERVERS = [
    "spawn=gateway --api-server-count 4 --worker-start spawn",
    "forkserver=gateway --api-server-count 4 --worker-start forkserver",
]


def role(proc: psutil.Process, root: int) -> str:
    """What a front-end process is: the one started, a fork server, an HTTP worker, or
    another helper (multiprocessing's resource tracker)."""
    if proc.pid == root:
        return "launcher"
    if is_fork_server(proc):
        return "fork server"
    if is_api_worker(proc):
        return "worker"
    return "other"


def summarize(processes: list[tuple[str, ProcessMemory]]) -> dict[str, Any]:
    """Totals in MiB: the whole front end, each role, and one worker's median."""

    def mib(kib: float) -> float:
        return round(kib / 1024, 1)

    workers = [p for r, p in processes if r == "worker"]

    def worker_median(kib_field: str) -> float | None:
        values = [getattr(p, kib_field) for p in workers]
        return mib(statistics.median(values)) if values else None

    by_role: dict[str, float] = {}
    for name, proc in processes:
        by_role[name] = by_role.get(name, 0.0) + proc.pss_kib
    return {
        "total_pss_mib": mib(sum(p.pss_kib for _, p in processes)),
        "total_rss_mib": mib(sum(p.rss_kib for _, p in processes)),
        "pss_by_role_mib": {name: mib(kib) for name, kib in sorted(by_role.items())},
        "workers": len(workers),
        "worker_pss_mib": worker_median("pss_kib"),
        "worker_private_mib": worker_median("private_kib"),
        "worker_rss_mib": worker_median("rss_kib"),
    }


def table(runs: list[dict[str, Any]]) -> str:
    """One Markdown row per run."""
    lines = [
        "| server | repeat | ready s | front-end PSS MiB | launcher | fork server | workers "
        "| one worker PSS / private / RSS | front-end RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        if "error" in run:
            lines.append(f"| {run['label']} | {run['repeat']} | {run['error']} |")
            continue
        s, roles = run["summary"], run["summary"]["pss_by_role_mib"]
        lines.append(
            f"| {run['label']} | {run['repeat']} | {run['ready_s']} | {s['total_pss_mib']} "
            f"| {roles.get('launcher', '-')} | {roles.get('fork server', '-')} "
            f"| {roles.get('worker', '-')} ({s['workers']}) "
            f"| {_cell(s['worker_pss_mib'])} / {_cell(s['worker_private_mib'])} "
            f"/ {_cell(s['worker_rss_mib'])} "
            f"| {s['total_rss_mib']} |"
        )
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "-" if value is None else str(value)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.front_end_memory", description=__doc__)
    p.add_argument("--profile", default="cpu", choices=sorted(PROFILES))
    p.add_argument("--model", default=None, help="model directory (default: the profile's)")
    p.add_argument("--preset", default=None, help="tiny-model preset when --model is not given")
    p.add_argument("--server", action="append", default=[], help="[LABEL=[VAR=VALUE...]]KIND")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--requests", type=int, default=16)
    p.add_argument("--port", type=int, default=18720)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    args.specs = parse_specs(p, args.server or DEFAULT_SERVERS)
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    stop_all_on_exit()
    prof = PROFILES[args.profile]
    model = ensure_model(args, prof)
    out = Path(args.out or ROOT / "bench" / "results" / "tmp" / "front-end-memory")
    out.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        for spec in args.specs:
            runs.append(_one(spec, rep, args, prof, model, out))
            (out / "summary.json").write_text(
                json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs},
                           indent=1) + "\n"
            )  # fmt: skip
    (out / "table.md").write_text(table(runs) + "\n", encoding="utf-8")
    sys.stdout.write(table(runs) + "\n")
    return 0


def _one(spec: ServerSpec, rep: int, args: Any, prof: Any, model: str, out: Path) -> dict[str, Any]:
    """Start one server, time it to ready, send the requests, read its memory, stop it."""
    server = bench_server(
        spec.kind, prof, python=args.python, model=model, port=args.port,
        log_path=out / f"server-{spec.label}-{rep}.log", extra=list(spec.flags),
        gateway_root=spec.root, frontend=spec.frontend,
    )  # fmt: skip
    server.env.update(spec.process_env)
    run: dict[str, Any] = {"label": spec.label, "repeat": rep, "flags": list(spec.flags)}
    try:
        server.start()
        run["ready_s"] = round(server.wait_ready(900), 1)
        body = {"model": model, "messages": [{"role": "user", "content": "hello"}],
                "max_tokens": 8, **prof.sampling}  # fmt: skip
        url = server.base_url + "/v1/chat/completions"
        with ThreadPoolExecutor(args.requests) as pool:
            replies = list(pool.map(lambda _: post_json(url, body, 120), range(args.requests)))
        run["answered"] = sum(1 for r in replies if r.get("choices"))
        time.sleep(1.0)  # let the workers settle after their last response
        assert server.proc is not None
        found = [(role(p, server.proc.pid), read_process(p, 4)) for p in front_end(server.proc.pid)]
        processes = [(name, mem) for name, mem in found if mem is not None]
        run["summary"] = summarize(processes)
        run["processes"] = [{"role": name, **asdict(mem)} for name, mem in processes]
    except Exception as exc:  # a server that fails to start is a result too
        run["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        server.stop()
    print(f"front_end_memory: {spec.label} #{rep} {run.get('summary', run.get('error'))}",
          flush=True)  # fmt: skip
    return run


if __name__ == "__main__":
    raise SystemExit(main())
