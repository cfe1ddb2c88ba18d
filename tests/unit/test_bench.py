"""Pure parts of the benchmark harness: the client's scheduler weight, its plan, argv and
run records, /proc readers, SSE reading (the report: test_bench_report.py; the measuring
helpers: test_bench_probes.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.client import build_plan, on_end, on_start, prompt_seed
from bench.commands import RUST_FRONTEND_VAR, bench_server, client_argv, scalar_metrics
from bench.machine import autogroup_nice, favour_client, favoured_client
from bench.options import build_parser, server_root
from bench.procfs import current_core, pss_kib, read_status_kib, rss_kib, worker_title
from bench.profiles import profile_from_args
from bench.run import Runner
from bench.sse import first_delta, has_text


def test_favour_client_writes_the_nice(tmp_path: Path) -> None:
    autogroup = tmp_path / "autogroup"
    autogroup.write_text("/autogroup-7 nice 0\n")
    # a plain file reads back "-10", not the kernel's "/autogroup-7 nice -10"
    assert favour_client(-10, autogroup) is None
    assert autogroup.read_text() == "-10"


class KernelAutogroup:
    """/proc/self/autogroup's behaviour: takes a nice, reads back the whole line."""

    def __init__(self, nice: int) -> None:
        self.nice = nice
        self.writes: list[str] = []

    def read_text(self) -> str:
        return f"/autogroup-7 nice {self.nice}\n"

    def write_text(self, text: str) -> None:
        self.writes.append(text)
        self.nice = int(text)


def test_favoured_client_gives_the_previous_weight_back() -> None:
    autogroup = KernelAutogroup(3)
    with favoured_client(-10, autogroup) as nice:  # type: ignore[arg-type]
        assert nice == -10
        assert autogroup.nice == -10
    assert autogroup.nice == 3
    assert autogroup.writes == ["-10", "3"]


def test_autogroup_nice_parses_the_kernels_line() -> None:
    assert autogroup_nice("/autogroup-196 nice -10\n") == -10
    assert autogroup_nice("/autogroup-3 nice 0\n") == 0
    assert autogroup_nice("-10") is None


def test_favour_client_takes_its_default_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    autogroup = tmp_path / "autogroup"
    monkeypatch.delenv("BENCH_CLIENT_NICE", raising=False)
    favour_client(path=autogroup)
    assert autogroup.read_text() == "-10"
    monkeypatch.setenv("BENCH_CLIENT_NICE", "-19")
    favour_client(path=autogroup)
    assert autogroup.read_text() == "-19"


def test_favour_client_without_autogroups_returns_none(tmp_path: Path) -> None:
    assert favour_client(-10, tmp_path / "missing" / "autogroup") is None


def test_build_plan_names_every_point_once(tmp_path: Path) -> None:
    prof = profile_from_args("cpu", build_parser().parse_args(["--concurrency", "8,8,32"]))
    plan, runs = build_plan(
        prof, "gateway", 2, python="py", model="m", port=9, seed=0, results_dir=tmp_path
    )
    assert [p["tag"] for p in plan] == [
        "gateway-r2-128x64-c8",
        "gateway-r2-128x64-c8-2",
        "gateway-r2-128x64-c32",
    ]
    assert list(runs) == [p["tag"] for p in plan]
    argv = plan[2]["argv"]
    assert argv[:2] == ["--backend", "openai-chat"]  # no `python -m bench.vllm_bench`
    assert argv[argv.index("--max-concurrency") + 1] == "32"
    assert argv[argv.index("--result-filename") + 1] == "gateway-r2-128x64-c32.json"
    assert runs["gateway-r2-128x64-c32"]["num_prompts"] == 320  # 10 per unit of concurrency


def _seeds(name: str, rnd: int, tmp_path: Path) -> dict[str, str]:
    prof = profile_from_args("cpu", build_parser().parse_args(["--concurrency", "1,8"]))
    plan, runs = build_plan(
        prof, name, rnd, python="py", model="m", port=9, seed=5, results_dir=tmp_path
    )
    for item in plan:
        argv = item["argv"]
        assert int(argv[argv.index("--seed") + 1]) == runs[item["tag"]]["seed"]
    return {tag.split("-", 2)[2]: str(runs[tag]["seed"]) for tag in runs}


def test_every_round_and_point_has_prompts_of_its_own(tmp_path: Path) -> None:
    gateway_r1, gateway_r2 = _seeds("gateway", 1, tmp_path), _seeds("gateway", 2, tmp_path)
    # the same round's prompts for every server (an A/B), fresh ones for each round and point
    assert _seeds("vllm", 1, tmp_path) == gateway_r1
    assert len({*gateway_r1.values(), *gateway_r2.values()}) == 4
    assert prompt_seed(5, 1, (128, 64), 8, False) != prompt_seed(5, 1, (128, 64), 8, True)
    assert prompt_seed(5, 1, (128, 64), 8, False) != prompt_seed(6, 1, (128, 64), 8, False)


class Meter:
    def __init__(self, *readings: tuple[float, float], workers: bool = False) -> None:
        self.readings = list(readings)
        self.workers = [
            {"APIServer_0": 5.0, "APIServer_1": 1.0},
            {"APIServer_0": 7.5, "APIServer_1": 1.25},
        ]
        self.workers = self.workers if workers else [{}, {}]

    def cpu_seconds(self) -> tuple[float | None, float | None]:
        return self.readings.pop(0)

    def engine_threads(self) -> dict[str, float]:
        return {}  # no engine core found: nothing recorded

    def worker_cpu(self) -> dict[str, float]:
        return self.workers.pop(0)


def test_on_end_records_metrics_and_front_end_cpu_per_token(tmp_path: Path) -> None:
    tag = "gateway-r1-128x64-c8"
    (tmp_path / f"{tag}.json").write_text(
        json.dumps({"request_throughput": 40.0, "total_output_tokens": 5120, "failed": 0})
    )
    run: dict[str, Any] = {"num_prompts": 80, "num_warmups": 8, "output_len": 64}
    meter = Meter((10.0, 100.0), (12.8, 130.0), workers=True)
    on_start(run, {"time": 0, "loadavg": [1.0]}, meter)
    line = on_end(run, {"tag": tag, "ok": True, "wall_s": 2.5}, meter, tmp_path)
    assert line.startswith(f"{tag}: 40.00 req/s")
    assert run["api_server_cpu_s"] == 2.8
    assert run["engine_procs_cpu_s"] == 30.0
    assert run["cpu_tokens"] == 5120 + 8 * 64
    assert run["api_server_cpu_us_per_token"] == round(2.8 / (5120 + 8 * 64) * 1e6, 1)
    assert run["cpu_counts_http_workers"] is True
    assert run["cpu_counts_rust_frontend"] is True
    assert run["http_workers_cpu_s"] == {"APIServer_0": 2.5, "APIServer_1": 0.25}


def test_worker_titles_are_short() -> None:
    assert worker_title(["VLLM::APIServer_3"]) == "APIServer_3"
    assert worker_title(["/root/site/bin/vllm-rs", "frontend", "--port", "8000"]) == "vllm-rs"
    assert worker_title([]) == "?"


def test_on_end_marks_a_failed_client_run(tmp_path: Path) -> None:
    run: dict[str, Any] = {"num_prompts": 8, "num_warmups": 1, "output_len": 64}
    meter = Meter((1.0, 1.0), (1.5, 2.0))
    on_start(run, {"time": 0}, meter)
    assert on_end(run, {"tag": "x", "ok": False}, meter, tmp_path) == "x: client failed"
    assert "metrics" not in run and run["error"].startswith("client failed")


def test_procfs_reads_this_process() -> None:
    rss = rss_kib(os.getpid())
    assert rss is not None and rss > 1024
    core = current_core(os.getpid())
    assert core is not None and 0 <= core < (os.cpu_count() or 1)
    assert read_status_kib(2**22 + 1, "VmRSS") is None  # no such pid


def test_first_delta_and_has_text() -> None:
    assert first_delta({"choices": []}) is None  # the usage chunk
    role = first_delta({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
    assert role == {"role": "assistant", "content": ""} and not has_text(role)
    assert has_text(first_delta({"choices": [{"delta": {"reasoning_content": "hm"}}]}))
    assert has_text(first_delta({"choices": [{"delta": {"content": "a"}}]}))
    assert not has_text(None)


def test_on_end_records_the_clients_cpu_share(tmp_path: Path) -> None:
    run: dict[str, Any] = {"num_prompts": 4, "num_warmups": 0, "output_len": 8}

    class Meter:
        def cpu_seconds(self) -> tuple[float | None, float | None]:
            return None, None

        def engine_threads(self) -> dict[str, float]:
            return {}

        def worker_cpu(self) -> dict[str, float]:
            return {}

    event = {"tag": "t", "ok": False, "client_cpu_s": 3.0, "client_busy_wall_s": 4.0}
    on_end(run, event, Meter(), tmp_path)
    assert run["client_cpu_util"] == 0.75 and run["client_cpu_s"] == 3.0


def test_client_saves_per_request_detail_only_at_concurrency_one(tmp_path: Path) -> None:
    def argv(conc: int) -> list[str]:
        return client_argv("py", "m", 1, (8, 4), conc, 4, 0, 0, {}, tmp_path, "r.json")

    assert "--save-detailed" in argv(1)
    assert "--save-detailed" not in argv(8)
    assert scalar_metrics({"ttfts": [0.1], "median_ttft_ms": 1.0}) == {"median_ttft_ms": 1.0}


def test_the_rust_frontend_starts_from_vllms_cli_with_its_variable(tmp_path: Path) -> None:
    prof = profile_from_args("gpu", build_parser().parse_args(["--vllm-frontend", "rust"]))
    rust = bench_server(
        "vllm", prof, python="py", model="/m", port=9, log_path=tmp_path / "l", frontend="rust"
    )
    assert rust.argv[:5] == ["py", "-m", "vllm.entrypoints.cli.main", "serve", "/m"]
    assert rust.env[RUST_FRONTEND_VAR] == "1"
    # the gateway and vLLM's Python server are unchanged by the choice
    gateway = bench_server(
        "gateway", prof, python="py", model="/m", port=9, log_path=tmp_path / "l", frontend="rust"
    )
    python = bench_server("vllm", prof, python="py", model="/m", port=9, log_path=tmp_path / "l")
    assert gateway.argv[:4] == ["py", "-m", "app", "serve"]
    assert python.argv[2] == "vllm.entrypoints.openai.api_server"
    assert RUST_FRONTEND_VAR not in gateway.env and RUST_FRONTEND_VAR not in python.env


def _sampling_sent(*flags: str) -> dict[str, object]:
    prof = profile_from_args("gpu", build_parser().parse_args(list(flags)))
    plan, _ = build_plan(
        prof, "gateway", 1, python="py", model="m", port=9, seed=0, results_dir=Path("r")
    )
    argv = plan[0]["argv"]
    return {
        key: argv[argv.index(f"--{key.replace('_', '-')}") + 1]
        for key in ("temperature", "top_p", "top_k")
        if f"--{key.replace('_', '-')}" in argv
    }


def test_sampling_flag_sets_what_the_client_sends() -> None:
    assert _sampling_sent() == {"temperature": "0.6", "top_p": "0.95", "top_k": "20"}
    plain = _sampling_sent("--sampling", "temperature=1,top_p=1,top_k=0")
    assert plain == {"temperature": "1.0", "top_p": "1.0", "top_k": "0"}
    assert _sampling_sent("--sampling", "none") == {}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--sampling", "min_p=0.1"])


def test_pss_counts_shared_pages_once() -> None:
    own = os.getpid()
    pss, rss = pss_kib(own), rss_kib(own)
    assert pss is not None and rss is not None and 0 < pss <= rss
    assert pss_kib(2**22 + 12345) is None  # no such process


def test_a_second_gateway_runs_from_its_own_checkout_with_the_gateways_flags(
    tmp_path: Path,
) -> None:
    flags = ["--servers", "vllm,gateway,gwb", "--results-dir", str(tmp_path / "res")]
    with pytest.raises(SystemExit, match="--gwb-root"):
        Runner(build_parser().parse_args(["--profile", "gpu", *flags]))
    old = tmp_path / "old"
    args = build_parser().parse_args(
        ["--profile", "gpu", *flags, "--gwb-root", str(old), "--together",
         "--gateway-args=--access-log", "--gwb-args=--api-server-count 2"]
    )  # fmt: skip
    runner = Runner(args)
    assert runner.extra_args("gwb")[:3] == ["--access-log", "--api-server-count", "2"]
    assert runner.extra_args("gateway")[0] == "--access-log"
    # three engines up together: each its third of the shared memory
    assert runner.extra_args("gwb")[3:5] == ["--gpu-memory-utilization", "0.267"]
    servers = {
        name: bench_server(
            name, runner.profile, python="py", model="/m", port=9, log_path=tmp_path / "l",
            gateway_root=server_root(args, name),
        )
        for name in ("vllm", "gateway", "gwb")
    }  # fmt: skip
    assert servers["gwb"].cwd == str(old.resolve())
    assert servers["gwb"].argv[:4] == ["py", "-m", "app", "serve"]
    assert servers["gateway"].cwd == servers["vllm"].cwd != servers["gwb"].cwd
