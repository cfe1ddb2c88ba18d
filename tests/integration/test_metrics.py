"""`/metrics` read with prometheus-client's own text parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import LiveGateway


def scrape(gateway: LiveGateway) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    text = httpx.get(gateway.base_url + "/metrics", timeout=10).text
    out: dict[str, list[tuple[str, dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = [(s.name, s.labels, s.value) for s in family.samples]
    return out


def total(
    metrics: dict[str, list[tuple[str, dict[str, str], float]]],
    family: str,
    sample: str,
    **labels: str,
) -> float:
    return sum(
        v
        for name, lab, v in metrics.get(family, [])
        if name == sample and all(lab.get(k) == want for k, want in labels.items())
    )


def test_vllm_and_gateway_metrics_move(gateway: LiveGateway) -> None:
    before = scrape(gateway)
    for name in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:time_to_first_token_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "gateway_requests",
        "gateway_request_duration_seconds",
    ):
        assert name in before, f"{name} missing from /metrics"
    response = httpx.post(
        gateway.v1 + "/chat/completions",
        json={
            "model": gateway.model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 7,
            "ignore_eos": True,
        },
        timeout=120,
    )
    assert response.status_code == 200
    after = scrape(gateway)
    grown = total(after, "vllm:generation_tokens", "vllm:generation_tokens_total") - total(
        before, "vllm:generation_tokens", "vllm:generation_tokens_total"
    )
    assert grown >= 7
    route = {"route": "/v1/chat/completions", "status": "200"}
    assert (
        total(after, "gateway_requests", "gateway_requests_total", **route)
        == total(before, "gateway_requests", "gateway_requests_total", **route) + 1
    )
    assert total(
        after, "vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_count"
    ) > total(before, "vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_count")
    assert total(after, "vllm:num_requests_running", "vllm:num_requests_running") == 0


def test_metrics_are_gzipped_for_a_scraper_that_accepts_it(gateway: LiveGateway) -> None:
    """Prometheus sends `Accept-Encoding: gzip`; the same text comes back compressed."""
    url = gateway.base_url + "/metrics"
    with httpx.Client(timeout=10) as client:
        packed = client.get(url, headers={"Accept-Encoding": "gzip"})
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
    assert packed.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert packed.headers["vary"] == plain.headers["vary"] == "Accept-Encoding"
    assert int(packed.headers["content-length"]) < int(plain.headers["content-length"]) / 3
    names = {family.name for family in text_string_to_metric_families(packed.text)}
    assert names == {family.name for family in text_string_to_metric_families(plain.text)}
    assert "vllm:generation_tokens" in names and "gateway_requests" in names


def test_a_repeated_prompt_is_served_from_the_prefix_cache(gateway: LiveGateway) -> None:
    """The engine core's block hashes (app.block_hashes, the gateway's by default) find the
    blocks the first request left: vLLM counts them as prefix-cache hits."""
    words = " ".join(f"w{i * 7919 % 1000}" for i in range(400))  # not sent by any other test
    body = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": f"prefix check: {words}"}],
        "max_tokens": 1,
    }
    first = httpx.post(gateway.v1 + "/chat/completions", json=body, timeout=120)
    assert first.status_code == 200
    prompt_tokens = first.json()["usage"]["prompt_tokens"]
    assert prompt_tokens > 300
    before = scrape(gateway)
    again = httpx.post(gateway.v1 + "/chat/completions", json=body, timeout=120)
    assert again.status_code == 200
    after = scrape(gateway)
    hits = "vllm:prefix_cache_hits", "vllm:prefix_cache_hits_total"
    found = total(after, *hits) - total(before, *hits)
    assert prompt_tokens - 128 <= found < prompt_tokens  # all but the last partial block
    assert "block hashes by the gateway differ" not in gateway.log.read_text(errors="replace")
