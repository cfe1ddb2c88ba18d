"""The seeds' curl commands against the live gateway."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.integration.conftest import LiveGateway

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def curl(*args: str) -> tuple[int, str]:
    out = subprocess.run(
        ["curl", "-sS", "-w", "\n%{http_code}", *args], capture_output=True, text=True, timeout=120
    )
    body, _, status = out.stdout.rpartition("\n")
    return int(status), body


def test_health(gateway: LiveGateway) -> None:
    status, body = curl(gateway.base_url + "/health")
    assert status == 200
    assert json.loads(body) == {"status": "healthy"}


def test_health_answers_head(gateway: LiveGateway) -> None:
    """Load balancers probe with HEAD: 200, headers only."""
    out = subprocess.run(
        ["curl", "-sS", "-I", gateway.base_url + "/health"], capture_output=True, text=True
    )
    assert out.stdout.startswith("HTTP/1.1 200"), out.stdout
    assert "application/json" in out.stdout and "healthy" not in out.stdout


def test_metrics_plain_and_compressed(gateway: LiveGateway) -> None:
    """`curl` asks for no encoding and gets text; `curl --compressed` gets gzip and decodes."""
    status, plain = curl(gateway.base_url + "/metrics")
    assert status == 200 and "# TYPE vllm:num_requests_running gauge" in plain
    out = subprocess.run(
        ["curl", "-sS", "--compressed", "-D", "-", gateway.base_url + "/metrics"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    head, _, body = out.stdout.partition("\n\n")  # text mode: CRLF read as LF
    assert "content-encoding: gzip" in head.lower()
    assert "# TYPE vllm:num_requests_running gauge" in body


@pytest.mark.parametrize("path", ["/v1/models", "/v1/models/{model}", "/metrics"])
def test_read_only_routes_answer_head(gateway: LiveGateway, path: str) -> None:
    """HEAD (`curl -I`): the GET's status and headers, no body."""
    url = gateway.base_url + path.format(model=gateway.model)
    out = subprocess.run(["curl", "-sS", "-I", url], capture_output=True, text=True, timeout=60)
    head, _, body = out.stdout.partition("\n\n")  # text mode: CRLF read as LF
    assert head.startswith("HTTP/1.1 200"), out.stdout
    assert "content-type:" in head.lower() and body == ""


def test_models(gateway: LiveGateway) -> None:
    status, body = curl(gateway.base_url + "/v1/models")
    assert status == 200
    assert json.loads(body)["data"][0]["id"] == gateway.model


def test_chat(gateway: LiveGateway) -> None:
    payload = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": "你好"}],
        "max_tokens": 64,
    }
    status, body = curl(
        gateway.v1 + "/chat/completions",
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps(payload, ensure_ascii=False),
    )
    assert status == 200, body
    data = json.loads(body)
    assert data["choices"][0]["finish_reason"] in ("stop", "length")


def test_chat_stream(gateway: LiveGateway) -> None:
    payload = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 6,
        "stream": True,
        "ignore_eos": True,
    }
    status, body = curl(
        "-N",
        gateway.v1 + "/chat/completions",
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps(payload),
    )
    assert status == 200
    frames = [line[6:] for line in body.splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_bad_json_is_an_openai_400(gateway: LiveGateway) -> None:
    status, body = curl(
        gateway.v1 + "/chat/completions",
        "-H",
        "Content-Type: application/json",
        "-d",
        "{not json",
    )
    assert status == 400
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error"
    assert isinstance(error["code"], str)
