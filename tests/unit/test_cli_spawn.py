"""`serve` starts vLLM's engine core with `spawn`, as `vllm serve` does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app import cli

VAR = "VLLM_WORKER_MULTIPROC_METHOD"


def _serve_and_see_method(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str | None:
    """Run `serve` up to the point where the engine would start; the start method then."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    seen: dict[str, str | None] = {}

    def run_server(settings: Any, source: Any = None) -> int:
        seen["method"] = os.environ.get(VAR)
        return 0

    monkeypatch.setattr(cli, "run_server", run_server)
    monkeypatch.setattr(cli, "configure_logging", lambda *args: None)
    assert cli.serve([str(model), "--port", "0"]) == 0
    return seen["method"]


def test_serve_spawns_the_engine_core(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, "unset")  # restored after the test
    monkeypatch.delenv(VAR)
    assert _serve_and_see_method(monkeypatch, tmp_path) == "spawn"


def test_a_users_start_method_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, "fork")
    assert _serve_and_see_method(monkeypatch, tmp_path) == "fork"


def test_use_spawn_only_fills_a_missing_value() -> None:
    environ: dict[str, str] = {}
    cli.use_spawn(environ)
    assert environ == {VAR: "spawn"}
    environ[VAR] = "forkserver"
    cli.use_spawn(environ)
    assert environ == {VAR: "forkserver"}
