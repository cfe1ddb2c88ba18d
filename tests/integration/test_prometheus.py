"""A real Prometheus server scrapes the live gateway; its HTTP API returns our series.

Prometheus comes from Debian's `prometheus` package (.ci/run installs it). Without it the
test skips, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.deploy_files import dashboard_exprs, find_tool, grafana_to_promql
from tests.integration.conftest import LiveGateway, free_port, stop, wait_ok

DEADLINE = 60.0  # seconds for Prometheus to start and to see the first samples


@dataclass(frozen=True)
class PrometheusServer:
    url: str
    log: Path

    def query(self, promql: str) -> dict[str, Any]:
        response = httpx.get(self.url + "/api/v1/query", params={"query": promql}, timeout=10)
        body: dict[str, Any] = response.json()
        assert response.status_code == 200 and body["status"] == "success", body
        return body

    def series(self, promql: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.query(promql)["data"]["result"]
        return result

    def wait_for(self, promql: str, timeout: float = DEADLINE) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            result = self.series(promql)
            if result or time.monotonic() > deadline:
                return result
            time.sleep(0.5)


def prometheus_config(target: str) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {
                "job_name": "vllm-gateway",
                "metrics_path": "/metrics",
                "static_configs": [{"targets": [target]}],
            }
        ],
    }


@pytest.fixture(scope="module")
def prometheus(
    gateway: LiveGateway, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusServer]:
    binary = find_tool("prometheus", ".ci/run installs it: apt-get install prometheus")
    tmp = tmp_path_factory.mktemp("prometheus")
    config = tmp / "prometheus.yml"
    config.write_text(json.dumps(prometheus_config(urlsplit(gateway.base_url).netloc)))
    port = free_port()
    log = tmp / "prometheus.log"
    cmd = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=1h",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ok(url + "/-/ready", proc, log, DEADLINE, what="prometheus")
        yield PrometheusServer(url, log)
    finally:
        stop(proc, timeout=15)


def chat(gateway: LiveGateway) -> None:
    response = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"model": gateway.model, "messages": [{"role": "user", "content": "hi"}],
              "max_tokens": 4, "ignore_eos": True},
        timeout=120,
    )  # fmt: skip
    assert response.status_code == 200


def test_prometheus_scrapes_vllm_and_gateway_series(
    prometheus: PrometheusServer, gateway: LiveGateway
) -> None:
    up = prometheus.wait_for('up{job="vllm-gateway"} == 1')
    assert up, f"the gateway was never scraped:\n{prometheus.log.read_text()[-3000:]}"
    chat(gateway)
    generated = prometheus.wait_for("vllm:generation_tokens_total > 0")
    assert generated and float(generated[0]["value"][1]) >= 4
    assert generated[0]["metric"]["job"] == "vllm-gateway"
    assert prometheus.wait_for("vllm:num_requests_running")
    assert prometheus.wait_for("vllm:kv_cache_usage_perc")
    answered = prometheus.wait_for(
        'gateway_requests_total{route="/v1/chat/completions",status="200"} > 0'
    )
    assert answered and float(answered[0]["value"][1]) >= 1
    assert prometheus.wait_for('gateway_normalizations_total{kind="system_message"}')


def test_prometheus_answers_every_dashboard_query(
    prometheus: PrometheusServer, gateway: LiveGateway
) -> None:
    """Each panel's PromQL runs on the real server; the gauges and counters have data."""
    assert prometheus.wait_for("vllm:generation_tokens_total")
    results = {expr: prometheus.query(grafana_to_promql(expr)) for expr in dashboard_exprs()}
    assert all(body["status"] == "success" for body in results.values())
    for expr in (
        'sum(vllm:num_requests_running{model_name=~"$model_name"})',
        "sum(gateway_requests_in_flight)",
    ):
        assert results[expr]["data"]["result"], expr
