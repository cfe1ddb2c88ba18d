"""Several servers up at once, one streamed request at a time, taking turns.

    python -m bench.paired --profile gpu --model DIR --workload 1024x128 --requests 100 \\
        --server vllm --server gateway --server 'gw1=gateway --api-server-count 1' \\
        --server 'gwfork=VLLM_WORKER_MULTIPROC_METHOD=fork gateway --api-server-count 1'

`bench.run` runs one server at a time, and on the H200 two sessions of the same server
minutes apart differed by more (c=1 TTFT p50 23 to 36 ms) than the servers did. Here the
servers share each moment: request i goes to every server in turn, in an order rotated
by i, so drift falls on all of them alike and request i's TTFTs pair up. Each engine gets
an equal share of the GPU's memory (`--gpu-memory-utilization`; c=1 needs little KV
cache). Per request it records the client's TTFT (first chunk with choices, as `vllm bench
serve` times it), the time to the first chunk with text and TPOT, and vLLM's own timings
of that request, read from the server's `/metrics` before and after it
(`bench.engine_stats`: TTFT from the request's arrival, queue, prefill, inter-token).
`--sampling` sets what the client sends, as in `bench.run`. A spec's `GATEWAY_ROOT=DIR`
word runs that gateway from another checkout (say, the commit before a change: both
versions side by side); it is not passed on to the server's environment.
`--system TEXT` sends every prompt a second time to each server behind that system
message (target `<label>+sys`): the gateway adds an empty one where a request has none,
so this sets the two servers' prompts to the same tokens.
`--deadline-s` (as `gpu_run.sh` passes its call's time left): a server that could not
be ready with `--turns-s` still to spare is not started, and the turns stop in time to
stop the servers (`cut_at_deadline` in the summary).
Results: --out/summary.json (medians, paired differences against the first target, and
every sample); with several workloads (`--workload 1024x128,128x128`, one after another on
the same servers, which on the H200 take minutes to start) one summary-<IN>x<OUT>.json each.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench import engine_stats
from bench.commands import bench_server, ensure_model, memory_share
from bench.first_text import random_prompts
from bench.machine import favoured_client
from bench.options import sampling_values
from bench.paired_specs import ServerSpec, parse_specs
from bench.paired_start import start_each
from bench.paired_stats import engine_sample, summarize
from bench.profiles import PROFILES, ROOT
from bench.servers import ServerProcess, stop_all, stop_all_on_exit
from bench.sse import StreamTimes, chat_stream

T = TypeVar("T")
Samples = dict[str, list[dict[str, float] | None]]  # per target, one entry per turn


def turn_order(labels: list[T], i: int) -> list[T]:
    """Request i's order: the labels rotated by i, so each server goes first as often."""
    k = i % len(labels)
    return labels[k:] + labels[:k]


def timed_request(port: int, body: dict[str, Any]) -> dict[str, float]:
    """One streamed request: TTFT (first chunk with choices), time to the first chunk with
    text (vllm serve's first chunk is an empty role chunk, the gateway's carries text),
    end-to-end time and the token counts of the final usage chunk; ValueError when it is
    not a 200."""
    times = StreamTimes()
    with chat_stream(port, body) as events:
        for now, event in events:
            times.see(now, event)
    ttft, end = times.first, times.end
    if ttft is None:
        raise ValueError("no chunk with choices")
    tokens = int(times.usage.get("completion_tokens") or 0)
    out = {
        "ttft_ms": ttft * 1000,
        "e2e_ms": end * 1000,
        "tokens": float(tokens),
        "prompt_tokens": float(times.usage.get("prompt_tokens") or 0),
    }
    if times.text is not None:
        out["text_ms"] = times.text * 1000
    if tokens > 1:
        out["tpot_ms"] = (end - ttft) * 1000 / (tokens - 1)
    return out


@dataclass(frozen=True)
class Target:
    """Where request i goes: a server, with or without a system message of its own."""

    label: str
    server: str
    system: str | None


def targets(specs: list[ServerSpec], system: str | None) -> list[Target]:
    """One target per server; with `system`, each server twice: the user message alone
    and the same behind that system message (`<label>+sys`)."""
    out = [Target(s.label, s.label, None) for s in specs]
    if system is not None:
        out += [Target(f"{s.label}+sys", s.label, system) for s in specs]
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.paired", description=__doc__)
    p.add_argument("--server", action="append", default=[], help="[LABEL=]vllm|gateway [FLAGS]")
    p.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    p.add_argument("--model", default=None)
    p.add_argument("--preset", default=None)
    p.add_argument("--python", default=sys.executable)
    p.add_argument(
        "--workload",
        default="128x64",
        help="IN x OUT tokens; several, comma-separated, run one after another on the same "
        "servers (one summary-<IN>x<OUT>.json each)",
    )
    p.add_argument("--requests", type=int, default=50, help="per server")
    p.add_argument("--warmups", type=int, default=3, help="per server, not counted")
    p.add_argument(
        "--memory-share", type=float, default=None, help="--gpu-memory-utilization per engine"
    )
    p.add_argument(
        "--system", default=None, help="also send each prompt behind this system message"
    )
    p.add_argument(
        "--sampling",
        type=sampling_values,
        default=None,
        help="what the client sends (as bench.run's --sampling); default the profile's",
    )
    p.add_argument(
        "--ready-timeout-s",
        type=float,
        default=300.0,
        help="a server not ready by then is dropped and the others take their turns "
        "(cold starts on the H200: 82-133 s)",
    )
    p.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="seconds this run may take: servers must be ready by then less --turns-s (a "
        "later one is dropped), and the turns stop in time to stop the servers",
    )
    p.add_argument("--turns-s", type=float, default=120.0, help="kept for the turns")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=18600, help="first port; +10 per server")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    args.specs = parse_specs(p, args.server)
    return args


def summary_path(out: Path, workload: str, several: bool) -> Path:
    """`summary.json`, or with several workloads one `summary-<IN>x<OUT>.json` each."""
    return out / (f"summary-{workload}.json" if several else "summary.json")


STOP_S = 20.0  # kept at the deadline for stopping the servers


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    end = None if args.deadline_s is None else time.monotonic() + args.deadline_s - STOP_S

    def out_of_time() -> bool:
        return end is not None and time.monotonic() > end

    stop_all_on_exit()
    prof = PROFILES[args.profile]
    model = ensure_model(args, prof)
    out = Path(args.out or ROOT / "bench" / "results" / "tmp" / "paired")
    out.mkdir(parents=True, exist_ok=True)
    memory = memory_share(prof.name, len(args.specs), args.memory_share)
    servers: dict[str, ServerProcess] = {}
    sampling = prof.sampling if args.sampling is None else args.sampling
    goals = targets(args.specs, args.system)
    workloads = args.workload.split(",")
    results: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}
    dropped: dict[str, str] = {}  # label: why it never took a turn

    def save(
        workload: str, samples: Samples, errors: dict[str, str], cut: bool = False
    ) -> dict[str, Any]:
        summary = summarize(samples) if all(samples.values()) else {}
        result = {
            "args": {k: v for k, v in vars(args).items() if k != "specs"} | {"workload": workload},
            "servers": {
                s.label: {"kind": s.kind, "flags": [*s.flags, *memory], "env": dict(s.env)}
                for s in args.specs
            },
            "summary": summary,
            "errors": errors,
            "dropped": dropped,
            "cut_at_deadline": cut,
            "samples": samples,
        }
        path = summary_path(out, workload, len(workloads) > 1)
        path.write_text(json.dumps(result, indent=1) + "\n")
        return summary

    def send(target: Target, prompt: str, out_len: int) -> dict[str, float]:
        messages = [{"role": "user", "content": prompt}]
        if target.system is not None:
            messages.insert(0, {"role": "system", "content": target.system})
        body = {
            "model": model,
            "messages": messages,
            "max_tokens": out_len,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
            **sampling,
        }
        server = servers[target.server]
        before = engine_stats.snapshot(server.base_url)
        sample = timed_request(server.port, body)
        after = engine_stats.snapshot(server.base_url)
        return sample | engine_sample(engine_stats.timings(before, after))

    def run(workload: str) -> None:
        in_len, out_len = (int(x) for x in workload.split("x"))
        samples: Samples = {t.label: [] for t in goals}
        errors: dict[str, str] = {}
        prompts = random_prompts(model, in_len, args.requests + args.warmups, args.seed)
        for i, prompt in enumerate(prompts[: args.warmups]):
            for target in turn_order(goals, i):
                send(target, prompt, out_len)
        cut = False
        for i, prompt in enumerate(prompts[args.warmups :]):
            if out_of_time():
                cut = True  # what ran is kept; the servers still get stopped in time
                print(f"paired: deadline, {workload} cut after {i} turns", flush=True)
                break
            for target in turn_order(goals, i):
                try:
                    samples[target.label].append(send(target, prompt, out_len))
                except (OSError, ValueError) as exc:
                    samples[target.label].append(None)
                    errors.setdefault(target.label, str(exc)[:300])
            save(workload, samples, errors)  # after every turn: a cut run keeps what it has
        results[workload] = (save(workload, samples, errors, cut), errors)

    def make(n: int, spec: ServerSpec) -> ServerProcess:
        server = bench_server(
            spec.kind, prof, python=args.python, model=model, port=args.port + 10 * n,
            log_path=out / f"server-{spec.label}.log", extra=[*spec.flags, *memory],
            frontend=spec.frontend, gateway_root=spec.root,
        )  # fmt: skip
        server.env.update(spec.process_env)
        return server

    try:
        ready, gone = start_each(
            ((s.label, functools.partial(make, n, s)) for n, s in enumerate(args.specs)),
            args.ready_timeout_s, say=lambda line: print(line, flush=True),
            ready_by=None if end is None else end - args.turns_s, clock=time.monotonic,
        )  # fmt: skip
        servers.update(ready)
        dropped.update(gone)
        goals[:] = [t for t in goals if t.server in servers]
        if len(servers) < 2:
            print("paired: fewer than two servers ready, nothing to pair", flush=True)
            return 1
        with favoured_client():
            for workload in workloads:
                if out_of_time():
                    break
                run(workload)
    finally:
        for server in servers.values():
            server.stop()
        stop_all()
    print(json.dumps({w: {"summary": s, "errors": e} for w, (s, e) in results.items()}, indent=1))
    complete = len(results) == len(workloads)
    return 0 if complete and all(s and not e for s, e in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
