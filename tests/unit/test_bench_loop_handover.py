"""bench.loop_handover: every variant measured, one JSON line each."""

from __future__ import annotations

import json

import pytest

from bench.loop_handover import VARIANTS, main


def test_each_variant_reports_the_loops_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--steps", "20", "--repeats", "1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["messages"], r["inline"]) for r in rows] == list(VARIANTS)
    assert all(r["step_ms_median"] > 0 and r["step_ms_mean"] > 0 for r in rows)
