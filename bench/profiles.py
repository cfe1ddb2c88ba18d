"""Benchmark profiles (defaults per kind of machine) and the servers' names."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER_NAMES = ("vllm", "gateway", "gwb")
"""`gwb`: a second gateway, run from `--gwb-root` (another checkout) beside the checkout's."""
SAMPLING_KEYS = ("temperature", "top_p", "top_k")
LABELS = {"vllm": "vllm serve", "gateway": "gateway", "gwb": "gateway B"}


@dataclass
class Profile:
    """Defaults for one kind of machine; every field has a command-line flag."""

    name: str
    concurrencies: list[int]
    workloads: list[tuple[int, int]]  # (input tokens, output tokens)
    rounds: int
    engine_args: list[str]
    env: dict[str, str]
    prompts_per_concurrency: float  # num_prompts = max(min_prompts, ceil(k * c))
    min_prompts: int
    prompt_overrides: dict[str, int] = field(default_factory=dict)  # "IxO@c" -> n
    warmups_cap: int = 64
    startup_timeout_s: float = 900.0
    run_timeout_s: float = 600.0
    sampling: dict[str, float] = field(default_factory=dict)
    # run order within a session, as "IxO@c" (default: workloads x concurrencies); the
    # GPU profile runs the points its goals name first, in case the deadline cuts it short
    first: list[str] = field(default_factory=list)
    # concurrencies of each session's first-text load probe (bench.first_text_load), run
    # after its benchmarks on the first workload's shape; empty: none
    first_text_load: list[int] = field(default_factory=list)

    def points(self) -> list[tuple[tuple[int, int], int]]:
        every = [(w, c) for w in self.workloads for c in self.concurrencies]
        rank = {key: i for i, key in enumerate(self.first)}

        def key(point: tuple[tuple[int, int], int]) -> int:
            (i, o), c = point
            return rank.get(f"{i}x{o}@{c}", len(rank))

        return sorted(every, key=key)  # stable: the rest keep their order


PROFILES: dict[str, Profile] = {
    # 2-core CPU, tiny random Qwen3. Engine flags are spelled out (they are what
    # `vllm serve` picks on CPU: 128 sequences, 2048 batched tokens, prefix caching on).
    "cpu": Profile(
        name="cpu",
        concurrencies=[1, 8, 32, 64],
        workloads=[(128, 64)],
        # six: on a noisy day (session 52) three rounds' single ratios spread 0.82-1.42x
        rounds=6,
        engine_args=[
            "--max-model-len",
            "2048",
            "--max-num-seqs",
            "128",
            "--max-num-batched-tokens",
            "2048",
            "--enable-prefix-caching",
        ],
        env={"VLLM_CPU_KVCACHE_SPACE": "2"},
        prompts_per_concurrency=10,
        min_prompts=40,
        warmups_cap=64,
        startup_timeout_s=900.0,
        run_timeout_s=600.0,
        # Qwen3's recommended sampling, sent explicitly so both servers sample alike
        # (the tiny model has no sampling defaults; the gateway would otherwise fill
        # Qwen3's and vllm serve would sample at temperature 1 with no top-k/top-p).
        sampling={"temperature": 0.6, "top_p": 0.95, "top_k": 20},
        first_text_load=[8, 32, 64],
    ),
    # One H200: engine defaults exactly as `vllm serve` picks them (CUDA graphs on).
    "gpu": Profile(
        name="gpu",
        concurrencies=[1, 64, 256],
        workloads=[(1024, 128), (128, 1024)],
        rounds=1,
        engine_args=[],
        env={"VLLM_USE_FLASHINFER_SAMPLER": "0"},
        prompts_per_concurrency=3,
        min_prompts=16,
        # c=1 1024x128: its TTFTs are bimodal on the H200 (p50 29, p90 41 ms), so 16
        # requests let the median jump between modes; 40 take ~9 s more per server.
        # 128x1024@256: `vllm bench serve`'s default 1,000 prompts (three full batches
        # and one of 232); the 384 of sessions 5-10 ended in a half-full batch for a
        # third of the run. 128x1024@1: 16 requests (~30 s), as 6 left the median to
        # one or two requests' TPOT. c=64: 640 prompts (session 30); with 192 a 1024x128
        # run lasted ~5 s, ramp-up and drain included, and pairs against the Rust frontend
        # swung 0.72-1.16x from lease to lease, where 640 kept four pairs within 0.990-0.992.
        prompt_overrides={
            "1024x128@1": 40,
            "128x1024@1": 16,
            "128x1024@256": 1000,
            "1024x128@256": 768,
            "1024x128@64": 640,
            "128x1024@64": 640,
        },
        warmups_cap=32,
        startup_timeout_s=300.0,
        run_timeout_s=240.0,
        sampling={"temperature": 0.6, "top_p": 0.95, "top_k": 20},
        first=["1024x128@1", "1024x128@256", "128x1024@256", "1024x128@64", "128x1024@64"],
    ),
}


def session_order(servers: list[str], rnd: int) -> list[str]:
    """The servers in the order round `rnd` (from 1) runs them: as given in odd rounds,
    reversed in even ones (A B, B A, A B, ...), so that a machine that speeds up or slows
    down over a call does not favour whichever server always ran second. Seen on the H200:
    within one lease each later session tended to be faster (c=1 TTFT of the same server
    36 ms, then 28 ms, four and a half minutes apart)."""
    return list(servers) if rnd % 2 else list(reversed(servers))


def pin_order(cores: int, rnd: int) -> list[bool]:
    """Per session, whether each pass of the plan runs with the engine core pinned
    (`--pin-engine-cores`): one pass as placed when `cores` is 0; else both, as placed
    first in odd rounds and pinned first in even ones."""
    if cores < 1:
        return [False]
    return [False, True] if rnd % 2 else [True, False]


def profile_from_args(name: str, args: argparse.Namespace) -> Profile:
    """Profile `name` with the command line's overrides (bench/options.py)."""
    base = PROFILES[name]
    custom_prompts = bool(args.prompts_per_concurrency or args.min_prompts)
    return Profile(
        name=base.name,
        concurrencies=args.concurrency or base.concurrencies,
        workloads=args.workloads or base.workloads,
        rounds=args.rounds or base.rounds,
        engine_args=base.engine_args if args.engine_args is None else shlex.split(args.engine_args),
        env=base.env,
        prompts_per_concurrency=args.prompts_per_concurrency or base.prompts_per_concurrency,
        min_prompts=args.min_prompts or base.min_prompts,
        prompt_overrides={} if custom_prompts else base.prompt_overrides,
        warmups_cap=base.warmups_cap,
        startup_timeout_s=base.startup_timeout_s,
        run_timeout_s=base.run_timeout_s,
        sampling=base.sampling if args.sampling is None else args.sampling,
        first=base.first,
        first_text_load=(
            base.first_text_load if args.first_text_load is None else args.first_text_load
        ),
    )


def auto_profile() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        return "gpu" if out.returncode == 0 and "GPU" in out.stdout else "cpu"
    except (OSError, subprocess.TimeoutExpired):
        return "cpu"


def hardware_name(profile: str) -> str:
    if profile == "gpu":
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            names = [n.strip() for n in out.stdout.splitlines() if n.strip()]
            if names:
                slug = names[0].lower().replace("nvidia ", "").replace(" ", "-")
                return f"gpu-{slug}" + (f"-x{len(names)}" if len(names) > 1 else "")
        except (OSError, subprocess.TimeoutExpired):
            pass
        return "gpu"
    return f"cpu-{os.cpu_count()}core"
