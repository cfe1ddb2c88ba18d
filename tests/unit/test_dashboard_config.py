"""docker/prometheus and the Grafana dashboard, checked offline (promtool)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.deploy_files import (
    PROMETHEUS_CONFIG,
    dashboard,
    dashboard_exprs,
    dashboard_metric_names,
    find_tool,
    grafana_to_promql,
    load_yaml_documents,
    metric_names,
    panels,
)

PROMTOOL = ".ci/run installs it: apt-get install prometheus"


def test_promtool_accepts_the_prometheus_config() -> None:
    promtool = find_tool("promtool", PROMTOOL)
    done = subprocess.run(
        [promtool, "check", "config", str(PROMETHEUS_CONFIG)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_prometheus_scrapes_the_gateway_metrics_route() -> None:
    from app.main import ROUTES

    [config] = load_yaml_documents(PROMETHEUS_CONFIG)
    [job] = config["scrape_configs"]
    assert job["metrics_path"] in ROUTES
    assert job["static_configs"][0]["targets"] == ["gateway:8000"]


def test_every_dashboard_query_is_valid_promql(tmp_path: Path) -> None:
    """promtool parses each expression as a recording rule."""
    promtool = find_tool("promtool", PROMTOOL)
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query{i}", "expr": grafana_to_promql(expr)}
                    for i, expr in enumerate(dashboard_exprs())
                ],
            }
        ]
    }
    path = tmp_path / "rules.json"  # YAML is a superset of JSON
    path.write_text(json.dumps(rules))
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_dashboard_covers_what_the_issue_asks_for() -> None:
    exprs = "\n".join(dashboard_exprs())
    for needle in (
        "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket",
        "histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket",
        "rate(vllm:generation_tokens_total",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        'gateway_requests_total{status=~"5..|4.."}',
        "sum by (kind) (rate(gateway_normalizations_total",
        'rate(gateway_prompt_turn_tokens_total{source="remembered"}',
    ):
        assert needle in exprs, needle


def test_metric_names_have_their_kinds_suffix() -> None:
    names = dashboard_metric_names()
    assert names and all(n.startswith(("vllm:", "gateway_")) for n in names)
    for expr in dashboard_exprs():
        for quantile in re.finditer(r"histogram_quantile\(", expr):
            assert all(n.endswith("_bucket") for n in metric_names(expr[quantile.start() :]))
        for name in metric_names(expr):
            if f"rate({name}" in expr:  # rates are of counters or histogram parts
                assert name.endswith(("_total", "_bucket", "_sum", "_count")), name


def test_panels_use_the_datasource_variable_and_unique_ids() -> None:
    board = dashboard()
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))
    for panel in panels(board):
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"
    assert board["uid"] == "vllm-gateway"


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (le) (rate(a_bucket{x=~"y|z"}[$__rate_interval]))', {"a_bucket"}),
        ("a / on(job) group_left b offset 5m", {"a", "b"}),
        ('label_replace(c, "dst", "$1", "src", "(.*)") > bool 3', {"c"}),
        ("sum without (instance) (vllm:x_total) and vllm:y", {"vllm:x_total", "vllm:y"}),
    ],
)
def test_metric_name_extraction(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_a_missing_tool_skips_here_but_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-tool is not installed"):
        find_tool("no-such-tool", "how to get it")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="how to get it"):
        find_tool("no-such-tool", "how to get it")
