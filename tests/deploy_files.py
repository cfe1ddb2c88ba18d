"""Helpers for the tests of docker/ and deploy/: the dashboard's PromQL, external tools."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO / "docker" / "grafana" / "dashboards" / "vllm-gateway.json"
PROMETHEUS_CONFIG = REPO / "docker" / "prometheus" / "prometheus.yml"
COMPOSE = REPO / "docker" / "compose.yaml"
K8S = REPO / "deploy" / "k8s"

# Grafana's variables, replaced by what Grafana would send.
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$model_name": ".*",
    "${model_name}": ".*",
}
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_NAME = re.compile(r"(?<![\w:.])([A-Za-z_:][A-Za-z0-9_:]*)(?![\w:])\s*(\()?")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right"}
    | {"bool", "offset", "inf", "nan"}
)


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # collapsed rows keep theirs inside


def dashboard_exprs(board: dict[str, Any] | None = None) -> list[str]:
    """Every PromQL expression the dashboard's panels query."""
    board = board or dashboard()
    return [t["expr"] for p in panels(board) for t in p.get("targets", []) if t.get("expr")]


def variable_metrics(board: dict[str, Any] | None = None) -> set[str]:
    """Metrics named by the dashboard's `label_values(metric, label)` variables."""
    board = board or dashboard()
    found = set()
    for variable in board.get("templating", {}).get("list", []):
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query or "")
        match = re.match(r"\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", text)
        if match:
            found.add(match.group(1))
    return found


def grafana_to_promql(expr: str) -> str:
    """The expression as Grafana sends it, its variables filled in."""
    for name in sorted(GRAFANA_VARIABLES, key=len, reverse=True):
        expr = expr.replace(name, GRAFANA_VARIABLES[name])
    return expr


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (functions, keywords, labels left out)."""
    text = _STRINGS.sub('""', grafana_to_promql(expr))
    previous = None
    while previous != text:  # innermost first: `{...}`, `[...]`, `by (...)`
        previous = text
        text = _MATCHERS.sub(" ", text)
        text = _RANGES.sub(" ", text)
        text = _GROUPING.sub(" ", text)
    names = set()
    for match in _NAME.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _KEYWORDS:
            continue
        names.add(name)
    return names


def dashboard_metric_names() -> set[str]:
    names = set(variable_metrics())
    for expr in dashboard_exprs():
        names |= metric_names(expr)
    return names


def find_tool(name: str, install: str) -> str:
    """Path of a command-line tool (also looked up beside this Python); in CI (CI=true)
    a missing tool fails the test, elsewhere it skips it."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found:
        return found
    message = f"{name} is not installed ({install})"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def known_env_names() -> set[str]:
    """Every variable the gateway reads: GATEWAY_<setting> and GATEWAY_<vLLM engine flag>,
    plus the other programs' own variables that the deploy files set."""
    from app.cli import build_serve_parser
    from app.engine_args import engine_dests
    from app.settings import ENV_PREFIX, Settings

    names = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    names |= {ENV_PREFIX + dest.upper() for dest in engine_dests(build_serve_parser())}
    return names | {"VLLM_CPU_KVCACHE_SPACE", "HF_TOKEN", "MODEL_ID"}


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    import yaml

    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, rest = full.partition(" ")
        out.append((keyword.upper(), " ".join(rest.split())))
    return out
