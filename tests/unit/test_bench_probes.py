"""bench's measuring helpers: per-process py-spy summaries, the client's own CPU, the GPU's
busy share, the first-text probe and its prompts."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import random
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from bench.client_limit import _end_event, busy_share
from bench.first_text import first_text_probe, fit_to_length
from bench.probe_runner import FIRST_TEXT_REQUESTS, ProbeRunner
from bench.profile_summary import split_processes, summarize, summarize_processes
from bench.profiles import PROFILES
from bench.vllm_bench import _meter_benchmark
from tests.local_http import SseChatHandler, serving


def test_profile_splits_a_subprocess_recording_by_process(tmp_path: Path) -> None:
    raw = tmp_path / "py-spy.txt"
    raw.write_text(
        'process 1:"launcher";main (a.py:1);idle (a.py:2) 1\n'
        'process 1:"launcher";process 7:"worker";serve (app/x.py:3);send (uvicorn/p.py:9) 3\n'
    )
    per = summarize_processes(raw)
    assert list(per) == ['7:"worker"', '1:"launcher"']  # largest first
    assert per['7:"worker"']["share_pct"] == 75.0
    assert per['7:"worker"']["samples"] == 3
    assert per['7:"worker"']["app_inclusive_pct"] == {"serve (app/x.py)": 100.0}
    assert split_processes(raw)['1:"launcher"'] == ["main (a.py:1);idle (a.py:2) 1"]


def test_profile_summary_ranks_vllm_functions_inclusively() -> None:
    core = "run_busy_loop (vllm/v1/engine/core.py:9)"
    step = "step (vllm/v1/engine/core.py:20)"
    lines = [
        f"{core};{step};schedule (vllm/v1/core/sched/scheduler.py:5) 3",
        f"{core};{step};step (vllm/v1/engine/core.py:20);to_cpu (torch/x.py:1) 5",
        f"{core};_process_input_queue (vllm/v1/engine/core.py:30) 2",
    ]
    summary = summarize(lines)
    assert summary["vllm_inclusive_pct"] == {
        "run_busy_loop (vllm/v1/engine/core.py)": 100.0,
        "step (vllm/v1/engine/core.py)": 80.0,  # a recursive frame counted once a sample
        "schedule (vllm/v1/core/sched/scheduler.py)": 30.0,
        "_process_input_queue (vllm/v1/engine/core.py)": 20.0,
    }
    assert summary["app_inclusive_pct"] == {}
    assert summary["top_leaf_functions_pct"]["to_cpu (torch/x.py)"] == 50.0


def test_busy_share_averages_the_samples_inside_the_span(tmp_path: Path) -> None:
    smi = tmp_path / "gpu-util.txt"
    smi.write_text(
        "2026/11/30 12:00:00.000, 10 %\n"
        "2026/11/30 12:00:01.000, 80 %\n"
        "2026/11/30 12:00:02.000, 60 %\n"
        "[Unknown Error]\n"
    )
    t0 = dt.datetime(2026, 11, 30, 12, 0, 0).timestamp()
    assert busy_share(smi, t0 + 0.5, t0 + 2.5) == 70.0
    assert busy_share(smi, t0 + 5, t0 + 6) is None
    assert busy_share(tmp_path / "missing.txt", t0, t0 + 1) is None


def test_end_event_is_the_clients_last_end_line(tmp_path: Path) -> None:
    log = tmp_path / "client.log"
    log.write_bytes(
        b'@@bench {"event": "start", "tag": "a"}\nnoise\n'
        b'@@bench {"event": "end", "tag": "a", "ok": true, "client_cpu_s": 1.5}\ntrailer\n'
    )
    assert _end_event(log)["client_cpu_s"] == 1.5
    log.write_bytes(b"crashed before any event\n")
    assert _end_event(log) == {}


def test_meter_benchmark_records_the_clients_cpu_and_span() -> None:
    async def benchmark(x: int) -> int:
        return x + 1

    module = types.SimpleNamespace(benchmark=benchmark)
    usage: dict[str, float] = {}
    _meter_benchmark(module, usage)
    assert module.benchmark is not benchmark
    assert asyncio.run(module.benchmark(1)) == 2
    assert set(usage) == {"cpu_s", "wall_s", "since", "until"}
    assert usage["since"] <= usage["until"]
    plain = types.SimpleNamespace(benchmark=len)  # not a coroutine function: left alone
    _meter_benchmark(plain, usage)
    assert plain.benchmark is len


def test_first_text_probe_counts_refused_requests() -> None:
    with serving(SseChatHandler) as port:
        out = first_text_probe(port, "m", ["a", "bad", "b"], 4, {})
    assert out["requests"] == 2 and out["failed"] == 1
    assert out["first_error"].startswith("HTTP 400: ") and "too long" in out["first_error"]
    assert out["first_chunk_has_text_share"] == 0.0  # the role chunk came first
    assert out["first_text_ms_p50"] >= out["first_chunk_ms_p50"]


class _SplittingTokenizer:
    """Decodes id i as the word `w<i>`; encodes words of ids >= 50 as two tokens (as real
    tokenizers re-split random text), so one decode/encode round trip grows the prompt."""

    vocab_size = 100

    def decode(self, ids: list[int]) -> str:
        return " ".join(f"w{i}" for i in ids)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        out: list[int] = []
        for word in text.split():
            i = int(word[1:])
            out += [i % 50, i % 50] if i >= 50 else [i]
        return out


def test_fit_to_length_reaches_the_target_after_re_encoding() -> None:
    tok = _SplittingTokenizer()
    rng = random.Random(0)
    ids = [rng.randrange(100) for _ in range(64)]
    assert len(tok.encode(tok.decode(ids))) > 64  # the naive prompt would be too long
    prompt = fit_to_length(tok, ids, 64, rng)
    assert len(tok.encode(prompt)) == 64


def test_the_first_text_prompts_are_made_once_in_a_thread_while_servers_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bench.run starts making the probe's prompts before its servers are up (17 s of each
    device call went on that, after the first server was ready, in session 54); every
    server's probe then sends those same prompts."""
    made: list[tuple[str, tuple[Any, ...]]] = []
    release = threading.Event()

    def slow_prompts(*args: Any) -> list[str]:
        made.append((threading.current_thread().name, args))
        release.wait(5)
        return ["p1", "p2"]

    sent: list[tuple[int, list[str]]] = []
    monkeypatch.setattr("bench.first_text.random_prompts", slow_prompts)
    monkeypatch.setattr(
        "bench.first_text.first_text_probe",
        lambda port, model, prompts, out_len, sampling: sent.append((port, prompts)) or {},
    )
    runner = ProbeRunner()
    runner.args = argparse.Namespace(seed=7)
    runner.profile = dataclasses.replace(PROFILES["cpu"], workloads=((128, 64),))
    runner._first_text_prompts = None
    soon = runner.make_first_text_prompts("model")
    assert not soon.done()  # the caller goes on (to start the servers) meanwhile
    release.set()
    for port in (1, 2):
        assert runner.first_text(types.SimpleNamespace(port=port), "model") == {}  # type: ignore[arg-type]
    assert sent == [(1, ["p1", "p2"]), (2, ["p1", "p2"])]
    assert len(made) == 1 and made[0][0].startswith("first-text-prompts")
    assert made[0][1] == ("model", 128, FIRST_TEXT_REQUESTS, 8)


def test_load_probes_past_the_deadline_are_skipped_in_one_line_without_prompts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the deadline a server's load probes are noted skipped, each, in one log line,
    and their prompts (a tokenizer to load) are not made."""

    def no_prompts(*args: Any) -> list[str]:
        raise AssertionError("prompts made for probes that will not run")

    monkeypatch.setattr("bench.first_text.random_prompts", no_prompts)
    lines: list[str] = []
    runner = ProbeRunner()
    runner.args = argparse.Namespace(seed=7)
    runner.profile = dataclasses.replace(PROFILES["cpu"], first_text_load=(8, 32))
    runner.data = {}
    runner._load_prompts = []
    monkeypatch.setattr(runner, "remaining", lambda: 30.0)
    monkeypatch.setattr(runner, "log", lines.append)
    server = types.SimpleNamespace(alive=lambda: True, port=1)
    runner.load_probes(server, {"server": "gateway", "round": 2}, "model")  # type: ignore[arg-type]
    assert runner.data["skipped"] == ["gateway#2-load@8", "gateway#2-load@32"]
    assert lines == ["deadline: no first-text load probe of gateway at c=8, 32"]
