"""bench.affinity: CPU lists, physical cores from a topology tree, the engine/rest split,
placing a real process tree; and the pinned pass of bench.run's plan."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.affinity import (
    engine_apart,
    parse_cpu_list,
    physical_cores,
    split_cpus,
)
from bench.client import build_plan
from bench.options import build_parser
from bench.procfs import is_api_worker, is_engine_core, is_fork_server
from bench.profiles import pin_order, profile_from_args


def topology(root: Path, siblings: dict[int, str]) -> Path:
    for cpu, text in siblings.items():
        path = root / f"cpu{cpu}" / "topology"
        path.mkdir(parents=True)
        (path / "thread_siblings_list").write_text(text + "\n")
    return root


def test_parse_cpu_list() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("5") == {5}
    assert parse_cpu_list("") == set()


def test_physical_cores_group_hyperthread_siblings(tmp_path: Path) -> None:
    # 4 cores with 2 threads each, numbered as on most x86 hosts (cpuN and cpuN+4)
    root = topology(tmp_path, {c: f"{c % 4},{c % 4 + 4}" for c in range(8)})
    assert physical_cores(range(8), root) == [
        frozenset({0, 4}),
        frozenset({1, 5}),
        frozenset({2, 6}),
        frozenset({3, 7}),
    ]
    # a sibling outside the allowed set is not handed out
    assert physical_cores({0, 1, 4}, root) == [frozenset({0, 4}), frozenset({1})]


def test_split_cpus_gives_the_engine_whole_cores(tmp_path: Path) -> None:
    root = topology(tmp_path, {c: f"{c % 4},{c % 4 + 4}" for c in range(8)})
    engine, rest = split_cpus(range(8), 1, root)
    assert engine == {3, 7}
    assert rest == {0, 1, 2, 4, 5, 6}
    engine, rest = split_cpus(range(8), 2, root)
    assert engine == {2, 3, 6, 7}


def test_split_cpus_without_topology_treats_each_cpu_as_a_core(tmp_path: Path) -> None:
    engine, rest = split_cpus({0, 1, 2}, 1, tmp_path)
    assert (engine, rest) == ({2}, {0, 1})


@pytest.mark.parametrize("cores", [0, 2, 3])
def test_split_cpus_refuses_to_leave_nothing(tmp_path: Path, cores: int) -> None:
    with pytest.raises(ValueError):
        split_cpus({0, 1}, cores, tmp_path)


class Proc:
    def __init__(self, cmdline: list[str], name: str) -> None:
        self._cmdline, self._name = cmdline, name

    def cmdline(self) -> list[str]:
        return self._cmdline

    def name(self) -> str:
        return self._name


def test_is_engine_core_by_title() -> None:
    assert is_engine_core(Proc(["VLLM::EngineCore"], "VLLM::EngineCor"))
    assert is_engine_core(Proc([], "VLLM::EngineCor"))  # cmdline unreadable, comm cut at 15
    assert not is_engine_core(Proc(["python3", "-m", "app", "serve"], "python3"))


def test_is_api_worker_takes_http_workers_and_the_rust_frontend() -> None:
    assert is_api_worker(Proc(["VLLM::APIServer_0"], "VLLM::APIServer"))
    rust = ["/root/site/vllm/vllm-rs", "frontend", "--listen-fd", "17"]
    assert is_api_worker(Proc(rust, "vllm-rs"))
    assert not is_api_worker(Proc(["/root/site/vllm/vllm-rs", "other"], "vllm-rs"))
    assert not is_api_worker(Proc(["VLLM::EngineCore"], "VLLM::EngineCor"))


def test_is_fork_server_takes_the_fork_server_alone() -> None:
    server = ["/usr/bin/python3", "-B", "-c", "from multiprocessing.forkserver import main; "]
    assert is_fork_server(Proc(server, "python3"))
    assert not is_fork_server(Proc(["VLLM::APIServer_0"], "VLLM::APIServer"))
    tracker = ["/usr/bin/python3", "-B", "-c", "from multiprocessing.resource_tracker import"]
    assert not is_fork_server(Proc(tracker, "python3"))


def test_front_end_pss_sums_the_launcher_workers_and_fork_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bench.procfs

    class Kid(Proc):
        def __init__(self, pid: int, cmdline: list[str]) -> None:
            super().__init__(cmdline, "python3")
            self.pid = pid

    server = ["python3", "-c", "from multiprocessing.forkserver import main"]
    kids = [
        Kid(2, ["VLLM::APIServer_0"]),
        Kid(3, ["VLLM::APIServer_1"]),
        Kid(4, server),
        Kid(5, ["python3", "-c", "from multiprocessing.resource_tracker import main"]),
        Kid(6, ["VLLM::EngineCore"]),
    ]
    pss = {1: 400 * 1024, 2: 300 * 1024, 3: 300 * 1024, 4: 150 * 1024, 5: 7, 6: 9}
    monkeypatch.setattr(bench.procfs, "pss_kib", pss.get)
    assert bench.procfs.front_end_pss_mib(1, kids) == 400 + 300 + 300 + 150
    del pss[3]  # a worker gone meanwhile: no sum rather than a low one
    assert bench.procfs.front_end_pss_mib(1, kids) is None


@pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="placing processes apart needs two CPUs"
)
def test_engine_apart_places_a_real_tree_and_restores_it() -> None:
    import psutil

    allowed = os.sched_getaffinity(0)
    # a server process with an "engine core" child (titled as vLLM titles it)
    code = (
        "import subprocess, time\n"
        "title = 'VLLM::Engine' + 'Core'\n"  # not in this process's own command line
        "subprocess.Popen(['bash', '-c', 'exec -a ' + title + ' sleep 60'])\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    server = psutil.Process(parent.pid)
    try:
        for _ in range(200):
            kids = server.children()
            if kids and is_engine_core(kids[0]):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the child never showed its title")
        engine_pid = kids[0].pid
        engine, rest = split_cpus(allowed, 1)
        with engine_apart(parent.pid, 1) as placed:
            assert placed["engine_pids"] == [engine_pid]
            assert placed["other_pids"] == [parent.pid]
            assert placed["engine_cpus"] == sorted(engine)
            assert os.sched_getaffinity(engine_pid) == engine
            assert os.sched_getaffinity(parent.pid) == rest
        assert os.sched_getaffinity(engine_pid) == allowed
        assert os.sched_getaffinity(parent.pid) == allowed
    finally:
        for proc in [*server.children(recursive=True), server]:
            proc.kill()
        parent.wait()


def test_pin_order_alternates_by_round() -> None:
    assert pin_order(0, 1) == [False]
    assert pin_order(2, 1) == [False, True]
    assert pin_order(2, 2) == [True, False]


def test_pinned_plan_is_tagged_and_marked(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--concurrency", "8", "--pin-engine-cores", "2"])
    assert args.pin_engine_cores == 2
    prof = profile_from_args("cpu", args)
    plan, runs = build_plan(
        prof, "vllm", 1, python="py", model="m", port=9, seed=0, results_dir=tmp_path,
        pinned=True,
    )  # fmt: skip
    assert [p["tag"] for p in plan] == ["vllm-pin-r1-128x64-c8"]
    argv = plan[0]["argv"]
    assert argv[argv.index("--result-filename") + 1] == "vllm-pin-r1-128x64-c8.json"
    assert runs["vllm-pin-r1-128x64-c8"]["pinned"] is True
    assert runs["vllm-pin-r1-128x64-c8"]["server"] == "vllm"
    _, plain = build_plan(
        prof, "vllm", 1, python="py", model="m", port=9, seed=0, results_dir=tmp_path
    )
    assert "pinned" not in plain["vllm-r1-128x64-c8"]
