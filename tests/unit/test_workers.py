"""HTTP workers: how many, the launcher's arguments, and exit statuses."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from app.model_source import ModelSource
from app.settings import Settings
from app.workers import (
    WorkerSpec,
    auto_worker_count,
    exit_status,
    fork_tokenizer,
    launcher_args,
    signals_seen,
    stop_status,
)


@pytest.mark.parametrize(
    ("device", "cores", "expected"),
    [
        ("cpu", 64, 1),  # the CPU engine needs the cores itself
        ("cuda", 2, 1),
        ("cuda", 4, 1),
        ("cuda", 8, 2),
        ("cuda", 16, 2),  # the H200 hosts: two beat four at concurrency 64
        ("cuda", 128, 2),
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
    # crosses into the spawned workers; its admission count and "serving" flag are shared
    spec = args.gateway
    assert isinstance(spec, WorkerSpec)
    child = multiprocessing.get_context("spawn").Process(target=_worker_sees, args=(spec,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert spec.serving.is_set() and spec.pending.value == 1
    assert not spec.pending.enter(1)  # the child's request counts against the limit here


def _worker_sees(spec: WorkerSpec) -> None:
    """In a spawned process: the spec arrived whole; admit one request, say "serving"."""
    assert spec.settings.port == 9100 and spec.source.requested == "Qwen/Qwen3-0.6B"
    assert spec.pending.enter(1)
    spec.serving.set()


@pytest.mark.parametrize(
    ("signals", "serving", "status"),
    [
        ([signal.SIGINT], True, 130),
        ([signal.SIGINT], False, 130),
        ([signal.SIGTERM], False, 143),  # during start-up
        ([signal.SIGTERM], True, 0),  # after the workers' drain
        ([signal.SIGTERM, signal.SIGINT], True, 130),  # Ctrl-C during the drain
        ([], True, 0),
    ],
)
def test_stop_status_is_one_process_gateways(
    signals: list[int], serving: bool, status: int
) -> None:
    """With workers the gateway exited 0 on any signal (seen on the H200, where they are
    the default); now as the one-process gateway (docs/reliability.md, exit statuses)."""
    assert stop_status(signals, serving=serving) == status


def test_signals_seen_names_the_signal_behind_a_bare_system_exit() -> None:
    """vLLM's launcher turns SIGTERM and SIGINT into a bare SystemExit; which one it was
    comes from the wake-up fd."""

    def launcher_handler(signum: int, frame: object) -> None:
        raise SystemExit

    previous = signal.signal(signal.SIGUSR1, launcher_handler)
    try:
        with signals_seen() as seen:
            with pytest.raises(SystemExit):
                os.kill(os.getpid(), signal.SIGUSR1)
                time.sleep(5)  # the handler runs at the next bytecode
            assert seen() == [signal.SIGUSR1]
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_the_fork_server_loads_the_tokenizer_the_workers_will_ask_for(tiny_dir) -> None:  # type: ignore[no-untyped-def]
    from app.main import gateway_engine_args

    source = ModelSource(path=str(tiny_dir), requested="tiny")
    key = fork_tokenizer(gateway_engine_args(Settings(), source))
    assert key is not None
    assert (key.tokenizer, key.runner_type, key.copies) == (str(tiny_dir), "generate", 2)
    assert not key.fast
    fast = fork_tokenizer(gateway_engine_args(Settings(), source), fast=True)
    assert fast is not None and fast.fast
    # where the model config can't be built, the workers load their own
    assert fork_tokenizer(object()) is None
