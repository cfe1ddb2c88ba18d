"""Profile one server's API-server process under `vllm bench serve` load with py-spy.

    .venv/bin/pip install py-spy            # not in the lock: a tool, not a dependency
    python -m bench.profile --server gateway --concurrency 64 --seconds 30
    python -m bench.profile --server vllm --concurrency 64 --seconds 30

Starts the server as `bench.run` does (same flags, same environment), starts a long
benchmark against it, lets it warm up, records the API-server process with py-spy
(`--nonblocking`, raw collapsed stacks, no idle frames), stops everything, and prints where
the process's time went: by leaf frame's package, by our own functions (self and
inclusive), plus its CPU seconds per output token over the recording. `--engine-core`
records vLLM's engine core process instead, the same way beside either server (and beside
vLLM's Rust frontend, `--vllm-frontend rust`, whose own process py-spy can't read). Files
land in --out (default bench/results/tmp/profile-<server>-c<N>/).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench import engine_stats
from bench.commands import VLLM_FRONTENDS, bench_server, client_argv, ensure_model
from bench.flag_strings import FLAGS, parse
from bench.options import sampling_values
from bench.procfs import engine_core_pid
from bench.profile_summary import summarize, summarize_processes
from bench.profiles import PROFILES, ROOT
from bench.servers import stop_all


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile")
    p.add_argument("--server", choices=("gateway", "vllm"), default="gateway")
    p.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    p.add_argument("--model", default=None)
    p.add_argument("--preset", default=None)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--workload", default="128x64")
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--prompts", type=int, default=None, help="default: max(2000, 40 x conc)")
    p.add_argument("--warmup-s", type=int, default=25, help="load before recording starts")
    p.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    p.add_argument("--port", type=int, default=18471)
    p.add_argument("--out", default=None)
    p.add_argument("--gateway-root", default=None, help="run the gateway from this checkout")
    p.add_argument("--server-args", default="", metavar=FLAGS, help="extra flags, one string")
    p.add_argument("--vllm-frontend", choices=VLLM_FRONTENDS, default="python")
    p.add_argument("--sampling", type=sampling_values, default=None, help="as bench.run's")
    p.add_argument("--engine-core", action="store_true", help="record the engine core")
    p.add_argument(
        "--gil",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="sample only threads holding the GIL (on-CPU Python; default on)",
    )
    p.add_argument(
        "--subprocesses",
        action="store_true",
        help="record the server's child processes too (HTTP workers, engine core); "
        "summarized per process",
    )
    args = parse(p, argv)
    py_spy = shutil.which("py-spy") or str(Path(args.python).parent / "py-spy")
    if not Path(py_spy).exists():
        raise SystemExit("py-spy not found: .venv/bin/pip install py-spy")
    prof = PROFILES[args.profile]
    if args.sampling is not None:
        prof = dataclasses.replace(prof, sampling=args.sampling)
    model = ensure_model(args, prof)
    out = Path(
        args.out
        or ROOT / "bench" / "results" / "tmp" / f"profile-{args.server}-c{args.concurrency}"
    )
    out.mkdir(parents=True, exist_ok=True)
    i, o = (int(x) for x in args.workload.split("x"))
    server = bench_server(
        args.server, prof, python=args.python, model=model, port=args.port,
        log_path=out / "server.log", extra=shlex.split(args.server_args),
        gateway_root=args.gateway_root, frontend=args.vllm_frontend,
    )  # fmt: skip
    client = None
    try:
        server.start()
        print(f"profile: {args.server} ready after {server.wait_ready(900):.0f} s", flush=True)
        # outlast warm-up + recording (made first: 10k 1024-token prompts take a minute)
        prompts = args.prompts or max(2000, args.concurrency * 40)
        argv_c = client_argv(
            args.python, model, args.port, (i, o), args.concurrency, prompts, 0, 0,
            prof.sampling, out, "bench.json",
        )  # fmt: skip
        client = subprocess.Popen(
            argv_c, stdout=open(out / "client.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
            cwd=ROOT, start_new_session=True,
        )  # fmt: skip
        time.sleep(args.warmup_s)
        tokens0 = _tokens_from_metrics(args.port)
        cpu0, eng0 = server.cpu_seconds()
        per0 = cpu_by_process(server.proc.pid) if server.proc else {}
        t0 = time.monotonic()
        raw = out / "py-spy.txt"
        pid = server.proc.pid if server.proc else 0
        pid = engine_core_pid(pid) or pid if args.engine_core else pid
        subprocess.run(
            [py_spy, "record", "--pid", str(pid),
             "--duration", str(args.seconds), "--rate", str(args.rate), "--format", "raw",
             "--nonblocking", "--output", str(raw), *(["--gil"] if args.gil else []),
             *(["--subprocesses"] if args.subprocesses else [])],
            check=False, timeout=args.seconds + 60,
        )  # fmt: skip
        cpu1, eng1 = server.cpu_seconds()
        wall = time.monotonic() - t0
        per1 = cpu_by_process(server.proc.pid) if server.proc else {}
        tokens1 = _tokens_from_metrics(args.port)
        tokens = None if tokens0 is None or tokens1 is None else tokens1 - tokens0
        api_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        summary = summarize(raw) if raw.exists() else {}
        if args.subprocesses and raw.exists():
            summary["processes"] = summarize_processes(raw)
        summary.update(
            server=args.server,
            server_args=args.server_args,
            vllm_frontend=args.vllm_frontend,
            recorded="engine core" if args.engine_core else "API server",
            concurrency=args.concurrency,
            workload=args.workload,
            record_wall_s=round(wall, 1),
            py_spy_gil_only=args.gil,
            api_server_cpu_s=None if api_cpu is None else round(api_cpu, 2),
            api_server_cpu_util=None if api_cpu is None else round(api_cpu / wall, 2),
            engine_procs_cpu_s=None if eng0 is None or eng1 is None else round(eng1 - eng0, 2),
            output_tokens=tokens,
            output_tokens_per_s=None if tokens is None else round(tokens / wall, 1),
            api_server_cpu_us_per_token=None
            if not tokens or api_cpu is None
            else round(api_cpu / tokens * 1e6, 1),
            loadavg=os.getloadavg(),
            cpu_util_by_process={
                f"{pid} {cmd}": round((cpu - per0[pid][1]) / wall, 2)
                for pid, (cmd, cpu) in per1.items()
                if pid in per0
            },
        )  # fmt: skip
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(json.dumps(summary, indent=1))
    finally:
        if client is not None and client.poll() is None:
            os.killpg(client.pid, signal.SIGKILL)
            client.wait(10)
        server.stop()
        stop_all()
    return 0


def cpu_by_process(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of `pid` and each descendant, with its command line."""
    try:
        import psutil

        root = psutil.Process(pid)
        out: dict[int, tuple[str, float]] = {}
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = proc.cpu_times()
                out[proc.pid] = (" ".join(proc.cmdline()).strip()[:120], t.user + t.system)
        return out
    except Exception:
        return {}


def _tokens_from_metrics(port: int) -> float | None:
    text = engine_stats.fetch(f"http://127.0.0.1:{port}")
    try:
        return None if text is None else engine_stats.counter_total(text, "vllm:generation_tokens")
    except ValueError:  # not a Prometheus exposition
        return None


if __name__ == "__main__":
    sys.exit(main())
