"""Every metric the Grafana dashboard queries is one the live gateway exports."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy_files import dashboard_metric_names
from tests.integration.conftest import LiveGateway

# The series names Prometheus stores for a family of each type.
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("", "_sum", "_count", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "stateset": ("",),
    "unknown": ("",),
}


def exported_series(gateway: LiveGateway) -> set[str]:
    """Series names /metrics has or will have, from its families (also the still empty
    ones, e.g. an error counter before the first error) and its samples."""
    text = httpx.get(gateway.base_url + "/metrics", timeout=10).text
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
        names.update(sample.name for sample in family.samples)
    return names


def test_dashboard_metrics_are_exported(gateway: LiveGateway) -> None:
    exported = exported_series(gateway)
    wanted = dashboard_metric_names()
    assert {"vllm:time_to_first_token_seconds_bucket", "gateway_requests_total"} <= wanted
    missing = sorted(wanted - exported)
    assert not missing, f"the dashboard queries series /metrics does not have: {missing}"
