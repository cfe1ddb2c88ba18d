"""Overload, disconnects, API keys, the access log, engine death and SIGTERM drain, on
real gateways.

Bounded in count and time, loopback only. Engine death and SIGTERM each get their own
gateway process (started together to share the boot time).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import (
    LiveGateway,
    server_env,
    start_gateway,
    stop,
)
from tests.integration.live_helpers import (
    DRAIN_FLAGS,
    HI,
    OUTLASTING_TOKENS,
    StreamReader,
    engine_cores,
    long_stream,
    metric,
    wait_for,
)

KEYS = ("key-one", "key-two")


# --- the shared gateway -----------------------------------------------------------


def test_streaming_disconnect_aborts_the_engine_request(gateway: LiveGateway) -> None:
    with httpx.stream(**long_stream(gateway, 1800)) as r:  # type: ignore[arg-type]
        lines = r.iter_lines()
        for line in lines:
            if line.startswith("data: {"):
                break
        wait_for(lambda: metric(gateway, "vllm:num_requests_running") >= 1, 5)
    elapsed = wait_for(lambda: metric(gateway, "vllm:num_requests_running") == 0, 1.0)
    assert elapsed <= 1.0


def test_non_streaming_disconnect_aborts_the_engine_request(gateway: LiveGateway) -> None:
    with pytest.raises(httpx.TimeoutException):
        httpx.post(
            gateway.v1 + "/chat/completions",
            json={"messages": HI, "max_tokens": 1800, "ignore_eos": True},
            timeout=httpx.Timeout(60, read=1.0),
        )
    wait_for(lambda: metric(gateway, "vllm:num_requests_running") == 0, 1.5)


async def _chaos(gateway: LiveGateway, total: int, concurrency: int) -> dict[str, int]:
    counts = {"ok": 0, "error": 0, "abandoned": 0, "broken": 0}
    semaphore = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency + 8)
    async with httpx.AsyncClient(base_url=gateway.v1, timeout=120, limits=limits) as client:

        async def one(i: int) -> None:
            stream = i % 2 == 0
            abandon = i % 5 == 0
            body = {
                "messages": [{"role": "user", "content": f"request {i}"}],
                "max_tokens": 8 + i % 24,
                "ignore_eos": True,
                "stream": stream,
            }
            async with semaphore:
                try:
                    if stream:
                        async with client.stream("POST", "/chat/completions", json=body) as r:
                            frames = 0
                            done = False
                            async for line in r.aiter_lines():
                                if line == "data: [DONE]":
                                    done = True
                                elif line.startswith("data: "):
                                    frames += 1
                                    if abandon and frames == 2:
                                        counts["abandoned"] += 1
                                        return
                            if r.status_code == 200 and done:
                                counts["ok"] += 1
                            elif r.status_code >= 400:
                                counts["error"] += 1
                            else:
                                counts["broken"] += 1
                    elif abandon:
                        try:
                            await asyncio.wait_for(
                                client.post("/chat/completions", json=body), 0.05
                            )
                            counts["ok"] += 1
                        except TimeoutError:
                            counts["abandoned"] += 1
                    else:
                        r = await client.post("/chat/completions", json=body)
                        data = r.json()
                        if r.status_code == 200 and data["choices"][0]["finish_reason"]:
                            counts["ok"] += 1
                        elif "error" in data:
                            counts["error"] += 1
                        else:
                            counts["broken"] += 1
                except httpx.HTTPError:
                    counts["broken"] += 1

        await asyncio.gather(*(one(i) for i in range(total)))
    return counts


def test_load_and_chaos(gateway: LiveGateway) -> None:
    start = time.monotonic()
    counts = asyncio.run(_chaos(gateway, total=300, concurrency=64))
    elapsed = time.monotonic() - start
    print(f"\nchaos: {counts} in {elapsed:.1f}s")
    assert counts["broken"] == 0
    assert counts["ok"] + counts["error"] + counts["abandoned"] == 300
    assert counts["ok"] >= 200
    recovered = wait_for(lambda: metric(gateway, "vllm:num_requests_running") == 0, 5)
    print(f"chaos: engine idle {recovered:.2f}s after the last request")
    assert httpx.get(gateway.base_url + "/health").status_code == 200


# --- a second gateway: keys, admission, SIGTERM; a third: engine death -------------


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, test_home: Path
) -> Iterator[
    tuple[tuple[subprocess.Popen[bytes], LiveGateway], tuple[subprocess.Popen[bytes], LiveGateway]]
]:
    tmp = tmp_path_factory.mktemp("reliability")
    env = server_env(test_home)
    results: dict[str, tuple[subprocess.Popen[bytes], LiveGateway]] = {}
    errors: list[BaseException] = []

    def boot(name: str, extra: list[str]) -> None:
        try:
            results[name] = start_gateway(tmp, tiny_model_dir, test_home, extra, env)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=boot, args=("guarded", [
            "--api-key", ",".join(KEYS), "--max-pending-requests", "2", *DRAIN_FLAGS,
            "--access-log", "--log-format", "json",
        ])),
        threading.Thread(target=boot, args=("mortal", ["--no-warmup"])),
    ]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if errors:
            raise errors[0]
        yield results["guarded"], results["mortal"]
    finally:
        for proc, _ in results.values():
            if proc.poll() is None:
                stop(proc)


AUTH = {"Authorization": f"Bearer {KEYS[1]}"}


def test_api_keys(pair) -> None:  # type: ignore[no-untyped-def]
    (_, guarded), _ = pair
    url = guarded.v1 + "/chat/completions"
    body = {"messages": HI, "max_tokens": 2}
    missing = httpx.post(url, json=body)
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "invalid_api_key"
    wrong = httpx.post(url, json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert httpx.get(guarded.v1 + "/models").status_code == 401
    assert httpx.post(url, json=body, headers=AUTH, timeout=60).status_code == 200
    assert httpx.get(guarded.base_url + "/health").status_code == 200  # open by default
    assert httpx.get(guarded.base_url + "/metrics").status_code == 200


def test_the_access_log_splits_the_time_to_first_token(pair) -> None:  # type: ignore[no-untyped-def]
    """A streamed chat's access-log line (JSON): when its prompt was ready, the engine core
    queued it, scheduled it and made its first token (vLLM's own timestamps), the worker's
    engine client took the token in, it reached the handler and its first bytes went out,
    in that order, within its latency."""
    (_, guarded), _ = pair
    body = {"messages": HI, "max_tokens": 4, "stream": True}
    headers = {**AUTH, "X-Request-Id": "marks-1"}
    with httpx.stream("POST", guarded.v1 + "/chat/completions", json=body, headers=headers) as r:
        assert r.status_code == 200 and r.read().endswith(b"data: [DONE]\n\n")

    def line() -> dict[str, object] | None:
        for text in guarded.log.read_text(errors="replace").splitlines():
            entry = json.loads(text) if text.startswith("{") else {}
            if entry.get("logger") == "app.access" and entry.get("request_id") == "marks-1":
                return entry
        return None

    wait_for(lambda: line() is not None, 5)
    entry = line()
    assert entry is not None
    names = ("prompt", "queued", "scheduled", "first_token", "first_output", "first_byte")
    marks = [float(entry[f"{name}_ms"]) for name in names]  # type: ignore[arg-type]
    assert 0 < marks[0] < marks[1] <= marks[2] < marks[3] < marks[4] <= marks[5], entry
    assert marks[5] < float(entry["latency_s"]) * 1000, entry  # type: ignore[arg-type]
    # when this process's engine client took the first token in (vLLM's wall clock, moved
    # to ours: a tenth of a millisecond of slack for the two clocks read apart)
    received = float(entry["received_ms"])  # type: ignore[arg-type]
    assert marks[3] < received < marks[4] + 0.1, entry
    assert entry["prompt_tokens"] and entry["completion_tokens"] == 4


def test_admission_control(pair) -> None:  # type: ignore[no-untyped-def]
    (_, guarded), _ = pair
    assert metric(guarded, "gateway_max_pending_requests") == 2
    rejected_before = metric(guarded, "gateway_rejected_requests_total")

    async def burst() -> list[tuple[int, str | None, str | None]]:
        async with httpx.AsyncClient(timeout=120) as client:

            async def one() -> tuple[int, str | None, str | None]:
                r = await client.post(
                    guarded.v1 + "/chat/completions",
                    json={"messages": HI, "max_tokens": 300, "ignore_eos": True},
                    headers=AUTH,
                )
                code = r.json()["error"]["code"] if r.status_code != 200 else None
                return r.status_code, r.headers.get("retry-after"), code

            return await asyncio.gather(*(one() for _ in range(6)))

    results = asyncio.run(burst())
    statuses = sorted(s for s, _, _ in results)
    assert statuses.count(200) >= 2
    rejected = [(s, ra, c) for s, ra, c in results if s == 503]
    assert rejected, results
    assert all(ra is not None and c == "server_overloaded" for _, ra, c in rejected)
    assert metric(guarded, "gateway_rejected_requests_total") == rejected_before + len(rejected)


def test_sigterm_drains_then_exits_zero(pair) -> None:  # type: ignore[no-untyped-def]
    (proc, guarded), _ = pair
    short_reader = StreamReader(guarded, 20, AUTH)
    long_reader = StreamReader(guarded, OUTLASTING_TOKENS, AUTH)
    outcomes = {"short": short_reader.frames, "long": long_reader.frames}
    wait_for(lambda: len(outcomes["long"]) >= 1 and len(outcomes["short"]) >= 1, 30)
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: httpx.get(guarded.base_url + "/health").status_code == 503, 2)
    refused = httpx.post(guarded.v1 + "/chat/completions", json={"messages": HI}, headers=AUTH)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "server_shutting_down"
    assert "retry-after" in refused.headers
    for reader in (short_reader, long_reader):
        reader.join(timeout=60)
    assert proc.wait(timeout=60) == 0
    short = [json.loads(f) for f in outcomes["short"][:-1]]
    assert outcomes["short"][-1] == "[DONE]"
    assert short[-1]["choices"][0]["finish_reason"] == "length"  # finished normally
    assert outcomes["long"][-1] == "[DONE]"
    last = json.loads(outcomes["long"][-2])
    assert last["error"]["code"] == "server_shutting_down"  # aborted with an error, not cut


def test_engine_death(pair) -> None:  # type: ignore[no-untyped-def]
    _, (proc, mortal) = pair
    assert "warm-up" not in mortal.log.read_text(errors="replace")  # --no-warmup
    assert metric(mortal, "vllm:request_success_total") == 0
    reader = StreamReader(mortal, 1900)
    frames = reader.frames
    wait_for(lambda: len(frames) >= 1, 30)
    cores = engine_cores(proc.pid)
    assert cores, "engine core process not found"
    killed_at = time.monotonic()
    for core in cores:
        core.kill()
    wait_for(lambda: httpx.get(mortal.base_url + "/health", timeout=2).status_code == 503, 1.0)
    unhealthy_after = time.monotonic() - killed_at
    print(f"\nengine death: /health 503 after {unhealthy_after:.2f}s")
    reader.join(timeout=30)
    assert frames[-1] == "[DONE]"
    assert "error" in json.loads(frames[-2])
    code = proc.wait(timeout=30)
    print(f"engine death: process exited {code} after {time.monotonic() - killed_at:.2f}s")
    assert code == 3
