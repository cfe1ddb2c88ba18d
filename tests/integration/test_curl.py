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


def http_chunks(raw: bytes) -> list[bytes]:
    """The chunks of a chunked HTTP body (`curl --raw` leaves the framing in): one per
    write of the server's (uvicorn writes each ASGI body message at once)."""
    chunks = []
    while True:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks
        chunks.append(raw[:size])
        assert raw[size : size + 2] == b"\r\n"
        raw = raw[size + 2 :]


def sse_frames(chunk: bytes) -> list[str]:
    return [f[6:] for f in chunk.decode().split("\n\n") if f.startswith("data: ")]


@pytest.mark.parametrize("n", [1, 2])
def test_a_stream_ends_in_one_write(gateway: LiveGateway, n: int) -> None:
    """Frames go out as the engine makes them; a choice's finishing frame goes out with
    whatever follows it, so a stream's end (the last finish, the usage, `[DONE]`) and the
    end of the chunked body are one write."""
    payload = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8,
        "n": n,
        "seed": 5,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    headers = ["-H", "Content-Type: application/json"]
    url = gateway.v1 + "/chat/completions"
    argv = ["curl", "-sS", "-N", "--raw", *headers, "-d", json.dumps(payload), url]
    out = subprocess.run(argv, capture_output=True, timeout=120)
    chunks = [sse_frames(chunk) for chunk in http_chunks(out.stdout)]
    assert len(chunks) > 1
    for frames in chunks[:-1]:  # no write ends with a finished choice's frame
        assert json.loads(frames[-1])["choices"][0]["finish_reason"] is None, frames
    *finishing, usage, done = chunks[-1]
    assert done == "[DONE]"
    assert json.loads(usage)["usage"]["completion_tokens"] == 8 * n
    finals = [
        c["choices"][0]
        for frames in chunks
        for c in (json.loads(f) for f in frames if f != "[DONE]")
        if c["choices"] and c["choices"][0]["finish_reason"] is not None
    ]
    assert sorted(c["index"] for c in finals) == list(range(n))
    assert {c["finish_reason"] for c in finals} == {"length"}
    if n == 1:
        assert [json.loads(f)["choices"][0]["finish_reason"] for f in finishing] == ["length"]


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
