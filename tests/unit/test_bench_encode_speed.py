"""bench.encode_speed: prompts fitted as the benchmark makes them, every way checked and timed."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from app import fast_encode
from bench.encode_speed import main, time_ways, ways
from bench.first_text import prompts_from


def test_every_way_gives_the_same_ids(tokenizer: Any) -> None:
    rng = random.Random(1)
    (text,) = prompts_from(tokenizer, 1500, 1, rng)
    named = ways(tokenizer)
    assert "fastokens" in named and fast_encode.fast_encoder(tokenizer) is None  # not attached
    results = [way(text) for way in named.values()]
    assert all(ids == results[0] for ids in results)
    assert results[0] == tokenizer.encode(text, add_special_tokens=False)


def test_time_ways_refuses_ways_that_disagree() -> None:
    named = {"one": lambda text: [1], "two": lambda text: [2]}
    with pytest.raises(AssertionError, match="disagree"):
        time_ways(named, ["text"], repeats=1)
    timed = time_ways({"one": lambda text: [1]}, ["a", "b"], repeats=2)
    assert len(timed["one"]) == 2 and all(value >= 0 for value in timed["one"])


def test_main_prints_one_json_report(tiny_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--model", str(tiny_dir), "--tokens", "200", "--texts", "3", "--repeats", "1"])
    report = json.loads(capsys.readouterr().out)
    assert report["cpus"] >= 1
    timing = report["lengths"]["200"]
    assert timing["chars_p50"] > 0
    assert set(timing["ms_p50_per_repeat"]) == {
        "hf_encode",
        "encode_sync",
        "pieces_2",
        "pieces_4",
        "pieces_8",
        "fastokens",
    }
    wave = timing["wave_mean_ready_ms"]
    assert set(wave) == {"one_after_another", "batches"}
    assert all(len(values) == 1 and values[0] > 0 for values in wave.values())
