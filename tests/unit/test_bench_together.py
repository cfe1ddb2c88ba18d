"""bench.together: every server up at once, their plans taking turns; and the report's
line that says so."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.commands import memory_share
from bench.machine import gpu_memory_total_gib, gpu_memory_used_mib
from bench.profiles import PROFILES
from bench.report import _sessions_line
from bench.together import kv_cache_bytes, memory_flags, run_together
from tests.bench_fakes import FakeServer


def test_memory_share_splits_the_gpu_evenly_unless_set() -> None:
    """As bench.paired splits it: 0.8 of the GPU's memory among the servers up at once, and
    a fixed KV cache each, since they start at the same time."""
    kv = "--kv-cache-memory-bytes"
    assert memory_flags("gpu", 2, []) == ["--gpu-memory-utilization", "0.4", kv, str(48 << 30)]
    assert memory_flags("gpu", 3, ["--max-num-seqs", "256"]) == [
        "--gpu-memory-utilization",
        "0.267",
        kv,
        str(32 << 30),
    ]
    assert memory_flags("gpu", 2, ["--gpu-memory-utilization=0.4"]) == []
    assert memory_flags("gpu", 2, [kv, "1000000"]) == []
    assert memory_flags("cpu", 2, []) == []
    assert memory_share("gpu", 3) == memory_flags("gpu", 3, [])[:2]  # bench.paired's, the same
    assert memory_share("cpu", 2, 0.3) == ["--gpu-memory-utilization", "0.3"]  # --memory-share


def test_kv_cache_fits_a_smaller_gpu() -> None:
    """On an H200 (140 GiB) two engines get 48 GiB each; on an H100 (79.6 GiB by
    nvidia-smi), where two of those did not fit in session 46, what is left beside 8.5 GiB
    an engine: 31.3 GiB each, about what ran there (31 GiB)."""
    gib = 2**30
    assert kv_cache_bytes(2, 140.4) == kv_cache_bytes(2) == 48 * gib
    h100 = kv_cache_bytes(2, 81559 / 1024) / gib
    assert 30.5 < h100 < 32.0
    assert 2 * h100 + 2 * 4 < 79.2  # torch's capacity there, with 4 GiB an engine besides
    assert kv_cache_bytes(3, 81559 / 1024) < kv_cache_bytes(2, 81559 / 1024)
    assert kv_cache_bytes(2, 10.0) == gib // 2  # never nothing
    flags = memory_flags("gpu", 2, [], 81559 / 1024)
    assert flags[:2] == ["--gpu-memory-utilization", "0.4"]
    assert flags[2:] == ["--kv-cache-memory-bytes", str(kv_cache_bytes(2, 81559 / 1024))]


@dataclass
class FakeRunner:
    """Records what run_together asks of bench.run's Runner; `clock` is what remains."""

    servers: list[str]
    left: list[float]  # remaining() answers, one per call (the last repeats)
    fail: set[str] = field(default_factory=set)  # servers that do not come up
    fail_first: set[str] = field(default_factory=set)  # ... the first time only
    args: argparse.Namespace = field(
        default_factory=lambda: argparse.Namespace(port=18431, session_estimate_s=100.0)
    )
    profile: Any = field(default_factory=lambda: _profile(rounds=3))
    data: dict[str, Any] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    made: dict[str, FakeServer] = field(default_factory=dict)

    def remaining(self) -> float:
        return self.left.pop(0) if len(self.left) > 1 else self.left[0]

    def log(self, msg: str) -> None:
        self.calls.append(f"log {msg}")

    def skip(self, tag: str, why: str) -> None:  # as bench.plan_runner.PlanRunner's
        self.log(why)
        self.data.setdefault("skipped", []).append(tag)

    def launch_session(
        self, name: str, rnd: int, model: str, port: int
    ) -> tuple[FakeServer, dict[str, Any]]:
        self.calls.append(f"launch {name} r{rnd} :{port}")
        self.made[name] = FakeServer(name)
        return self.made[name], {"server": name}

    def settle_session(self, server: FakeServer, record: dict[str, Any], model: str) -> None:
        self.calls.append(f"settle {server.name}")
        if server.name in self.fail or server.name in self.fail_first:
            self.fail_first.discard(server.name)
            record["error"] = "x"

    def close_session(
        self, server: FakeServer, record: dict[str, Any], wait_gpu: bool = True
    ) -> None:
        self.calls.append(f"close {server.name} wait_gpu={wait_gpu}")

    def run_plans(self, entries: list[tuple[FakeServer, str, int]], model: str) -> None:
        self.calls.append("client")  # one client process for all of them
        self.calls += [f"plan {name} r{rnd}" for server, name, rnd in entries]

    def load_probes(self, server: FakeServer, record: dict[str, Any], model: str) -> None:
        self.calls.append(f"probe {server.name}")


def _profile(rounds: int) -> Any:
    import dataclasses

    return dataclasses.replace(PROFILES["gpu"], rounds=rounds)


def test_servers_start_once_at_once_and_their_plans_alternate_round_by_round() -> None:
    runner = FakeRunner(["vllm", "gateway"], left=[1000.0])
    run_together(runner, "m")  # type: ignore[arg-type]
    assert runner.calls == [
        "launch vllm r1 :18431",  # both started before either is waited for
        "launch gateway r1 :18441",
        "settle vllm",
        "settle gateway",
        "client",
        "plan vllm r1",
        "plan gateway r1",
        "plan gateway r2",
        "plan vllm r2",
        "plan vllm r3",
        "plan gateway r3",
        "probe vllm",  # after every round, one server at a time
        "probe gateway",
        "close vllm wait_gpu=False",
        "close gateway wait_gpu=True",  # the GPU is waited for once, after the last
    ]


def test_a_server_that_failed_beside_the_others_is_started_once_more_alone() -> None:
    runner = FakeRunner(["vllm", "gateway"], left=[1000.0], fail_first={"vllm"})
    runner.profile = _profile(rounds=1)
    run_together(runner, "m")  # type: ignore[arg-type]
    assert [c for c in runner.calls if not c.startswith("log")] == [
        "launch vllm r1 :18431",
        "launch gateway r1 :18441",
        "settle vllm",  # failed
        "settle gateway",
        "close vllm wait_gpu=False",  # the gateway keeps its memory: no wait for an idle GPU
        "launch vllm r1 :18431",
        "settle vllm",
        "client",
        "plan vllm r1",  # the servers' order as given
        "plan gateway r1",
        "probe vllm",
        "probe gateway",
        "close vllm wait_gpu=False",
        "close gateway wait_gpu=True",
    ]


def test_a_server_that_did_not_come_up_takes_no_turns() -> None:
    runner = FakeRunner(["vllm", "gateway", "gw2"], left=[1000.0], fail={"gw2"})
    runner.profile = _profile(rounds=2)
    run_together(runner, "m")  # type: ignore[arg-type]
    plans = [c for c in runner.calls if c.startswith("plan")]
    assert plans == ["plan vllm r1", "plan gateway r1", "plan gateway r2", "plan vllm r2"]
    assert [c for c in runner.calls if c.startswith("probe")] == ["probe vllm", "probe gateway"]
    assert [c for c in runner.calls if c.startswith("close")] == [
        "close gw2 wait_gpu=False",  # before it is started once more, alone: fails again
        "close vllm wait_gpu=False",
        "close gateway wait_gpu=False",
        "close gw2 wait_gpu=True",  # opened, so closed, though it never came up
    ]
    assert runner.calls.count("launch gw2 r1 :18451") == 2


def test_the_deadline_skips_what_would_not_fit() -> None:
    # remaining(): enough to start vllm, not gateway (estimate 100 s); then 500 s for the
    # client, whose own deadline (bench.vllm_bench) skips the runs that would not fit
    runner = FakeRunner(["vllm", "gateway"], left=[400.0, 90.0, 500.0])
    run_together(runner, "m")  # type: ignore[arg-type]
    assert [c for c in runner.calls if not c.startswith("log")] == [
        "launch vllm r1 :18431",
        "settle vllm",
        "client",
        "plan vllm r1",
        "plan vllm r2",
        "plan vllm r3",
        "probe vllm",  # its own deadline check is bench.run's (Runner.load_probes)
        "close vllm wait_gpu=True",
    ]
    assert runner.data["skipped"] == ["gateway#1"]
    # 20 s left once the servers are up: under the 30 s a client needs, no client at all
    runner = FakeRunner(["vllm"], left=[400.0, 20.0])
    runner.profile = _profile(rounds=2)
    run_together(runner, "m")  # type: ignore[arg-type]
    assert "client" not in runner.calls
    assert runner.data["skipped"] == ["vllm#1", "vllm#2"]


def test_start_apart_waits_for_each_server_before_the_next() -> None:
    runner = FakeRunner(["vllm", "gateway"], left=[1000.0], fail={"vllm"})
    runner.args.start_apart = True
    runner.profile = _profile(rounds=1)
    run_together(runner, "m")  # type: ignore[arg-type]
    assert runner.calls[:5] == [
        "launch vllm r1 :18431",
        "settle vllm",
        "launch gateway r1 :18441",
        "settle gateway",
        "client",
    ]
    assert [c for c in runner.calls if c.startswith("plan")] == ["plan gateway r1"]


def test_the_report_says_how_the_servers_ran() -> None:
    sessions = [{"server": "vllm", "round": 1}, {"server": "gateway", "round": 1}]
    runs = [
        {"server": s, "round": r, "metrics": {"request_throughput": 1.0}}
        for s, r in [("vllm", 1), ("vllm", 1), ("gateway", 1), ("gateway", 2), ("vllm", 2)]
    ]
    together = _sessions_line({"together": True, "sessions": sessions, "runs": runs})
    assert together == (
        "- Servers up together (`--together`), each started once, one after another (vllm "
        "serve r1 → gateway r1); their runs took turns, seconds apart: vllm serve r1 → "
        "gateway r1 → gateway r2 → vllm serve r2"
    )
    at_once = {"together": True, "start_apart": False, "sessions": sessions, "runs": runs}
    assert ", at the same time (" in _sessions_line(at_once)
    apart = _sessions_line({"sessions": sessions, "runs": runs})
    assert apart.startswith("- Server sessions in the order they ran (one server at a time")


def test_gpu_memory_total_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What bench.run sizes the KV caches by: nvidia-smi's MiB in GiB, None without it."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_memory_total_gib() is None
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 81559\n")
    smi.chmod(0o755)
    assert gpu_memory_total_gib() == pytest.approx(79.65, abs=0.01)


def test_gpu_memory_used_is_the_fullest_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `wait_gpu_released` waits on: the most any GPU uses; None without nvidia-smi or
    where its output is not numbers."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_memory_used_mib() is None
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 512\necho 2048\n")
    smi.chmod(0o755)
    assert gpu_memory_used_mib() == 2048
    smi.write_text("#!/bin/sh\necho '[N/A]'\n")
    assert gpu_memory_used_mib() is None
    assert gpu_memory_total_gib() is None
