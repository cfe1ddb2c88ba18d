"""bench.first_text_load: the first-text probe under load, against a stand-in server, and
its report section."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from bench.first_text_load import drive, prompt_count, run_probe, summarize
from bench.options import build_parser
from bench.profiles import profile_from_args
from bench.report_first_text import first_text_checks, first_text_section, load_medians
from tests.local_http import SseChatHandler, serving


class _CountingHandler(SseChatHandler):
    """Holds each stream open a moment and counts the streams open at once; the first
    chunk carries text for prompts that start with "t"."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    open_now: ClassVar[int] = 0
    most: ClassVar[int] = 0

    def stream(self, body: dict[str, Any]) -> None:
        cls = type(self)
        with cls.lock:
            cls.open_now += 1
            cls.most = max(cls.most, cls.open_now)
        try:
            if body["messages"][0]["content"].startswith("t"):
                self.send_event({"choices": [{"delta": {"role": "assistant", "content": "x"}}]})
            else:
                self.send_event({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
                time.sleep(0.05)
                self.send_event({"choices": [{"delta": {"reasoning_content": "y"}}]})
            time.sleep(0.05)
            self.send_event({"choices": [], "usage": {"completion_tokens": 2}})
        finally:
            with cls.lock:
                cls.open_now -= 1


def _spec(port: int, prompts: list[str], concurrency: int) -> dict[str, Any]:
    return {
        "port": port,
        "model": "m",
        "prompts": prompts,
        "out_len": 4,
        "sampling": {"temperature": 0.6},
        "concurrency": concurrency,
    }


def test_the_probe_keeps_concurrency_streams_open_and_times_both_moments() -> None:
    prompts = ["t1", "a", "bad", "t2", "b", "c", "t3", "d"]
    with serving(_CountingHandler) as port:
        done, errors, wall_s = asyncio.run(drive(_spec(port, prompts, 3)))
    assert _CountingHandler.most == 3  # never more than asked, and as many as asked
    out = summarize(done, errors, wall_s, 3)
    assert out["requests"] == 7 and out["failed"] == 1 and "HTTP 400" in out["first_error"]
    assert out["first_chunk_has_text_share"] == round(3 / 7, 3)
    assert out["first_text_ms_p50"] >= out["first_chunk_ms_p50"]
    assert out["first_text_ms_p90"] >= out["first_text_ms_p50"]
    # the four without text in their first chunk waited >= 20 ms for it
    assert [i for i, _ in done] == [0, 1, 3, 4, 5, 6, 7]  # sending order; "bad" (2) failed
    late = sorted(t.text - t.first for _, t in done if t.text is not None and t.first is not None)
    assert late[:3] == [0.0, 0.0, 0.0]  # text in the first chunk: the same moment
    assert late[3] >= 0.03  # the four others waited 50 ms for it (a little less, read)
    assert out["concurrency"] == 3 and out["req_per_s"] == round(7 / wall_s, 2)
    # the first wave: t1 (text at once) and a (text 20 ms later); "bad" timed nothing
    wave = sorted(t.text for i, t in done if i < 3 and t.text is not None)
    assert out["first_wave_first_text_ms_p50"] == round(1000 * (wave[0] + wave[1]) / 2, 2)
    later = [t for i, t in done if i >= 3]
    assert out["later_first_text_ms_p50"] >= out["later_first_chunk_ms_p50"]
    assert len(later) == 5


def test_run_probe_runs_it_in_a_process_of_its_own(tmp_path: Path) -> None:
    with serving(SseChatHandler) as port:
        out = run_probe(sys.executable, _spec(port, ["a", "b"], 2), tmp_path / "s.json", 60)
    assert out["requests"] == 2 and out["concurrency"] == 2 and "failed" not in out
    assert out["first_chunk_has_text_share"] == 0.0  # the stand-in's role chunk is empty
    assert list(tmp_path.iterdir()) == []  # the prompts' file is not left in the results
    assert datetime.fromisoformat(out["started"]).tzinfo is not None  # for bench.access_marks


def test_run_probe_reports_a_server_that_is_not_there(tmp_path: Path) -> None:
    with serving(SseChatHandler) as port:
        pass  # closed: nothing listens on the port any more
    out = run_probe(sys.executable, _spec(port, ["a", "b", "c"], 2), tmp_path / "s.json", 60)
    assert out["requests"] == 0 and out["failed"] == 3


def test_prompt_count_is_three_waves_or_forty() -> None:
    assert [prompt_count(c) for c in (1, 8, 32, 64)] == [40, 40, 96, 192]


def test_the_cpu_profile_probes_8_32_64_and_the_flag_overrides_it() -> None:
    parse = build_parser().parse_args
    assert profile_from_args("cpu", parse([])).first_text_load == [8, 32, 64]
    assert profile_from_args("gpu", parse([])).first_text_load == []
    assert profile_from_args("cpu", parse(["--first-text-load", ""])).first_text_load == []
    assert profile_from_args("cpu", parse(["--first-text-load", "64"])).first_text_load == [64]


def _probe(c: int, chunk: float, text: float, share: float = 0.5) -> dict[str, Any]:
    return {
        "concurrency": c,
        "requests": 40,
        "first_chunk_ms_p50": chunk,
        "first_text_ms_p50": text,
        "first_text_ms_p90": 2 * text,
        "later_first_text_ms_p50": text - 1,
        "first_chunk_has_text_share": share,
        "req_per_s": 10.0,
    }


def _data() -> dict[str, Any]:
    return {
        "sessions": [
            {"server": "vllm", "first_text_load": [_probe(32, 100, 140, 0.0), _probe(64, 1, 1)]},
            {"server": "vllm", "first_text_load": [_probe(32, 120, 160, 0.0)]},
            {"server": "gateway", "first_text_load": [_probe(32, 130, 130, 1.0)]},
            {"server": "gateway", "first_text_load": [{"concurrency": 64, "requests": 0}]},
            {"server": "gateway"},
        ]
    }


def test_report_medians_pair_the_servers_per_concurrency() -> None:
    medians = load_medians(_data())
    assert medians[32]["vllm"]["first_text_ms_p50"] == 150.0
    assert medians[32]["vllm"]["sessions"] == 2.0
    assert medians[32]["gateway"]["first_chunk_has_text_share"] == 1.0
    assert medians[64]["gateway"]["first_text_ms_p50"] is None  # its probe timed nothing
    checks = first_text_checks(_data())
    assert len(checks) == 1  # c=64: only vllm serve was timed
    goal, measured, met = checks[0]
    assert "c=32" in goal and measured == "130.0 vs 150.0 ms" and met
    rows = [line for line in first_text_section(_data()) if line.startswith("| 32 |")]
    assert rows == [
        "| 32 | 110.0 | 130.0 | 150.0 | 130.0 | 0.867 | 300.0 | 260.0 | – | – | 149.0 | 129.0 | "
        "0% | 100% | 10.00 | 10.00 | 2 / 1 |"
    ]


def test_no_probes_no_section() -> None:
    assert first_text_section({"sessions": [{"server": "vllm"}]}) == []
    assert first_text_checks({"sessions": []}) == []
