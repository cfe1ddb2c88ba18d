"""bench's report helpers: CPU per token, the bandwidth table, merged results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report import render, write_report
from bench.report_data import as_gateway, cpu_per_token, load, skipped_text
from bench.report_goals import bandwidth_table, goal_checks, verdict


def _data(counted: bool) -> dict[str, Any]:
    run = {
        "workload": "128x64",
        "concurrency": 8,
        "round": 1,
        "api_server_cpu_us_per_token": 100.0,
    }
    gateway = {**run, "server": "gateway", "api_server_cpu_us_per_token": 5.0}
    if counted:
        gateway["cpu_counts_http_workers"] = True
    return {
        "workloads": ["128x64"],
        "sessions": [
            {"server": "vllm", "round": 1, "memory": {"api_workers": 0}},
            {"server": "gateway", "round": 1, "memory": {"api_workers": 4}},
        ],
        "runs": [{**run, "server": "vllm"}, gateway],
    }


def test_cpu_per_token_leaves_out_worker_sessions_measured_without_workers() -> None:
    assert cpu_per_token(_data(counted=False)) == [("128x64", 8, 100.0, None)]


def test_cpu_per_token_keeps_worker_sessions_that_counted_them() -> None:
    assert cpu_per_token(_data(counted=True)) == [("128x64", 8, 100.0, 5.0)]


def test_cpu_per_token_leaves_out_vllms_rust_frontend() -> None:
    """With the Rust frontend, runs that measured only `vllm serve`'s launcher (its HTTP
    runs in a child) get no figure, rather than a near-zero one and a huge ratio."""
    data = {**_data(counted=True), "vllm_frontend": "rust"}
    assert cpu_per_token(data) == [("128x64", 8, None, 5.0)]
    for run in data["runs"]:  # recorded since the harness counts `vllm-rs` as front end
        run["cpu_counts_rust_frontend"] = True
    assert cpu_per_token(data) == [("128x64", 8, 100.0, 5.0)]


def test_bandwidth_table_only_for_known_gpus_and_their_workloads() -> None:
    def row(workload: str, vllm: float | None, gw: float) -> dict[str, Any]:
        tok = {"vllm": {"output_throughput": vllm}, "gateway": {"output_throughput": gw}}
        return {"workload": workload, "concurrency": 256, **tok}

    rows = [row("128x1024", 13_000.0, 26_000.0), row("128x64", 1.0, 1.0)]
    table = bandwidth_table("gpu-h200", rows)
    assert "| 128x1024 | 256 | 65,000 | 13,000 | 20% | 26,000 | 40% |" in table
    assert not any("128x64" in line for line in table)
    assert bandwidth_table("cpu-2core", rows) == []
    assert bandwidth_table("gpu-h200", [row("128x64", 1.0, 1.0)]) == []
    assert "| – | – |" in bandwidth_table("gpu-h200", [row("1024x128", None, 1.0)])[-2]
    # an H100 (SXM, HBM3) lent instead: the H200's limit scaled by 3.35 / 4.8 TB/s
    h100 = bandwidth_table("gpu-h100-s48", rows, "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04")
    assert "| 128x1024 | 256 | 45,365 | 13,000 | 29% | 26,000 | 57% |" in h100
    assert "3.35 TB/s" in h100[2]
    assert bandwidth_table("gpu-x", rows, "NVIDIA A100-SXM4-40GB") == []


def test_a_reports_own_json_keeps_its_sources(tmp_path: Path) -> None:
    merged = {"runs": [], "sessions": [], "sources": ["a/results.json", "b/results.json"]}
    (tmp_path / "report.json").write_text(json.dumps(merged))
    assert load([tmp_path / "report.json"])["sources"] == merged["sources"]


def test_merged_results_list_every_invocations_points(tmp_path: Path) -> None:
    first = {"runs": [], "sessions": [], "workloads": ["1024x128"], "concurrencies": [256]}
    second = {**first, "workloads": ["1024x128", "128x1024"], "concurrencies": [1, 64, 256]}
    for name, data in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps(data))
    merged = load([tmp_path / "a.json", tmp_path / "b.json"])
    assert merged["workloads"] == ["1024x128", "128x1024"]
    assert merged["concurrencies"] == [1, 64, 256]


def test_merged_results_name_every_invocations_commit(tmp_path: Path) -> None:
    base = {"runs": [], "sessions": [], "workloads": ["128x64"], "concurrencies": [8]}
    for name, commit in (("a.json", "2cabb2b"), ("b.json", "2cabb2b"), ("c.json", "52777f9")):
        data = {**base, "versions": {"vllm": "0.32.0", "gateway_commit": commit}}
        (tmp_path / name).write_text(json.dumps(data))
    merged = load([tmp_path / n for n in ("a.json", "b.json", "c.json")])
    assert merged["versions"]["gateway_commit"] == "2cabb2b, 52777f9"


def test_the_never_below_goal_shows_the_lowest_single_round_too() -> None:
    def row(conc: int, req: float, tok: float, rounds: list[float | None]) -> dict[str, Any]:
        return {
            "workload": "1024x128",
            "concurrency": conc,
            "ratio_of_medians": {"request_throughput": req, "output_throughput": tok},
            "round_ratios": {"request_throughput": rounds},
            "gateway": dict.fromkeys(
                ("request_throughput", "output_throughput", "median_ttft_ms", "median_tpot_ms")
            ),
            "vllm": {},
        }

    rows = [row(64, 1.012, 1.03, [1.09, 0.94, None]), row(256, 1.4, 1.4, [1.28, 1.44])]
    data = {"profile": "gpu", "sessions": [], "runs": []}
    (goal,) = [c for c in goal_checks(data, rows) if c[0].startswith("never below")]
    assert goal == (
        "never below 1.0× vllm serve (throughput, medians over rounds)",
        "lowest 1.012× (1024x128@64 request_throughput); lowest single round 0.940× (1024x128@64)",
        True,
    )


def test_a_ttft_goal_is_judged_on_medians_and_shows_the_rounds_pairs() -> None:
    row = {
        "workload": "128x64",
        "concurrency": 8,
        "gateway": {"median_ttft_ms": 23.5},
        "vllm": {"median_ttft_ms": 23.4},
        "round_ratios": {"median_ttft_ms": [0.72, 1.09, 0.95, None]},
        "median_round_ratio": {"median_ttft_ms": 0.95},
    }
    data = {"profile": "cpu", "sessions": [], "runs": []}
    (goal,) = [c for c in goal_checks(data, [row]) if c[0].startswith("TTFT")]
    assert goal == (
        "TTFT p50 ≤ vllm serve at c=8 (128x64)",
        "23.5 vs 23.4 ms; lower in 2 of 3 rounds (median of per-round ratios 0.950)",
        False,
    )


def test_a_rust_frontend_report_says_so() -> None:
    data: dict[str, Any] = {
        "workloads": ["128x64"], "concurrencies": [8], "model": "m", "profile": "gpu",
        "sessions": [], "runs": [],
    }  # fmt: skip
    assert "Rust" not in render(data, "hw", [], "x.json")
    assert "Rust** HTTP frontend" in render({**data, "vllm_frontend": "rust"}, "hw", [], "x.json")


def _memory_goal(gateway: dict[str, Any], vllm: dict[str, Any]) -> tuple[str, str, bool]:
    data = {
        "profile": "gpu",
        "sessions": [
            {"server": "gateway", "round": 1, "memory": gateway},
            {"server": "vllm", "round": 1, "memory": vllm},
        ],
        "runs": [],
    }
    (goal,) = [c for c in goal_checks(data, []) if c[0].startswith("HTTP front-end")]
    return goal


def test_the_memory_goal_is_judged_on_rss_and_shows_pss_beside_it() -> None:
    workers = {"vm_hwm_mib": 1000.0, "api_workers": 4, "api_workers_rss_peak_mib": 5500.0}
    single = {"vm_hwm_mib": 1400.0}
    assert _memory_goal(workers, single)[1:] == ("6500 vs 1400 MiB", False)
    goal = _memory_goal(
        {**workers, "front_end_pss_peak_mib": 2300.0}, {**single, "front_end_pss_peak_mib": 900.0}
    )
    assert goal[1:] == ("6500 vs 1400 MiB (by PSS, shared pages counted once: 2300 vs 900)", False)


def test_the_sessions_table_has_a_pss_column() -> None:
    data: dict[str, Any] = {
        "workloads": ["128x64"], "concurrencies": [8], "model": "m", "profile": "cpu",
        "sessions": [
            {"server": "gateway", "round": 1,
             "memory": {"vm_hwm_mib": 597.6, "front_end_pss_peak_mib": 431.2}},
            {"server": "vllm", "round": 1, "memory": {"vm_hwm_mib": 618.2}},
        ],
        "runs": [],
    }  # fmt: skip
    rows = [line for line in render(data, "hw", [], "x.json").splitlines() if "| 1 |" in line]
    assert "| 598 | 431 |" in rows[0] and "| 618 | – |" in rows[1]


def test_a_report_of_the_second_gateway_compares_it_and_leaves_the_first_out() -> None:
    data = _data(counted=True)
    data["sessions"].append({"server": "gwb", "round": 1, "memory": {"api_workers": 4}})
    data["runs"].append({**data["runs"][1], "server": "gwb", "api_server_cpu_us_per_token": 7.0})
    data["commands"] = {"gateway": "python -m app serve m", "gwb": "python -m app serve m --x"}
    picked = as_gateway(data, "gwb")
    assert picked["commands"] == {"gateway": "python -m app serve m --x"}
    assert [(r["server"], r["api_server_cpu_us_per_token"]) for r in picked["runs"]] == [
        ("vllm", 100.0),
        ("gateway", 7.0),
    ]
    assert [s["server"] for s in picked["sessions"]] == ["vllm", "gateway"]
    assert picked["notes"] == ["the gateway here is `gwb`, run from its own checkout"]
    assert as_gateway(data, "gateway") is data
    # a report of all three names the second gateway's session by its label
    head = {"model": "m", "concurrencies": [8], "profile": "cpu", "runs": []}
    assert "→ gateway B r1 (no runs)" in render({**data, **head}, "hw", [], "x.json")


def test_the_second_gateways_report_keeps_every_server_in_its_json(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    sessions = [{"server": s, "round": 1} for s in ("vllm", "gateway", "gwb")]
    head = {"workloads": ["128x64"], "concurrencies": [8], "model": "m", "profile": "cpu"}
    results.write_text(json.dumps(head | {"hardware": "hw", "sessions": sessions, "runs": []}))
    md = write_report(results, tmp_path / "docs", gateway="gwb")
    kept = json.loads((tmp_path / "docs" / "hw.json").read_text())
    assert [s["server"] for s in kept["sessions"]] == ["vllm", "gateway", "gwb"]
    assert "the gateway here is `gwb`" in md.read_text()
    assert "gateway B" not in md.read_text()  # the page compares it as the gateway


def test_absolute_gpu_goals_are_judged_on_an_h200_only() -> None:
    """Session 46's lease lent an H100: its 89.8 req/s is not the H200's 122 missed."""
    row = {
        "workload": "1024x128",
        "concurrency": 256,
        "ratio_of_medians": {"request_throughput": 0.93, "output_throughput": 0.93},
        "round_ratios": {"request_throughput": [0.93]},
        "gateway": {"request_throughput": 89.8, "output_throughput": 11498.0},
        "vllm": {},
    }

    def checks(gpu: str | None) -> dict[str, tuple[str, bool | None]]:
        versions = {"gpu": gpu} if gpu else {}
        data = {"profile": "gpu", "sessions": [], "runs": [], "versions": versions}
        return {goal: (measured, met) for goal, measured, met in goal_checks(data, [row])}

    goal = "≥ 122 req/s at c=256, 1024/128"
    assert checks("NVIDIA H200, 143771 MiB, 580.159.04")[goal] == ("89.8", False)
    assert checks(None)[goal] == ("89.8", False)  # unrecorded: judged, as before
    h100 = checks("NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04")
    assert h100[goal] == ("89.8 (on an NVIDIA H100 80GB HBM3: the goal is an H200's figure)", None)
    never = "never below 1.0× vllm serve (throughput, medians over rounds)"
    assert h100[never][1] is False  # a ratio holds on any GPU


def test_a_goal_not_judged_on_this_gpu_says_so() -> None:
    assert [verdict(m) for m in (True, False, None)] == ["yes", "**no**", "not judged here"]


def test_skipped_runs_are_listed_once_per_server_and_point_with_their_rounds() -> None:
    tags = [f"{name}-r{rnd}-1024x128-c{conc}" for rnd in range(9, 31)
            for name in ("vllm", "gateway") for conc in (64, 256)]  # fmt: skip
    tags += ["gwb#1", "vllm-pin-r2-128x64-c8", "vllm-pin-r4-128x64-c8", "gateway-r2-1024x128-c1"]
    assert skipped_text(tags) == (
        "vllm-1024x128-c64 (rounds 9-30), vllm-1024x128-c256 (rounds 9-30), "
        "gateway-1024x128-c64 (rounds 9-30), gateway-1024x128-c256 (rounds 9-30), "
        "gwb#1, vllm-pin-128x64-c8 (rounds 2, 4), gateway-1024x128-c1 (round 2)"
    )
