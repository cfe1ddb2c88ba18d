"""Command lines and environments of the servers and the client, the model, the
start-up probe, and the head of the results file."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import subprocess
from pathlib import Path
from typing import Any

from bench.http_calls import post_json
from bench.machine import loadavg, versions
from bench.profiles import (
    ROOT,
    Profile,
    hardware_name,
)
from bench.servers import ServerProcess
from bench.sse import chat_stream, first_delta, has_text

VLLM_FRONTENDS = ("python", "rust")
RUST_FRONTEND_VAR = "VLLM_USE_RUST_FRONTEND"


def ensure_model(args: argparse.Namespace, profile: Profile) -> str:
    if args.model:
        return str(Path(args.model).expanduser().resolve())
    preset = args.preset or ("qwen3-0.6b" if profile.name == "gpu" else "tiny")
    target = ROOT / "models" / f"bench-{preset}"
    if not (target / "config.json").is_file():
        print(f"bench: writing the {preset} model to {target}", flush=True)
        subprocess.run(
            [args.python, "-m", "app", "tiny-model", str(target), "--preset", preset],
            check=True,
            cwd=ROOT,
            timeout=900,
        )
    return str(target)


def server_argv(
    name: str,
    python: str,
    model: str,
    port: int,
    engine_args: list[str],
    extra: list[str] | None = None,
    frontend: str = "python",
) -> list[str]:
    """The server's command line; `extra` holds flags for this server only (e.g.
    `--api-server-count 4`); `frontend` picks vLLM's Python or Rust HTTP frontend."""
    host = ["--host", "127.0.0.1", "--port", str(port), *(extra or [])]
    if name == "vllm" and frontend == "rust":
        # vLLM starts its Rust frontend only from its CLI (`vllm serve`, which reads
        # VLLM_USE_RUST_FRONTEND); the api_server module ignores the variable. The CLI
        # is not usable on the CPU build (it looks up a package named "vllm").
        return [python, "-m", "vllm.entrypoints.cli.main", "serve", model, *host, *engine_args]
    if name == "vllm":
        return [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            *host,
            *engine_args,
        ]
    return [python, "-m", "app", "serve", model, *host, *engine_args]


SHARED_GPU_MEMORY = 0.8  # of the GPU's memory, split evenly among servers up at once
MEMORY_FLAG = "--gpu-memory-utilization"


def memory_share(profile: str, servers: int, share: float | None = None) -> list[str]:
    """The flags that give each of `servers` engines up at once its share of the memory:
    `share` when given, else on a GPU an equal part of `SHARED_GPU_MEMORY`; none on the CPU
    profile (`bench.paired`, `bench.run --together`)."""
    if not share and profile == "gpu":
        share = SHARED_GPU_MEMORY / max(servers, 1)
    return [MEMORY_FLAG, str(round(share, 3))] if share else []


def server_cwd(name: str, gateway_root: str | None) -> str:
    if name != "vllm" and gateway_root:
        return str(Path(gateway_root).resolve())
    return str(ROOT)


def bench_server(
    name: str,
    profile: Profile,
    *,
    python: str,
    model: str,
    port: int,
    log_path: Path,
    extra: list[str] | None = None,
    gateway_root: str | None = None,
    frontend: str = "python",
) -> ServerProcess:
    """A server as the harness runs it: the profile's engine flags and environment, `extra`
    flags for this server only, the gateway from `gateway_root` when given, vLLM's Rust
    frontend with `frontend="rust"`."""
    env = {**server_env(profile), **frontend_env(name, frontend)}
    return ServerProcess(
        name=name,
        argv=server_argv(name, python, model, port, profile.engine_args, extra, frontend),
        port=port,
        env=env,
        log_path=log_path,
        cwd=server_cwd(name, gateway_root),
    )


def frontend_env(name: str, frontend: str) -> dict[str, str]:
    """The variable that picks vLLM's Rust frontend, for its server only."""
    return {RUST_FRONTEND_VAR: "1"} if name == "vllm" and frontend == "rust" else {}


def server_env(profile: Profile) -> dict[str, str]:
    """The same environment for both: the caller's, minus GATEWAY_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    for key, value in profile.env.items():
        env.setdefault(key, value)  # a caller's value wins (e.g. a bigger KV cache)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def num_prompts(profile: Profile, workload: tuple[int, int], conc: int) -> int:
    key = f"{workload[0]}x{workload[1]}@{conc}"
    if key in profile.prompt_overrides:
        return profile.prompt_overrides[key]
    return max(profile.min_prompts, int(-(-profile.prompts_per_concurrency * conc // 1)))


def client_argv(
    python: str,
    model: str,
    port: int,
    workload: tuple[int, int],
    conc: int,
    prompts: int,
    warmups: int,
    seed: int,
    sampling: dict[str, float],
    result_dir: Path,
    result_file: str,
) -> list[str]:
    argv = [
        python,
        "-m",
        "bench.vllm_bench",
        "--backend",
        "openai-chat",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        model,
        "--tokenizer",
        model,
        "--dataset-name",
        "random",
        "--random-input-len",
        str(workload[0]),
        "--random-output-len",
        str(workload[1]),
        "--ignore-eos",
        "--num-prompts",
        str(prompts),
        "--max-concurrency",
        str(conc),
        "--request-rate",
        "inf",
        "--num-warmups",
        str(warmups),
        "--seed",
        str(seed),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--ready-check-timeout-sec",
        "120",
        "--disable-tqdm",
        "--save-result",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        result_file,
    ]
    if conc == 1:
        # per-request TTFTs and ITLs in the run's own JSON (results.json keeps scalars):
        # at c=1 the medians of a few dozen requests need their distribution beside them
        argv.append("--save-detailed")
    for key, value in sampling.items():
        argv += ["--" + key.replace("_", "-"), str(value)]
    return argv


def scalar_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's numbers without the per-request arrays."""
    return {k: v for k, v in result.items() if isinstance(v, int | float | str | bool) or v is None}


def probe(server: ServerProcess, model: str, out_len: int = 16) -> dict[str, Any]:
    """One plain and one streamed request: ignore_eos honoured, first chunk's content."""
    info: dict[str, Any] = {}
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Count from one to ten."}],
        "max_tokens": out_len,
        "ignore_eos": True,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
    }
    try:
        resp = post_json(server.base_url + "/v1/chat/completions", body, timeout=120)
        usage = resp.get("usage", {})
        info["completion_tokens"] = usage.get("completion_tokens")
        info["prompt_tokens"] = usage.get("prompt_tokens")
        info["ignore_eos_honoured"] = usage.get("completion_tokens") == out_len
    except Exception as exc:
        info["error"] = f"plain request failed: {exc}"
        return info
    try:
        with chat_stream(server.port, {**body, "stream": True}) as events:
            chunks = list(events)
        delta = (first_delta(chunks[0][1]) if chunks else None) or {}
        first_text_t = next((t for t, c in chunks if has_text(first_delta(c))), None)
        info["stream_chunks"] = len(chunks)
        info["first_chunk_delta"] = delta
        info["first_chunk_has_text"] = has_text(delta)
        info["first_chunk_ms"] = round(chunks[0][0] * 1000, 2) if chunks else None
        info["first_text_chunk_ms"] = (
            None if first_text_t is None else round(first_text_t * 1000, 2)
        )
    except Exception as exc:
        info["stream_error"] = str(exc)
    return info


def results_header(
    args: argparse.Namespace,
    prof: Profile,
    model: str,
    env: dict[str, str],
    servers: list[str],
    extra_args: dict[str, list[str]],
) -> dict[str, Any]:
    """The results file's head: what ran, where, with which commands; runs come later."""
    frontend = getattr(args, "vllm_frontend", "python")
    head: dict[str, Any] = {
        "schema": 1,
        "hardware": args.hardware or hardware_name(prof.name),
        "profile": prof.name,
        "started": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": platform.node(),
        "model": model,
        "engine_args": prof.engine_args,
        "env": {k: env[k] for k in sorted(prof.env) if k in env},
        "sampling": prof.sampling,
        "workloads": [f"{a}x{b}" for a, b in prof.workloads],
        "concurrencies": prof.concurrencies,
        "rounds": prof.rounds,
        "order": servers,
        "seed": args.seed,
        "gateway_root": str(Path(args.gateway_root).resolve()) if args.gateway_root else None,
        "server_args": extra_args,
        "versions": versions(args.python),
        "vllm_frontend": frontend,
        "together": bool(getattr(args, "together", False)),
        "start_apart": bool(getattr(args, "start_apart", False)),
        "commands": {
            name: "".join(f"{k}={v} " for k, v in frontend_env(name, frontend).items())
            + shlex.join(
                server_argv(
                    name, "python", model, args.port, prof.engine_args, extra_args[name], frontend
                )
            )
            for name in servers
        },
        "sessions": [],
        "runs": [],
        "loadavg_start": loadavg(),
    }
    workload, conc = prof.workloads[0], prof.concurrencies[-1]
    example = client_argv(
        "python", model, args.port, workload, conc, num_prompts(prof, workload, conc),
        min(conc, prof.warmups_cap), args.seed, prof.sampling, Path("RESULTS"), "FILE.json",
    )  # fmt: skip
    head["commands"]["client_example"] = shlex.join(example)
    return head
