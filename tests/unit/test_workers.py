"""HTTP workers: how many, the launcher's arguments, and exit statuses."""

from __future__ import annotations

import pickle

import pytest

from app.model_source import ModelSource
from app.settings import Settings
from app.workers import WorkerSpec, auto_worker_count, exit_status, launcher_args


@pytest.mark.parametrize(
    ("device", "cores", "expected"),
    [
        ("cpu", 64, 1),  # the CPU engine needs the cores itself
        ("cuda", 2, 1),
        ("cuda", 8, 2),
        ("cuda", 16, 4),
        ("cuda", 128, 4),
        ("cuda", None, 1),
    ],
)
def test_auto_worker_count(device: str, cores: int | None, expected: int) -> None:
    assert auto_worker_count(device, cores) == expected


def test_exit_status_keeps_a_dead_workers_code() -> None:
    assert exit_status("Process ApiServer_1 (PID: 7) died with exit code 3", 9) == 3
    assert exit_status("Engine core process EngineCore_DP0 died unexpectedly.", 9) == 9
    assert exit_status("Process ApiServer_0 (PID: 7) died with exit code -9", 9) == 9


def test_launcher_args_carry_engine_options_address_and_spec(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(
        host="127.0.0.1",
        port=9100,
        api_server_count=3,
        drain_timeout=30,
        engine_overrides={"max_model_len": 6384, "enforce_eager": True, "max_num_seqs": 8},
    )
    source = ModelSource(path=str(tmp_path), requested="Qwen/Qwen3-0.6B")
    args = launcher_args(settings, source)
    assert (args.host, args.port, args.api_server_count) == ("127.0.0.1", 9100, 3)
    assert (args.model, args.max_model_len, args.enforce_eager) == (str(tmp_path), 6384, True)
    assert args.max_num_seqs == 8
    assert args.served_model_name == ["Qwen/Qwen3-0.6B"]
    assert args.shutdown_timeout >= 40  # the launcher waits out each worker's drain
    assert not args.headless
    spec = pickle.loads(pickle.dumps(args.gateway))  # crosses into spawned processes
    assert isinstance(spec, WorkerSpec)
    assert spec.settings.port == 9100
    assert spec.source == source
