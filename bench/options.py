"""`python -m bench.run`'s command line."""

from __future__ import annotations

import argparse
import sys

from bench.commands import VLLM_FRONTENDS
from bench.flag_strings import FLAGS
from bench.profiles import LABELS, PROFILES, ROOT, SAMPLING_KEYS, SERVER_NAMES


def _csv_ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _workloads(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        a, _, b = item.strip().partition("x")
        out.append((int(a), int(b)))
    return out


def sampling_values(text: str) -> dict[str, float]:
    """`temperature=1,top_p=1,top_k=0`, or `none` for a client that sends no sampling."""
    if text.strip().lower() == "none":
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep or key not in SAMPLING_KEYS:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE with KEY in {SAMPLING_KEYS}")
        out[key] = int(value) if key == "top_k" else float(value)
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="The gateway against vLLM's own OpenAI server, same engine, same load.",
    )
    p.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=None,
        help="defaults for the machine (auto: gpu when nvidia-smi sees one)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="model directory (default: generate models/bench-<preset> with "
        "`python -m app tiny-model`)",
    )
    p.add_argument("--preset", default=None, help="tiny-model preset when generating")
    p.add_argument("--rounds", type=int, default=None, help="rounds per server")
    p.add_argument("--concurrency", type=_csv_ints, default=None, help="e.g. 1,8,32,64")
    p.add_argument("--workloads", type=_workloads, default=None, help="IN x OUT, e.g. 128x64")
    p.add_argument("--prompts-per-concurrency", type=float, default=None)
    p.add_argument("--min-prompts", type=int, default=None)
    p.add_argument(
        "--servers",
        default="vllm,gateway",
        help="order in odd rounds, reversed in even ones (default vllm,gateway)",
    )
    p.add_argument(
        "--engine-args",
        default=None,
        metavar=FLAGS,
        help="engine flags for both servers, one string (replaces the profile's)",
    )
    p.add_argument(
        "--gateway-root",
        default=None,
        help="run the gateway from this checkout instead (A/B a candidate change: "
        "`python -m app serve` runs with this directory as its working directory)",
    )
    p.add_argument(
        "--gwb-root",
        default=None,
        help="the checkout of a second gateway, `gwb` in --servers (e.g. "
        "--servers vllm,gateway,gwb: the commit before a change beside it, in one run); it "
        "takes --gateway-args, then --gwb-args",
    )
    for name in SERVER_NAMES:
        p.add_argument(
            f"--{name}-args",
            default="",
            metavar=FLAGS,
            help=f"extra flags for {LABELS[name]} only, one string (e.g. '--api-server-count 4')",
        )
    p.add_argument(
        "--vllm-frontend",
        choices=VLLM_FRONTENDS,
        default="python",
        help="vLLM's HTTP frontend: its Python server, or its Rust one (`vllm serve` with "
        "VLLM_USE_RUST_FRONTEND=1; GPU build only)",
    )
    p.add_argument(
        "--sampling",
        type=sampling_values,
        default=None,
        help="what the client sends, e.g. temperature=1,top_p=1,top_k=0 (plain sampling, "
        "no top-k/top-p), or none (nothing: each server fills its own defaults); default "
        "the profile's (Qwen3's recommended values)",
    )
    p.add_argument(
        "--pin-engine-cores",
        type=int,
        default=0,
        help="also run each session's plan with the engine core on this many physical cores "
        "of its own and the server's other processes on the rest (bench.affinity); those "
        "runs go to results.json's pinned_runs, left out of reports",
    )
    p.add_argument(
        "--together",
        action="store_true",
        help="start every server once, at the same time, and keep them up, each round "
        "running their plans in turn seconds apart (bench.together); on a GPU each engine "
        "gets an equal share of its memory and a fixed KV cache",
    )
    p.add_argument(
        "--start-apart",
        action="store_true",
        help="with --together: start the servers one after another, each ready before the next "
        "starts (as before session 25)",
    )
    p.add_argument(
        "--keep-servers",
        default=None,
        metavar="DIR",
        help="with --together: leave the servers running at the end, listed in DIR, and take "
        "over those an earlier bench.run left there with the same flags (bench.kept)",
    )
    p.add_argument(
        "--first-text-load",
        type=_csv_ints,
        default=None,
        help="concurrencies of the first-text load probe after each session's benchmarks "
        "(bench.first_text_load; CPU default 8,32,64, GPU none; '' for none)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=18431, help="first port; +10 per server")
    p.add_argument("--python", default=sys.executable, help="interpreter for servers and client")
    p.add_argument(
        "--results-dir",
        default=None,
        help="where raw results and logs go (default bench/results/tmp/<stamp>)",
    )
    p.add_argument("--hardware", default=None, help="name for docs/benchmarks/<hardware>.md")
    p.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="stop starting new work this many seconds after launch",
    )
    p.add_argument(
        "--session-estimate-s",
        type=float,
        default=None,
        help="seconds one server session needs (start-up + runs); with "
        "--deadline-s, a session that would not fit is skipped",
    )
    p.add_argument(
        "--mirror-results",
        default=None,
        help="also copy results.json here after every run (e.g. into $OUT on a lent GPU)",
    )
    p.add_argument("--no-report", action="store_true", help="skip docs/benchmarks output")
    p.add_argument("--docs-dir", default=str(ROOT / "docs" / "benchmarks"))
    return p


def server_root(args: argparse.Namespace, name: str) -> str | None:
    """The checkout `name` runs from: `--gwb-root` for the second gateway, `--gateway-root`
    (None: this one) for the gateway."""
    return getattr(args, "gwb_root", None) if name == "gwb" else args.gateway_root
