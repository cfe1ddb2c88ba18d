"""bench.paired_clean: side-by-side pairs without the slow prefills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.paired_clean import clean_pairs, compare, main


def _s(ttft: float, vllm: float, prefill: float, tpot: float = 5.0) -> dict[str, float]:
    return {"ttft_ms": ttft, "vllm_ttft_ms": vllm, "prefill_ms": prefill, "tpot_ms": tpot}


OLD = [_s(16, 12, 8), _s(900, 890, 880), _s(18, 13, 9), None, _s(17, 12, 8)]
NEW = [_s(15, 12, 8), _s(16, 12, 8), _s(17, 13, 9), _s(16, 12, 8), _s(600, 590, 580)]


def test_a_pair_is_kept_only_when_both_prefills_were_quick_and_both_answered() -> None:
    kept = clean_pairs(OLD, NEW, 50)
    assert kept == [(OLD[0], NEW[0]), (OLD[2], NEW[2])]


def test_medians_and_paired_differences() -> None:
    result = compare(clean_pairs(OLD, NEW, 50))
    assert result["pairs"] == 2
    assert result["ttft_ms"] == [17.0, 16.0, -1.0]
    assert result["front_end_ms"] == [4.5, 3.5, -1.0]
    assert compare([]) == {"pairs": 0}


def test_main_reads_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"samples": {"old": OLD, "new": NEW}}))
    assert main([str(path), "old", "new"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["of"] == 5 and printed["pairs"] == 2
