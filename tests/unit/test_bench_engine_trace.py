"""bench.engine_trace's hooks (on stand-in classes) and bench.engine_trace_report's reading."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench import engine_trace
from bench import engine_trace_report as report
from bench.engine_trace import _Log, _patch_core, _patch_scheduler, probe


def _events(path: Path) -> list[list[str]]:
    (log,) = path.glob("trace-*.log")
    return [line.split() for line in log.read_text().splitlines()]


class _Core:
    def preprocess_add_request(self, request: Any) -> tuple[Any, int]:
        return request, 0

    def add_request(self, request: Any, request_wave: int = 0) -> None:
        pass


class _Proc:
    def _process_engine_step(self) -> bool:
        return True

    def run_busy_loop(self) -> None:
        pass


def test_the_engine_cores_functions_leave_their_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINE_TRACE_SWITCH_S", "0.001")
    monkeypatch.setattr(sys, "setswitchinterval", lambda s: calls.append(s))
    calls: list[float] = []
    # fresh classes, each with its own methods as vLLM's: the hooks change them
    core = type(
        "EngineCore", (), {k: getattr(_Core, k) for k in ("preprocess_add_request", "add_request")}
    )
    proc = type("EngineCoreProc", (_Proc, core), {})
    _patch_core(SimpleNamespace(EngineCore=core, EngineCoreProc=proc), _Log(str(tmp_path)))
    request = SimpleNamespace(request_id="r1")
    engine = proc()
    assert engine.preprocess_add_request(request) == (request, 0)  # results pass through
    engine.add_request(request)
    assert engine._process_engine_step() is True
    engine.run_busy_loop()
    assert [(e[0], e[1]) for e in _events(tmp_path)] == [
        ("recv", "r1"), ("pre_done", "r1"), ("core_add", "r1"),
        ("step", "-"), ("step_end", "-"), ("switch", "-"),
    ]  # fmt: skip
    assert calls == [0.001]


def test_a_schedule_records_its_tokens_and_queues(tmp_path: Path) -> None:
    out = SimpleNamespace(total_num_scheduled_tokens=8192, scheduled_new_reqs=[1, 2])

    class Scheduler:
        waiting, running = [1, 2, 3], [4]

        def schedule(self) -> Any:
            return out

    _patch_scheduler(SimpleNamespace(Scheduler=Scheduler), _Log(str(tmp_path)))
    assert Scheduler().schedule() is out
    assert _events(tmp_path)[0][4:] == ["8192", "2", "3", "1"]


def test_only_the_older_generations_or_long_passes_are_written(tmp_path: Path) -> None:
    log = _Log(str(tmp_path))
    log.on_gc("start", {"generation": 0})
    log.on_gc("stop", {"generation": 0})  # quick and young: left out
    log.on_gc("start", {"generation": 2})
    log.on_gc("stop", {"generation": 2})
    log("step", "-")  # the queued pass is written before the next event
    assert [e[0] for e in _events(tmp_path)] == ["gc", "step"]
    assert _events(tmp_path)[0][4] == "2"


def test_the_probe_writes_only_the_late_wake_ups(tmp_path: Path) -> None:
    now = [10.0]
    lateness = iter([0.0004, 0.0049, 0.0006])  # under the bar, 4.9 ms late, over it

    def sleep(seconds: float) -> None:
        now[0] += seconds + next(lateness)

    probe(_Log(str(tmp_path)), 0.001, sleep, lambda: now[0], rounds=3)
    assert [(e[0], e[4]) for e in _events(tmp_path)] == [("probe", "4.90"), ("probe", "0.60")]


def test_the_probe_starts_with_the_busy_loop_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[Any, ...]] = []
    monkeypatch.setattr(engine_trace, "probe", lambda *args: started.append(args))
    proc = type("EngineCoreProc", (_Proc,), {"run_busy_loop": _Proc.run_busy_loop})
    core = type("EngineCore", (_Core,), {})
    _patch_core(SimpleNamespace(EngineCore=core, EngineCoreProc=proc), _Log(str(tmp_path)))
    proc().run_busy_loop()
    assert started == []  # not asked
    monkeypatch.setenv("ENGINE_TRACE_PROBE_MS", "2")
    _patch_core(SimpleNamespace(EngineCore=core, EngineCoreProc=proc), _Log(str(tmp_path)))
    proc().run_busy_loop()
    for _ in range(100):
        if started:
            break
        time.sleep(0.01)  # the probe's thread has started it
    ((_log, period, sleep, clock),) = started
    assert (period, sleep, clock) == (0.002, time.sleep, time.monotonic)


def _lines(burst_at: float, long_step_ms: float) -> list[str]:
    lines = [f"step - {1.0 + i * 0.05:.6f} MainThread" for i in range(2)]
    out = []
    for i, line in enumerate(lines):  # two full steps of 40 ms before the burst
        out += [line, "sched - 0 x 8192 8 0 8", f"step_end - {1.04 + i * 0.05:.6f} x"]
    out += [f"step - {burst_at - 0.001:.6f} x", "sched - 0 x 48 3 0 3"]
    for i in range(4):
        at = burst_at + i * 0.01
        out += [f"recv r{i} {at:.6f} x", f"pre_done r{i} {at + 0.0003:.6f} x"]
    end = burst_at - 0.001 + long_step_ms / 1e3
    out += [f"step_end - {end:.6f} x", f"gc - {burst_at + 0.005:.6f} collector 2 12.50"]
    out += [f"core_add r{i} {end + 0.0001:.6f} x" for i in range(4)]
    return out


def test_a_burst_shows_the_step_that_held_it() -> None:
    core = report.read_core("7", _lines(burst_at=3.0, long_step_ms=120.0))
    (ids,) = report.bursts(core, 4)
    assert ids == ["r0", "r1", "r2", "r3"]
    row = report.burst_row("gateway (7)", core, ids, 1.0)
    # intake 30 ms; r0 waited 118.8 ms (built at 3.0003, added at 3.1191, after the step),
    # r3 88.8; one step, 120 ms and 48 tokens, against full steps of 40 ms; one gen-2 pass
    expected = (
        "| gateway (7) | 2.0 | 4 | 30.0 | 103.8, 118.8 | 1 | 120.0, 48 | 40.0 (8192) | 1, 12.5"
    )
    assert row == expected + " | – |"  # no probe in this trace


def test_the_probes_late_wake_ups_are_split_by_the_intake() -> None:
    probes = ["probe - 1.020000 gil_probe 0.60", "probe - 3.010000 gil_probe 4.80"]
    probes += ["probe - 3.020000 gil_probe 5.10", "probe - 3.025000 gil_probe 0.90"]
    core = report.read_core("7", _lines(burst_at=3.0, long_step_ms=120.0) + probes)
    (ids,) = report.bursts(core, 4)
    assert report.burst_row("gateway (7)", core, ids, 1.0).endswith("| 3, 4.80, 5.10 |")
    # outside the 30 ms intake: one late wake-up over the trace's 2.089 s of steps less it
    assert report.probe_row("gateway (7)", core, 4) == "| gateway (7) | 0.5 | 1, 0.60, 0.60 |"
    assert "outside the bursts" in report.report([("gateway (7)", core)], 4)
    quiet = report.read_core("7", _lines(burst_at=3.0, long_step_ms=120.0))
    assert "outside the bursts" not in report.report([("gateway (7)", quiet)], 4)


def test_the_per_core_table_leaves_the_warm_ups_out_and_times_one_token_steps() -> None:
    lines = [f"recv r{i} {1 + i:.6f} x" for i in range(1, 11)]
    lines += [f"pre_done r{i} {1 + i + i / 10_000:.6f} x" for i in range(1, 11)]
    lines += ["recv warmup-a 0.500000 x", "pre_done warmup-a 0.600000 x"]  # 100 ms
    for i, ms in enumerate((1.7, 2.4, 1.8)):  # three steps of one token, one of 8,192
        lines += [
            f"step - {20 + i:.6f} x",
            "sched - 0 x 1 0 0 1",
            f"step_end - {20 + i + ms / 1e3:.6f} x",
        ]
    lines += ["step - 30.000000 x", "sched - 0 x 8192 8 0 8", "step_end - 30.040000 x"]
    core = report.read_core("7", lines)
    # r1..r10 took 0.1..1.0 ms: the median of ten by the lower index is 0.5, p90 0.9
    assert report.build_row("gw (7)", core) == "| gw (7) | 10 | 0.500, 0.900, 0.900 | 1.800 (3) |"
    assert report.build_row("gw (8)", report.read_core("8", [])) == "| gw (8) | 0 | – | – |"
    assert "building one: p50, p90, p99 ms" in report.report([("gw (7)", core)], 4)


def test_a_spread_out_arrival_is_no_burst() -> None:
    core = report.read_core("7", _lines(burst_at=3.0, long_step_ms=120.0))
    assert report.bursts(core, 5) == []  # fewer than asked for
    late = [f"recv s{i} {10 + i * 0.2:.6f} x" for i in range(4)]
    assert report.bursts(report.read_core("7", late), 4) == []  # 0.6 s > the window
    assert report.bursts(report.read_core("7", late), 4, window_s=1.0) == [
        ["s0", "s1", "s2", "s3"]
    ]  # a wider one, as for the 2-core box's slower intakes


def test_engine_cores_are_named_after_the_server_logs(tmp_path: Path) -> None:
    log = tmp_path / "server-gwb-r1.log"
    log.write_text("(EngineCore pid=4242) INFO ready\n(APIServer pid=1) INFO x\n")
    assert report.core_names([log]) == {"4242": "gwb"}
