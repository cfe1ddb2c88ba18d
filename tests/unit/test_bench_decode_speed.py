"""bench.decode_speed: vLLM's detokenizer and the gateway's fed the same ids, checked to
agree, timed."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bench.decode_speed import main, own_stream, time_both, vllm_stream


def test_both_give_the_same_text_token_by_token(tokenizer: Any) -> None:
    rng = random.Random(2)
    prompt = tokenizer.encode("Said: 于是乎 café\n", add_special_tokens=False)
    output = [rng.randrange(len(tokenizer)) for _ in range(200)]
    output += tokenizer.encode("于是乎 ☕", add_special_tokens=False)
    theirs, ours = vllm_stream(tokenizer, prompt), own_stream(tokenizer)(prompt)
    texts = [(theirs(i), ours(i)) for i in output]
    assert all(a == b for a, b in texts)
    assert "".join(a for a, _ in texts).endswith("于是乎 ☕")


def test_time_both_refuses_texts_that_differ(tokenizer: Any) -> None:
    with pytest.raises(AssertionError, match="different texts"):
        time_both(tokenizer, lambda prompt: lambda i: "x", [[1, 2]], [[3, 4]])
    timed = time_both(tokenizer, own_stream(tokenizer), [[1, 2]], [[3, 4]])
    assert set(timed) == {"vllm", "gateway"}


def test_main_prints_one_json_report(tiny_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--model", str(tiny_dir), "--prompt-tokens", "64", "--output-tokens", "8"])
    report = json.loads(capsys.readouterr().out)
    assert report["cpus"] >= 1
    timing = report["prompt_tokens"]["64"]
    assert set(timing) == {"vllm", "gateway"}
    for values in timing.values():
        assert values["first_token_ms_p50"] > 0 and values["later_token_us_p50"] > 0
