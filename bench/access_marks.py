"""Where the gateway's time to first token went, run by run, from its access log:

    python -m bench.access_marks call1/results.json logs/server-gateway-r1.log
    python -m bench.access_marks --server gwb call1/results.json logs/server-gwb-r1.log

For a run of `bench.run` with the gateway started with `--access-log` (e.g.
`--gateway-args=--access-log`), each chat request's line says when its prompt was ready
for the engine, when the engine's first output came and when its first bytes went out
(`prompt_ms`, `first_output_ms`, `first_byte_ms`, since the request reached the app;
app/access_log.py), and, where vLLM timed it in its engine core, when the engine core
queued it, first scheduled it and made its first token (`queued_ms`, `scheduled_ms`,
`first_token_ms`: the same clock) and when the HTTP worker's engine client took in that
token (`received_ms`). A line belongs to the run whose time window holds it
(the run's start to its start + wall time + 1 s, or to the next run's start if that comes
first; log times in UTC, as on the lent machines; with whole-second starts, as before
session 28, each run's first second is left out). Markdown on stdout: per run, the lines
counted, the medians of the three marks and of the way out (first byte − first output),
and the engine's part split in five: into the engine core (queued − prompt ready), its
queue (scheduled − queued), its prefill (first token − scheduled), to the HTTP worker's
engine client (received − first token: the engine core's output thread, the socket and
the client's output handler, where vLLM's time to first token ends) and on to the
request's handler (first output − received); "–" where the lines lack those marks.

Then, for each first-text load probe of the gateway (`bench.first_text_load`, which
records when it started), its requests as the app saw them: each one's arrival is its
line's time less its latency; the first wave is the first `concurrency` to arrive (the
probe sends them at once), the rest came as others ended. Per part: how long after the
first arrival the requests reached the app (p50, p90, max: how fast a burst gets through
the HTTP workers), the medians of the prompt ready and the engine's first output since
each request's arrival, and the engine's part split as above.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.access_log import MARKS, VLLM_MARKS
from bench.report_data import nearest_rank

_TEXT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \S+ app\.access ")
_LATENCY = re.compile(r" \d{3} ([0-9.]+)s(?: |$)")
_MARK = re.compile(rf" ({'|'.join(MARKS)})=([0-9.]+)ms")
REQUIRED = tuple(name for name in MARKS if name not in VLLM_MARKS)
"""The marks every chat line has; the engine's are there where vLLM timed the request."""
SEGMENTS = {
    "into the engine core": ("prompt", "queued"),
    "queue": ("queued", "scheduled"),
    "prefill": ("scheduled", "first_token"),
    "to the worker's engine client": ("first_token", "received"),
    "on to the handler": ("received", "first_output"),
}
"""The engine's part of a request's time to first token, split by its marks."""


def parse_line(line: str) -> tuple[float, dict[str, float]] | None:
    """(unix time, the marks) of one access-log line, text or JSON, the marks with the
    request's whole `latency` in ms beside them; None for any other line or an access
    line without the three marks of REQUIRED (the engine's are optional)."""
    if line.startswith("{"):
        try:
            entry = json.loads(line)
        except ValueError:
            return None
        if entry.get("logger") != "app.access":
            return None
        values = {name: entry.get(f"{name}_ms") for name in MARKS}
        if any(values[n] is None for n in REQUIRED) or entry.get("latency_s") is None:
            return None
        marks = {name: float(v) for name, v in values.items() if v is not None}
        marks["latency"] = float(entry["latency_s"]) * 1000
        return datetime.fromisoformat(entry["time"]).timestamp(), marks
    head = _TEXT.match(line)
    latency = _LATENCY.search(line)
    if head is None or latency is None:
        return None
    found = {name: float(value) for name, value in _MARK.findall(line)}
    if not set(REQUIRED) <= set(found):
        return None
    found["latency"] = float(latency.group(1)) * 1000
    when = datetime.strptime(head.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return when.timestamp() + int(head.group(2)) / 1000, found


def run_window(run: dict[str, Any], starts: list[float] | None = None) -> tuple[float, float]:
    """(start, end) of a run's lines: its wall time and a second more, but not past the
    next run's start among `starts` (runs follow each other). `started` had whole seconds
    until session 28: such a run really began somewhere in that second, after the run
    before it ended, so the second's lines could be either run's and count in neither."""
    start = datetime.fromisoformat(run["started"]).timestamp()
    end = start + float(run["wall_s"]) + 1.0
    low = start if "." in run["started"] else start + 1.0
    return low, min([end, *(s for s in starts or [] if s > start)])


def _p50(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "–"


def _segments(marks: list[dict[str, float]]) -> str:
    """The medians of SEGMENTS over the lines that have both of a segment's marks."""
    return " | ".join(
        _p50([m[end] - m[start] for m in marks if start in m and end in m])
        for start, end in SEGMENTS.values()
    )


def summarize(
    runs: list[dict[str, Any]], lines: list[tuple[float, dict[str, float]]], server: str = "gateway"
) -> str:
    """The markdown table: a row per run of `server` that has access lines in its window."""
    out = [
        "| run | lines | prompt ready | engine's first output | first byte | way out | "
        + " | ".join(SEGMENTS)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(SEGMENTS),
    ]
    starts = [datetime.fromisoformat(r["started"]).timestamp() for r in runs if r.get("started")]
    for run in runs:
        if run.get("server") != server or not run.get("started") or not run.get("wall_s"):
            continue
        low, high = run_window(run, starts)
        mine = [marks for when, marks in lines if low <= when <= high]
        if not mine:
            continue
        name = f"{server} r{run['round']} {run['workload']}@{run['concurrency']}"
        out.append(
            f"| {name} | {len(mine)} | "
            + " | ".join(_p50([m[k] for m in mine]) for k in REQUIRED)
            + f" | {_p50([m['first_byte'] - m['first_output'] for m in mine])} | "
            + _segments(mine)
            + " |"
        )
    return "\n".join(out)


def _spread(values: list[float]) -> str:
    p90 = nearest_rank(values, 0.9)
    return f"{statistics.median(values):.1f}, {p90:.1f}, {max(values):.1f}"


def _arrivals(
    probe: dict[str, Any], lines: list[tuple[float, dict[str, float]]]
) -> list[tuple[float, dict[str, float]]]:
    """(arrival at the app, marks) of the access lines written during `probe`, by
    arrival: a line's time less its request's latency."""
    low = datetime.fromisoformat(probe["started"]).timestamp()
    high = low + float(probe["wall_s"]) + 1.0
    mine = [(when - m["latency"] / 1000, m) for when, m in lines if low <= when <= high]
    return sorted(mine, key=lambda item: item[0])


def probe_rows(
    sessions: list[dict[str, Any]],
    lines: list[tuple[float, dict[str, float]]],
    server: str = "gateway",
) -> str:
    """The markdown table of `server`'s load probes, first wave and later requests apart;
    empty where no probe recorded its start or none has access lines."""
    out = [
        "| probe | part | requests | reached the app after the first: p50, p90, max ms "
        "| prompt ready | engine's first output | " + " | ".join(SEGMENTS) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(SEGMENTS),
    ]
    for session in sessions:
        if session.get("server") != server:
            continue
        for probe in session.get("first_text_load") or []:
            if not probe.get("started") or not probe.get("wall_s"):
                continue
            mine = _arrivals(probe, lines)
            if not mine:
                continue
            first = mine[0][0]
            size = int(probe["concurrency"])
            name = f"{server} r{session.get('round')} c={size}"
            for part, group in (("first wave", mine[:size]), ("later", mine[size:])):
                if not group:
                    continue
                out.append(
                    f"| {name} | {part} | {len(group)} | "
                    f"{_spread([(at - first) * 1000 for at, _ in group])} | "
                    f"{_p50([m['prompt'] for _, m in group])} | "
                    f"{_p50([m['first_output'] for _, m in group])} | "
                    f"{_segments([m for _, m in group])} |"
                )
    return "\n".join(out) if len(out) > 2 else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("logs", nargs="+", type=Path, help="the gateway's server logs")
    parser.add_argument(
        "--server", default="gateway", help="whose runs the logs are (gwb: the second gateway)"
    )
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    runs = results.get("runs", [])
    lines = []
    for log in args.logs:
        for text in log.read_text(errors="replace").splitlines():
            parsed = parse_line(text)
            if parsed is not None:
                lines.append(parsed)
    print("medians in ms since each request reached the app\n")
    print(summarize(runs, lines, args.server))
    probes = probe_rows(results.get("sessions", []), lines, args.server)
    if probes:
        print("\nload probes, as the app saw them (ms since each request reached it)\n")
        print(probes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
