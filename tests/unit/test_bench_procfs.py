"""bench.procfs: threads' CPU time, read from /proc, for the engine core's busiest threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.client import _cpu_use
from bench.procfs import busiest_threads, engine_core_threads, thread_cpu_seconds


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_thread_cpu_seconds_sees_each_thread_of_this_process() -> None:
    pid = os.getpid()
    before = thread_cpu_seconds(pid)
    done = threading.Event()
    tid: list[int] = []

    def busy() -> None:
        tid.append(threading.get_native_id())
        _spin(0.3)
        done.wait(10)

    live = threading.Thread(target=busy)
    live.start()
    try:
        now: dict[str, float] = {}
        for _ in range(100):
            now = thread_cpu_seconds(pid)
            mine = [cpu for key, cpu in now.items() if tid and key.startswith(f"{tid[0]}:")]
            if mine and mine[0] >= 0.25:
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"thread {tid} never showed 0.25 s of CPU: {now}")
        assert any(key.startswith(f"{pid}:") for key in now)  # the main thread: tid == pid
        busiest = busiest_threads(before, now)
        assert busiest[0]["thread"].startswith(f"{tid[0]}:")  # born in between: from zero
    finally:
        done.set()
        live.join()


def test_busiest_threads_orders_and_leaves_out_the_idle() -> None:
    before = {"1:loop": 10.0, "2:out": 1.0, "3:in": 0.5}
    after = {"1:loop": 14.0, "2:out": 2.5, "3:in": 0.5, "4:new": 0.2}
    assert busiest_threads(before, after) == [
        {"thread": "1:loop", "cpu_s": 4.0},
        {"thread": "2:out", "cpu_s": 1.5},
        {"thread": "4:new", "cpu_s": 0.2},
    ]
    assert busiest_threads(before, after, most=1) == [{"thread": "1:loop", "cpu_s": 4.0}]


def test_engine_core_threads_finds_the_titled_descendant(tmp_path: Path) -> None:
    import psutil

    # a server whose child is titled as vLLM titles its engine core, with a busy thread
    child = (
        "import threading, time\n"
        "def spin():\n"
        "    end = time.thread_time() + 0.4\n"
        "    while time.thread_time() < end: pass\n"
        "    time.sleep(60)\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "time.sleep(60)\n"
    )
    script = tmp_path / "core.py"
    script.write_text(child)
    title = "VLLM::Engine" + "Core"  # not in this test process's own command line
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen(['bash', '-c', 'exec -a {title} \"$0\" \"$1\"', sys.executable, "
        f"{str(script)!r}])\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        threads: dict[str, float] = {}
        for _ in range(200):
            threads = engine_core_threads(parent.pid)
            if len(threads) >= 2 and max(threads.values()) >= 0.3:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"no busy engine-core thread seen: {threads}")
        assert engine_core_threads(None) == {}
    finally:
        for proc in [*psutil.Process(parent.pid).children(recursive=True)]:
            proc.kill()
        parent.kill()
        parent.wait()


class _Meter:
    def __init__(self) -> None:
        self.calls = 0
        self.reads = 0

    def cpu_seconds(self) -> tuple[float | None, float | None]:
        self.calls += 1
        return (1.0, 2.0) if self.calls == 1 else (1.5, 4.0)

    def engine_threads(self) -> dict[str, float]:
        self.reads += 1  # the busy loop's thread gains a second between two reads
        return {"7:VLLM::EngineCor": 9.0 + self.reads, "8:VLLM::EngineCor": 1.0}

    def worker_cpu(self) -> dict[str, float]:
        return {}


def test_a_run_records_the_engine_cores_busiest_threads() -> None:
    meter = _Meter()
    run: dict[str, Any] = {"num_prompts": 4, "num_warmups": 1, "output_len": 8}
    run["_cpu0"] = meter.cpu_seconds()
    run["_threads0"] = meter.engine_threads()
    _cpu_use(run, meter)
    assert run["api_server_cpu_s"] == 0.5 and run["engine_procs_cpu_s"] == 2.0
    assert run["engine_core_threads_cpu_s"] == [{"thread": "7:VLLM::EngineCor", "cpu_s": 1.0}]
    assert "_threads0" not in run and "_cpu0" not in run
