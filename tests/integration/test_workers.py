"""`--api-server-count 2`: two HTTP worker processes sharing one real engine core.

Checks that both workers answer, that `/metrics` from either one sums both (Prometheus
multiprocess mode), and that SIGTERM drains every worker and leaves no process behind.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from openai import AsyncOpenAI
from prometheus_client.mmap_dict import MmapedDict

from bench.connection_split import burst, http_workers
from tests.deploy_files import dashboard_metric_names
from tests.integration.conftest import (
    LiveGateway,
    launch_gateway,
    server_env,
    start_gateway,
    stop,
)
from tests.integration.live_helpers import (
    DRAIN_FLAGS,
    HI,
    OUTLASTING_TOKENS,
    StreamReader,
    descendants,
    engine_cores,
    metric,
    named,
    wait_for,
)
from tests.integration.test_dashboard import exported_series
from tests.integration.test_normalization import prompt_tokens

CHAT = "gateway_requests_total"
ITL = "vllm:inter_token_latency_seconds"


@pytest.fixture(scope="module")
def workers(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, test_home: Path
) -> Iterator[tuple[subprocess.Popen[bytes], LiveGateway, Path]]:
    tmp = tmp_path_factory.mktemp("workers")
    prom_dir = tmp / "prometheus"
    prom_dir.mkdir()
    env = server_env(test_home)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(prom_dir)  # so the test can see who wrote what
    # fastokens on, as with a GPU: the fork server preloads it for the workers too
    # and the system message left out, a setting every forked worker must see
    flags = ["--api-server-count", "2", "--fast-tokenizer", "--no-fill-system-message"]
    flags += DRAIN_FLAGS
    proc, live = start_gateway(tmp, tiny_model_dir, test_home, flags, env)
    # the first worker to finish its start-up answers the health check while the other may
    # still be warming up (in a CI run 123 ms apart): wait for both
    started = "Application startup complete."
    try:
        wait_for(lambda: live.log.read_text(errors="replace").count(started) == 2, timeout=60)
        yield proc, live, prom_dir
    finally:
        stop(proc)  # normally test_sigterm_drains_every_worker has stopped it already


def chat_requests_by_process(prom_dir: Path) -> dict[str, float]:
    """Chat requests each worker counted, from its own Prometheus multiprocess file."""
    out: dict[str, float] = {}
    for db in prom_dir.glob("counter_*.db"):
        total = 0.0
        for key, value, *_ in MmapedDict.read_all_values_from_file(str(db)):
            metric, _sample, labels, _help = json.loads(key)
            if metric == "gateway_requests" and labels.get("route") == "/v1/chat/completions":
                total += value
        out[db.stem.split("_", 1)[1]] = total
    return out


def test_two_workers_one_engine(workers) -> None:  # type: ignore[no-untyped-def]
    proc, live, _ = workers
    family = descendants(proc)
    assert len(named(family, "APIServer")) == 2
    assert len(named(family, "EngineCore")) == 1
    # forked (the default `--worker-start forkserver`) by one fork server, the gateway's child
    servers = {worker.parent() for worker in named(family, "APIServer")}
    assert len(servers) == 1, servers
    server = servers.pop()
    assert server is not None and server.ppid() == proc.pid
    assert "multiprocessing.forkserver" in " ".join(server.cmdline())
    log = live.log.read_text(errors="replace")
    # each worker's engine client reads vLLM's settings once from then on, as the core does
    assert log.count("vllm_settings=cached") == 2
    # and writes vLLM's inter-token latencies once a step (app.step_histogram)
    assert log.count("inter_token_latency=per step") == 2
    # and serves with the tokenizer the fork server loaded once for all (app.shared_tokenizer)
    assert log.count("tokenizer=the engine's, from the fork server") == 2
    assert log.count("prompts encoded by fastokens (loaded by the fork server)") == 2


def test_each_worker_warms_up_and_only_the_engine_counts_it(workers) -> None:  # type: ignore[no-untyped-def]
    _, live, _ = workers
    assert live.log.read_text(errors="replace").count("warm-up: 34 requests") == 2
    # before any client request: the engine served 2 x 34, the gateway answered no chat
    assert metric(live, "vllm:request_success_total") == 68
    text = httpx.get(live.base_url + "/metrics").text
    assert 'route="/v1/chat/completions"' not in text


def test_requests_spread_over_workers_and_metrics_sum(workers) -> None:  # type: ignore[no-untyped-def]
    _, live, prom_dir = workers
    before = metric(live, CHAT)
    latencies = metric(live, ITL + "_count")

    async def burst() -> list[str]:
        async def one(i: int) -> str:
            # a client (so a connection) per request: the kernel hands them to both workers
            async with AsyncOpenAI(base_url=live.v1, api_key="x", max_retries=0) as client:
                reply = await client.chat.completions.create(
                    model=live.model, messages=HI, max_tokens=4, extra_body={"ignore_eos": True}
                )
                return reply.choices[0].finish_reason

        return await asyncio.gather(*(one(i) for i in range(24)))

    assert asyncio.run(burst()) == ["length"] * 24
    served = chat_requests_by_process(prom_dir)
    assert len([n for n in served.values() if n > 0]) == 2, served  # both workers served
    assert sum(served.values()) >= 24
    # every scrape, whichever worker answers it, counts all requests (plus the scrapes)
    totals = []
    for _ in range(6):
        with httpx.Client() as fresh:  # new connection, maybe another worker
            text = fresh.get(live.base_url + "/metrics").text
        totals.append(
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith(CHAT + "{") and 'route="/v1/chat/completions"' in line
            )
        )
        assert "vllm:generation_tokens_total" in text
    assert all(t == totals[0] for t in totals), totals
    assert metric(live, CHAT) >= before + 24
    # 4 tokens a request, so 3 inter-token latencies each, whichever worker wrote them
    assert metric(live, ITL + "_count") == latencies + 24 * 3
    assert metric(live, ITL + "_sum") > 0


def test_a_burst_of_connections_lands_on_both_workers(workers) -> None:  # type: ignore[no-untyped-def]
    """Clients such as `vllm bench serve` open their connections at once; each worker
    listens on a socket of its own (app.reuse_port) and the kernel deals the connections
    out, so not the first worker awake all of them (on this 2-core box, with one shared
    socket, one worker took 15 of 16 while the scheduler kept the other waiting)."""
    proc, live, _ = workers
    log = live.log.read_text(errors="replace")
    assert log.count("listens on a socket of its own (SO_REUSEPORT)") == 2
    assert "one per turn of its event loop" not in log
    by_index = http_workers(proc.pid)
    assert set(by_index) == {0, 1}
    counts = asyncio.run(burst(int(live.base_url.rsplit(":", 1)[1]), 24, by_index))
    # every connection held by a worker; a fair hash gives each 12 +- 2.4, fewer than 3
    # has p < 1e-4
    assert sum(counts) == 24 and min(counts) >= 3, counts


def test_every_dashboard_series_is_exported_with_workers(workers) -> None:  # type: ignore[no-untyped-def]
    """Prometheus' multiprocess collector shows no family without samples: the error and
    normalization counters were missing from /metrics until their first increment (seen on
    the H200, where workers are the default); their common labels now start at 0."""
    _, live, _ = workers
    missing = sorted(dashboard_metric_names() - exported_series(live))
    assert not missing, f"the dashboard queries series /metrics does not have: {missing}"


def test_no_system_message_is_added_when_filling_is_off(workers) -> None:  # type: ignore[no-untyped-def]
    _, live, _ = workers
    user = [{"role": "user", "content": "hello"}]
    empty_system = [{"role": "system", "content": ""}, *user]
    for _ in range(4):  # a fresh connection each, so both workers are likely asked
        without = prompt_tokens(live, messages=user)
        with_empty = prompt_tokens(live, messages=empty_system)
        assert without < with_empty, (without, with_empty)


def test_sigterm_drains_every_worker(workers) -> None:  # type: ignore[no-untyped-def]
    proc, live, _ = workers
    family = descendants(proc)
    readers = {"short": StreamReader(live, 20), "long": StreamReader(live, OUTLASTING_TOKENS)}
    frames = {name: reader.frames for name, reader in readers.items()}
    wait_for(lambda: all(frames.values()), 30)
    proc.send_signal(signal.SIGTERM)
    for reader in readers.values():
        reader.join(timeout=60)
    assert proc.wait(timeout=60) == 0
    assert frames["short"][-1] == "[DONE]"
    assert json.loads(frames["short"][-2])["choices"][0]["finish_reason"] == "length"
    assert frames["long"][-1] == "[DONE]"
    assert json.loads(frames["long"][-2])["error"]["code"] == "server_shutting_down"
    _, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, f"left behind: {[p.pid for p in alive]}"


def test_sigterm_during_start_up_exits_143_with_workers(
    tmp_path: Path, tiny_model_dir: Path, test_home: Path
) -> None:
    """As one process (test_reliability): stopped at once, 143, not 0 (the launcher's
    SystemExit hides the signal; the gateway reads it from the wake-up fd)."""
    proc, live = launch_gateway(
        tmp_path, tiny_model_dir, test_home, ["--api-server-count", "2"], server_env(test_home)
    )
    try:
        wait_for(lambda: bool(engine_cores(proc.pid)), 120)  # start-up under way
    except BaseException:
        stop(proc, timeout=10)
        raise
    cores = engine_cores(proc.pid)
    assert _status_after(proc, signal.SIGTERM, 120) == 128 + signal.SIGTERM
    assert "SIGTERM during start-up: stopping" in live.log.read_text(errors="replace")
    _, alive = psutil.wait_procs(cores, timeout=30)
    assert not alive, "engine core left running"


def test_sigint_stops_the_workers_with_130(
    tmp_path: Path, tiny_model_dir: Path, test_home: Path
) -> None:
    """Ctrl-C after start-up: 130 as one process gives (it was 0 with workers)."""
    proc, _ = start_gateway(
        tmp_path, tiny_model_dir, test_home, ["--api-server-count", "2"], server_env(test_home)
    )
    family = descendants(proc)
    assert _status_after(proc, signal.SIGINT, 60) == 128 + signal.SIGINT
    _, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, f"left behind: {[p.pid for p in alive]}"


def _status_after(proc: subprocess.Popen[bytes], sig: int, timeout: float) -> int:
    """Send `sig` and return the exit status (killed if it outlives `timeout`)."""
    try:
        proc.send_signal(sig)
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            stop(proc, timeout=10)
