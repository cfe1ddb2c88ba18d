"""Helpers for tests against a live gateway: requests that must succeed, their SSE
frames, its metrics, polling, streams read in a background thread."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import LiveGateway

HI = [{"role": "user", "content": "hi"}]

# A stream that outlasts a SIGTERM drain window (DRAIN_FLAGS): one stream of the tiny model
# made 450-640 tokens/s on the 2-core box, so 4,000 tokens take 6-9 s against a 2 s drain.
# 1,900 tokens (3-4 s) against 3 s once finished inside the window on an idle machine.
OUTLASTING_TOKENS = 4000
DRAIN_FLAGS = ["--max-model-len", "4096", "--drain-timeout", "2"]  # 4096: the tiny model's limit


def post_ok(gateway: LiveGateway, path: str, payload: dict[str, Any]) -> dict[str, Any]:
    """POST `payload` to `/v1<path>`; the 200 response's JSON body."""
    r = httpx.post(gateway.v1 + path, json=payload, timeout=120)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def sse_frames(gateway: LiveGateway, path: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """POST `payload` streamed to `/v1<path>`; its frames' JSON, `[DONE]` checked and left out."""
    with httpx.stream(
        "POST", gateway.v1 + path, json={**payload, "stream": True}, timeout=120
    ) as r:
        assert r.status_code == 200, r.read()
        lines = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def metric(
    gateway: LiveGateway,
    name: str,
    headers: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> float:
    """The sum of `name`'s samples on /metrics (those with exactly `labels`, when given)."""
    text = httpx.get(gateway.base_url + "/metrics", headers=headers, timeout=10).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and (labels is None or sample.labels == labels):
                total += sample.value
    return total


def wait_for(predicate, timeout: float, step: float = 0.05) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout}s")


def long_stream(
    gateway: LiveGateway, max_tokens: int, headers: dict[str, str] | None = None
) -> dict[str, object]:
    return {
        "method": "POST",
        "url": gateway.v1 + "/chat/completions",
        "json": {"messages": HI, "max_tokens": max_tokens, "ignore_eos": True, "stream": True},
        "headers": headers or {},
        "timeout": 120,
    }


class StreamReader:
    """One streaming request read in a background thread; `frames` holds its `data:`
    payloads as they arrive (`[DONE]` included)."""

    def __init__(
        self, gateway: LiveGateway, max_tokens: int, headers: dict[str, str] | None = None
    ) -> None:
        self.frames: list[str] = []
        self._request = long_stream(gateway, max_tokens, headers)
        self._thread = threading.Thread(target=self._read)
        self._thread.start()

    def _read(self) -> None:
        with httpx.stream(**self._request) as r:  # type: ignore[arg-type]
            for line in r.iter_lines():
                if line.startswith("data: "):
                    self.frames.append(line[6:])

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=timeout)


def descendants(proc: Any) -> list[psutil.Process]:
    """Every process under `proc` (a Popen)."""
    return list(psutil.Process(proc.pid).children(recursive=True))


def named(procs: list[psutil.Process], needle: str) -> list[psutil.Process]:
    """The processes whose command line holds `needle`."""
    found = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            if needle in " ".join(p.cmdline()):
                found.append(p)
    return found


def engine_cores(pid: int) -> list[psutil.Process]:
    """vLLM's engine-core processes among `pid`'s descendants."""
    found = []
    for p in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "EngineCore" in p.name() or "EngineCore" in " ".join(p.cmdline()):
                found.append(p)
    return found
