"""`bench.profile_compare`: py-spy recordings set side by side per output token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.profile_compare import main

LOOP = "run_busy_loop (vllm/v1/engine/core.py:9)"
STEP = "step (vllm/v1/engine/core.py:20)"


def recording(folder: Path, lines: list[str], tokens: int, server: str = "gateway") -> Path:
    folder.mkdir()
    (folder / "py-spy.txt").write_text("\n".join(lines) + "\n")
    summary = {"server": server, "vllm_frontend": "rust", "output_tokens": tokens}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_compares_samples_per_million_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rust = recording(
        tmp_path / "a",
        [f"{LOOP};{STEP};schedule (vllm/x.py:5) 30", f"{LOOP};{STEP};{STEP} 70"],
        tokens=1_000_000,
        server="vllm",
    )
    gateway = recording(
        tmp_path / "b",
        [f"{LOOP};{STEP};schedule (vllm/x.py:5) 30", f"{LOOP};{STEP} 90", "idle (x.py:1) 5"],
        tokens=500_000,
    )
    assert main([str(rust), str(gateway), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "| function | vllm (Rust frontend) | gateway | gateway ÷ vllm (Rust frontend) |" in out
    # half the tokens for 125 samples against 100: 250 a million tokens, 2.5x
    assert "| (all) | 100 | 250 | 2.50 |" in out
    # a recursive frame counts once a sample; the same samples for half the tokens
    assert "| schedule | 30 | 60 | 2.00 |" in out
    assert "| step | 100 | 240 | 2.40 |" in out
    assert "| run_busy_loop | 100 | 240 | 2.40 |" in out
    assert "idle" not in out  # below --top 3


def test_a_recording_without_tokens_is_refused(tmp_path: Path) -> None:
    folder = recording(tmp_path / "a", [f"{LOOP} 1"], tokens=0)
    with pytest.raises(SystemExit, match="no output_tokens"):
        main([str(folder), str(folder)])
