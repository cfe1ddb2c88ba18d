"""The gateway's process set up as `vllm serve` sets up its own, on a real gateway: many
connections at once under a low open-files limit, and a clean stop on SIGINT (Ctrl-C);
and serve_app's SIGINT exit status however the process inherited SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.process_setup import FD_TARGET
from tests.integration.conftest import (
    REPO,
    LiveGateway,
    free_port,
    server_env,
    start_gateway,
    stop,
    wait_healthy,
)
from tests.integration.live_helpers import engine_cores

LOW_SOFT_LIMIT = 128
CONNECTIONS = 300  # each holds a descriptor in the gateway: more than LOW_SOFT_LIMIT


@pytest.fixture(scope="module")
def gateway_at_low_limit(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, test_home: Path
) -> Iterator[tuple[subprocess.Popen[bytes], LiveGateway]]:
    """A gateway started with `ulimit -Sn 128` and, as `make run` starts one, no size for
    vLLM's CPU KV cache; its engine core with a 1 ms switch interval."""
    tmp = tmp_path_factory.mktemp("process")
    env = server_env(test_home)
    env.pop("VLLM_CPU_KVCACHE_SPACE")
    flags = ["--engine-switch-interval-ms", "1"]
    proc, live = start_gateway(tmp, tiny_model_dir, test_home, flags, env, nofile=LOW_SOFT_LIMIT)
    try:
        yield proc, live
    finally:
        if proc.poll() is None:
            stop(proc)


def test_the_soft_open_files_limit_is_raised(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    proc, _ = gateway_at_low_limit
    soft, hard = psutil.Process(proc.pid).rlimit(psutil.RLIMIT_NOFILE)
    assert soft == (FD_TARGET if hard == resource.RLIM_INFINITY else min(FD_TARGET, hard))


def test_many_connections_at_once_each_get_an_answer(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """300 clients connected at the same time, each asking /health on its own connection."""
    _, live = gateway_at_low_limit
    port = int(live.base_url.rsplit(":", 1)[1])

    async def run() -> list[str]:
        opened = await asyncio.gather(
            *(asyncio.open_connection("127.0.0.1", port) for _ in range(CONNECTIONS))
        )
        try:
            for _, writer in opened:
                writer.write(b"GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n")
            lines = await asyncio.gather(
                *(asyncio.wait_for(reader.readline(), 30) for reader, _ in opened)
            )
        finally:
            for _, writer in opened:
                writer.close()
        return [line.decode(errors="replace").strip() for line in lines]

    statuses = asyncio.run(run())
    refused = [s for s in statuses if not s.startswith("HTTP/1.1 200")]
    assert not refused, f"{len(refused)} of {CONNECTIONS} got no answer: {refused[:3]}"


def test_an_unsized_cpu_kv_cache_is_sized_for_the_model(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """vLLM alone would take 0.92 of RAM (22 GiB on a 24 GiB box) for the tiny model."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the engine runs on the GPU here: there is no CPU KV cache to size")
    proc, live = gateway_at_low_limit
    text = httpx.get(live.base_url + "/metrics", timeout=10).text
    labels = [
        sample.labels
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "vllm:cache_config_info"
    ]
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert labels and labels[0]["kv_cache_memory_bytes"] == str(min(4 << 30, ram // 4))
    rss = 0
    for child in psutil.Process(proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            rss += child.memory_info().rss
    assert rss < min(8 << 30, ram // 2), f"{rss / (1 << 30):.1f} GiB in the engine processes"
    assert "CPU KV cache: " in live.log.read_text()


def test_on_a_cpu_prompts_are_encoded_by_tokenizers_unless_asked(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """`--fast-tokenizer` unset: fastokens stays off on a CPU (app.fast_encode.choose)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the engine runs on the GPU here: fastokens is on by default")
    _, live = gateway_at_low_limit
    log = live.log.read_text(errors="replace")
    assert "prompts encoded by tokenizers (auto: fastokens off on CPU" in log


def logged(live: LiveGateway, pattern: str) -> str:
    """What the gateway's log has for `pattern`'s group (the first line that has it)."""
    found = re.search(pattern, live.log.read_text(errors="replace"))
    assert found, f"nothing in the log for {pattern!r}"
    return found.group(1).strip()


def test_it_serves_with_the_engines_own_tokenizer(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """app.engine.engine_tokenizer: no second copy of the tokenizer beside vLLM's."""
    _, live = gateway_at_low_limit
    assert logged(live, r"engine ready: .* tokenizer=(.+) first_tokens=") == "the engine's"


def test_its_engine_client_hands_out_first_tokens_first(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """app.first_tokens: applied to the real AsyncLLM's output processor."""
    _, live = gateway_at_low_limit
    assert logged(live, r"engine ready: .* first_tokens=(.+)") == "first"


def test_its_engine_core_runs_with_the_switch_interval_asked_for(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """app.engine_core_setup: the engine core process vLLM started set it before its loop."""
    _, live = gateway_at_low_limit
    pattern = r"\(EngineCore pid=\d+\).* engine loop: interpreter-lock switch interval (\S+) ms"
    assert logged(live, pattern) == "1"


def test_the_heap_is_trimmed_once_it_is_ready(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """app.heap: glibc's free pages given back after start-up, the RSS logged."""
    _, live = gateway_at_low_limit
    found = re.search(
        r"start-up heap trimmed: RSS (\d+) -> (\d+) MiB", live.log.read_text(errors="replace")
    )
    assert found, "no trim logged"
    before, after = int(found.group(1)), int(found.group(2))
    assert 0 < after <= before + 4  # other threads may allocate between the two reads


def test_sigint_stops_it_cleanly(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C: exit status 130, no traceback, the engine core gone (runs last here)."""
    proc, live = gateway_at_low_limit
    cores = engine_cores(proc.pid)
    assert cores
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 128 + signal.SIGINT
    log = live.log.read_text(errors="replace")
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-3000:]
    _, alive = psutil.wait_procs(cores, timeout=30)
    assert not alive, "engine core left running"


# serve_app alone on real uvicorn: its exit status needs no engine
BARE_SERVER = """
import sys
from fastapi import FastAPI
from app.lifecycle import Lifecycle
from app.server import serve_app
from app.settings import Settings

app = FastAPI()
app.state.lifecycle = Lifecycle(max_pending=8)

@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "healthy"}

sys.exit(serve_app(app, Settings(host="127.0.0.1", port=int(sys.argv[1]))))
"""


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_sigint_exits_130_however_sigint_was_inherited(inherited: str, tmp_path: Path) -> None:
    """130 also when the process started with SIGINT ignored (`&` in a non-interactive
    shell: uvicorn re-raises the signal into that disposition after its shutdown, which
    once left a background CI run's gateway exiting 0)."""
    port = free_port()
    log = tmp_path / "server.log"
    cmd = [sys.executable, "-c", BARE_SERVER, str(port)]
    if inherited == "ignored":  # the shell execs python: the pid stays the server's
        cmd = ["bash", "-c", 'trap "" INT && exec "$0" "$@"', *cmd]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log, 60)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 128 + signal.SIGINT, log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_its_engine_core_hashes_the_prefix_cache_blocks_itself(gateway_at_low_limit) -> None:  # type: ignore[no-untyped-def]
    """app.block_hashes, on by default, installed in the engine core vLLM started."""
    _, live = gateway_at_low_limit
    assert (
        logged(live, r"\(EngineCore pid=\d+\).* prefix-cache block hashes by (.+)") == "the gateway"
    )
    assert "block hashes by the gateway differ" not in live.log.read_text(errors="replace")
