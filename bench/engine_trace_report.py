"""The bursts in `bench.engine_trace`'s logs, as a markdown table:

    python -m bench.engine_trace_report /tmp/trace [server-*.log ...] [--burst 256]

Per engine core (named after the server whose log names its pid, `EngineCore pid=N`) and
per burst (≥ `--burst` requests taken in within `--window` s, 0.4 by default, after 0.5 s
without any; its first `--burst` requests): how long the intake took (first to last
`recv`), how long requests waited in the input queue for the busy loop (`core_add` −
`pre_done`, p50 and max), the steps that ran while it lasted, the longest of them (ms and
tokens) against the median of the engine core's full steps (the most tokens any step had),
the garbage collector's passes of generation 1 or 2 during the intake (count, ms in all)
and, where the trace ran its probe (`ENGINE_TRACE_PROBE_MS`), the probe's late wake-ups
during the intake (count, p50, max ms: how long a thread waited for the interpreter lock)
beside the same per second outside the bursts. Then, per engine core, how long its input
thread took to build each request (`pre_done` − `recv`: the `Request` and its block
hashes, and any wait for the interpreter lock in between; warm-ups left out), and how long
its steps of one token took (one request decoding: the step c=1's TPOT follows).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.engine_trace import QUIET_S, WINDOW_S

_SERVER = re.compile(r"server-(\w+)-r\d+")
_CORE_PID = re.compile(r"EngineCore(?:_DP\d+)? pid=(\d+)")


@dataclass
class Step:
    start: float
    end: float
    tokens: int


@dataclass
class Core:
    """One engine core's events: per request its first time of each kind, its steps and
    its collections (start, generation, ms)."""

    pid: str
    requests: dict[str, dict[str, float]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    gcs: list[tuple[float, int, float]] = field(default_factory=list)
    probes: list[tuple[float, float]] = field(default_factory=list)


def read_core(pid: str, lines: list[str]) -> Core:
    core = Core(pid)
    step: list[float] = []
    tokens = 0
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        event, rid, when = parts[0], parts[1], float(parts[2])
        if event in ("recv", "pre_done", "core_add"):
            core.requests.setdefault(rid, {}).setdefault(event, when)
        elif event == "step":
            step, tokens = [when], 0
        elif event == "sched" and step and len(parts) > 4:
            tokens = int(parts[4])
        elif event == "step_end" and step:
            core.steps.append(Step(step[0], when, tokens))
            step = []
        elif event == "gc" and len(parts) > 5:
            core.gcs.append((when, int(parts[4]), float(parts[5])))
        elif event == "probe" and len(parts) > 4:
            core.probes.append((when, float(parts[4])))
    return core


def bursts(core: Core, size: int, window_s: float = WINDOW_S) -> list[list[str]]:
    """The request ids of each burst, by arrival at the input thread."""
    arrived = sorted((r["recv"], rid) for rid, r in core.requests.items() if "recv" in r)
    found = []
    for i, (when, _) in enumerate(arrived):
        if i > 0 and when - arrived[i - 1][0] <= QUIET_S:
            continue  # not after a quiet spell: no burst starts here
        group = arrived[i : i + size]
        if len(group) == size and group[-1][0] - when <= window_s:
            found.append([rid for _, rid in group])
    return found


def _ms(value: float) -> str:
    return f"{value * 1e3:.1f}"


def burst_row(name: str, core: Core, ids: list[str], origin: float) -> str:
    got = [core.requests[rid] for rid in ids]
    first, last = min(r["recv"] for r in got), max(r["recv"] for r in got)
    waits = [r["core_add"] - r["pre_done"] for r in got if "core_add" in r and "pre_done" in r]
    during = [s for s in core.steps if s.end > first and s.start < last]
    full = max((s.tokens for s in core.steps), default=0)
    full_ms = [s.end - s.start for s in core.steps if s.tokens == full]
    longest = max(during, key=lambda s: s.end - s.start, default=None)
    passes = [ms for when, gen, ms in core.gcs if gen >= 1 and first <= when <= last]
    return (
        f"| {name} | {first - origin:.1f} | {len(ids)} | {_ms(last - first)} | "
        + (f"{_ms(statistics.median(waits))}, {_ms(max(waits))}" if waits else "–")
        + f" | {len(during)} | "
        + (f"{_ms(longest.end - longest.start)}, {longest.tokens}" if longest else "–")
        + f" | {_ms(statistics.median(full_ms)) if full_ms else '–'} ({full}) | "
        + f"{len(passes)}, {sum(passes):.1f} | "
        + (_late([ms for when, ms in core.probes if first <= when <= last]) if core.probes else "–")
        + " |"
    )


def _late(lates: list[float]) -> str:
    if not lates:
        return "0"
    return f"{len(lates)}, {statistics.median(lates):.2f}, {max(lates):.2f}"


def probe_row(name: str, core: Core, size: int, window_s: float = WINDOW_S) -> str:
    """The probe's late wake-ups outside every burst's intake, while the engine core
    stepped (not its shutdown), per second."""
    if not core.steps:
        return f"| {name} | – | – |"
    start, end = core.steps[0].start, core.steps[-1].end
    spans = []
    for ids in bursts(core, size, window_s):
        arrived = [core.requests[rid]["recv"] for rid in ids]
        spans.append((min(arrived), max(arrived)))
    lates = [
        ms
        for when, ms in core.probes
        if start <= when <= end and not any(a <= when <= b for a, b in spans)
    ]
    span_s = end - start - sum(b - a for a, b in spans)
    per_s = len(lates) / span_s if span_s > 0 else 0.0
    return f"| {name} | {per_s:.1f} | {_late(lates)} |"


def build_row(name: str, core: Core) -> str:
    """The input thread's time to build a request (ms): p50, p90, p99 over the requests
    the benchmark sent (not its warm-ups); the median step of one token (ms, how many)."""
    took = sorted(
        r["pre_done"] - r["recv"]
        for rid, r in core.requests.items()
        if "recv" in r and "pre_done" in r and not rid.startswith("warmup")
    )
    built = "0 | –"
    if took:
        at = [took[int(q * (len(took) - 1))] * 1e3 for q in (0.5, 0.9, 0.99)]
        built = f"{len(took)} | " + ", ".join(f"{ms:.3f}" for ms in at)
    ones = [s.end - s.start for s in core.steps if s.tokens == 1]
    one = f"{statistics.median(ones) * 1e3:.3f} ({len(ones)})" if ones else "–"
    return f"| {name} | {built} | {one} |"


def report(cores: list[tuple[str, Core]], size: int, window_s: float = WINDOW_S) -> str:
    out = [
        "| engine core | burst at s | requests | intake ms | input queue wait p50, max ms "
        "| steps during the intake | longest: ms, tokens | full step median ms (tokens) "
        "| gc passes of gen 1-2: count, ms | probe late ≥ 0.5 ms: count, p50, max ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    origin = min((s.start for _, c in cores for s in c.steps), default=0.0)
    for name, core in cores:
        out += [burst_row(name, core, ids, origin) for ids in bursts(core, size, window_s)]
    probed = [(name, core) for name, core in cores if core.probes]
    if probed:
        out += [
            "",
            "| engine core | probe late ≥ 0.5 ms outside the bursts: per s | count, p50, max ms |",
            "|---|---|---|",
        ]
        out += [probe_row(name, core, size, window_s) for name, core in probed]
    out += [
        "",
        "| engine core | requests built | building one: p50, p90, p99 ms "
        "| a step of one token: p50 ms (steps) |",
        "|---|---|---|---|",
    ]
    out += [build_row(name, core) for name, core in cores]
    return "\n".join(out)


def core_names(server_logs: list[Path]) -> dict[str, str]:
    names = {}
    for path in server_logs:
        match = _SERVER.search(path.name)
        for pid in _CORE_PID.findall(path.read_text(errors="replace")):
            names[pid] = match.group(1) if match else path.stem
    return names


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace_dir", type=Path)
    p.add_argument("server_logs", nargs="*", type=Path)
    p.add_argument("--burst", type=int, default=256, help="requests in a burst")
    p.add_argument("--window", type=float, default=WINDOW_S, help="s a burst arrives within")
    args = p.parse_args(argv)
    names = core_names(args.server_logs)
    cores = []
    for path in sorted(args.trace_dir.glob("trace-*.log")):
        pid = path.stem.removeprefix("trace-")
        core = read_core(pid, path.read_text(errors="replace").splitlines())
        if core.steps:
            cores.append((f"{names.get(pid, '?')} ({pid})", core))
    sys.stdout.write(report(cores, args.burst, args.window) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
