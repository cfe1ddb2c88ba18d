"""bench.encode_turns: a growing conversation's prompts, timed three ways."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from bench.encode_turns import conversation_prompts, main


def test_each_turn_extends_the_last(tokenizer: Any) -> None:
    prompts = conversation_prompts(tokenizer, turns=3, tokens=120, seed=1)
    assert len(prompts) == 3
    opener = "<|im_start|>assistant\n"
    for earlier, later in itertools.pairwise(prompts):
        assert earlier.endswith(opener) and later.startswith(earlier)


def test_main_prints_every_way_per_turn(tiny_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--model", str(tiny_dir), "--turns", "3", "--tokens", "400", "--repeats", "1"])
    report = json.loads(capsys.readouterr().out)
    assert len(report["prompt_chars"]) == 3 and report["prompt_chars"] == sorted(
        report["prompt_chars"]
    )
    for way in ("remembered", "afresh", "whole"):
        assert len(report["ms_p50_per_turn"][way]) == 3
        assert report["ms_total"][way] > 0
