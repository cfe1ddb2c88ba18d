"""bench.paired: server specs, the rotated turns, the summary, and one timed request
against a local streaming server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from bench.paired import (
    _args,
    summary_path,
    targets,
    timed_request,
    turn_order,
)
from bench.paired_specs import ServerSpec, parse_spec
from bench.paired_stats import engine_sample, summarize
from tests.local_http import serving


def test_parse_spec_forms() -> None:
    assert parse_spec("vllm") == ServerSpec("vllm", "vllm", ())
    assert parse_spec("gw1=gateway --api-server-count 1") == ServerSpec(
        "gw1", "gateway", ("--api-server-count", "1")
    )
    # an '=' inside a flag is not a label
    assert parse_spec("gateway --api-server-count=1") == ServerSpec(
        "gateway", "gateway", ("--api-server-count=1",)
    )
    with pytest.raises(ValueError, match="expected"):
        parse_spec("x=sglang")
    # VAR=VALUE words after the label: that server's own environment
    assert parse_spec("gwfork=VLLM_WORKER_MULTIPROC_METHOD=fork A_B='x y' gateway --x=1") == (
        ServerSpec(
            "gwfork",
            "gateway",
            ("--x=1",),
            (("VLLM_WORKER_MULTIPROC_METHOD", "fork"), ("A_B", "x y")),
        )
    )
    assert parse_spec("gw=gateway").frontend == "python"
    assert parse_spec("rs=VLLM_USE_RUST_FRONTEND=1 vllm").frontend == "rust"
    with pytest.raises(ValueError, match="expected"):  # no label: the first '=' names it
        parse_spec("VLLM_WORKER_MULTIPROC_METHOD=fork gateway")
    with pytest.raises(ValueError):
        parse_spec("")


def test_a_spec_can_run_the_gateway_from_another_checkout() -> None:
    spec = parse_spec("gwold=GATEWAY_ROOT=/tmp/old VLLM_X=1 gateway --api-server-count 4")
    assert spec.root == "/tmp/old"
    assert spec.process_env == {"VLLM_X": "1"}  # the root is not the server's variable
    assert parse_spec("gw=gateway").root is None


def test_sampling_sets_what_the_client_sends() -> None:
    assert _args(["--sampling", "temperature=1,top_p=1,top_k=0"]).sampling == {
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": 0,
    }
    assert _args([]).sampling is None  # the profile's values


def test_several_workloads_get_a_summary_each(tmp_path: Path) -> None:
    assert _args(["--workload", "1024x128,128x128"]).workload.split(",") == ["1024x128", "128x128"]
    assert summary_path(tmp_path, "128x64", several=False) == tmp_path / "summary.json"
    assert summary_path(tmp_path, "128x128", several=True) == tmp_path / "summary-128x128.json"


def test_turn_order_rotates_so_each_server_leads_equally() -> None:
    labels = ["a", "b", "c"]
    firsts = [turn_order(labels, i)[0] for i in range(6)]
    assert firsts == ["a", "b", "c", "a", "b", "c"]
    assert sorted(turn_order(labels, 4)) == labels


def test_summarize_pairs_requests_and_splits_ttft() -> None:
    samples: dict[str, list[dict[str, float] | None]] = {
        "vllm": [
            {"ttft_ms": 20.0, "tpot_ms": 2.0, "prefill_ms": 15.0},
            {"ttft_ms": 30.0, "tpot_ms": 2.2, "prefill_ms": 16.0},
            None,
        ],
        "gw": [
            {"ttft_ms": 23.0, "tpot_ms": 2.1, "vllm_ttft_ms": 21.0, "prefill_ms": 19.0},
            {"ttft_ms": 31.0, "vllm_ttft_ms": 28.0, "prefill_ms": 18.0},
            {"ttft_ms": 99.0, "vllm_ttft_ms": 90.0},
        ],
    }
    out = summarize(samples)
    assert out["vllm"]["requests"] == 2 and out["vllm"]["failed"] == 1
    assert out["vllm"]["ttft_ms_quartiles"][1] == 25.0
    assert out["vllm"]["vllm_ttft_ms_p50"] is None and out["vllm"]["front_end_ms_p50"] is None
    gw = out["gw"]
    assert gw["front_end_ms_p50"] == pytest.approx(3.0)  # 2, 3, 9
    assert gw["prefill_ms_p50"] == pytest.approx(18.5)
    assert gw["tpot_ms_p50"] == 2.1  # the request without a TPOT is left out
    # request 3 failed on vllm: only requests 1 and 2 pair up (+3, +1; prefill +4, +2)
    assert gw["ttft_ms_minus_vllm_quartiles"][1] == pytest.approx(2.0)
    assert gw["prefill_ms_minus_vllm_quartiles"][1] == pytest.approx(3.0)
    assert gw["ttft_ms_above_vllm"] == [2, 2]
    # TPOT pairs up where both have one: request 1 only, +0.1 ms
    assert gw["tpot_ms_minus_vllm_quartiles"][1] == pytest.approx(0.1)
    assert gw["tpot_ms_above_vllm"] == [1, 1]
    assert gw["itl_ms_above_vllm"] == [0, 0] and gw["itl_ms_minus_vllm_quartiles"] == []
    assert "ttft_ms_minus_vllm_quartiles" not in out["vllm"]


def test_targets_double_each_server_with_a_system_message() -> None:
    specs = [parse_spec("vllm"), parse_spec("gw=gateway")]
    assert [t.label for t in targets(specs, None)] == ["vllm", "gw"]
    both = targets(specs, "")
    assert [(t.label, t.server, t.system) for t in both] == [
        ("vllm", "vllm", None),
        ("gw", "gw", None),
        ("vllm+sys", "vllm", ""),
        ("gw+sys", "gw", ""),
    ]


def test_engine_sample_takes_one_requests_histogram_means() -> None:
    timings = {
        "time_to_first_token": {"mean_ms": 30.0, "count": 1},
        "request_prefill_time": {"mean_ms": 20.0, "count": 1},
        "e2e_request_latency": {"mean_ms": 300.0, "count": 1},
    }
    assert engine_sample(timings) == {"vllm_ttft_ms": 30.0, "prefill_ms": 20.0}
    assert engine_sample({}) == {}


class _Stream(BaseHTTPRequestHandler):
    status = 200
    texts = ("", "b", "c")  # an empty role chunk first, as vllm serve sends

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.status)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if self.status != 200:
            self.wfile.write(b'{"error": {"message": "no"}}')
            return
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"content": text}}]} for text in self.texts
        ]
        chunks[0]["choices"][0]["delta"]["role"] = "assistant"
        chunks.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stream_port() -> Iterator[int]:
    with serving(_Stream) as port:
        yield port
    _Stream.status = 200
    _Stream.texts = ("", "b", "c")


def test_timed_request_reads_ttft_tokens_and_tpot(stream_port: int) -> None:
    out = timed_request(stream_port, {"messages": []})
    assert out["tokens"] == 3.0 and out["prompt_tokens"] == 5.0
    assert out["ttft_ms"] <= out["text_ms"] <= out["e2e_ms"]


def test_timed_request_without_text_has_no_text_time(stream_port: int) -> None:
    _Stream.texts = ("", "", "")
    out = timed_request(stream_port, {"messages": []})
    assert "text_ms" not in out and out["tokens"] == 3.0
    assert 0 < out["ttft_ms"] <= out["e2e_ms"]
    assert out["tpot_ms"] == pytest.approx((out["e2e_ms"] - out["ttft_ms"]) / 2)


def test_timed_request_raises_on_an_http_error(stream_port: int) -> None:
    _Stream.status = 503
    with pytest.raises(ValueError, match="HTTP 503"):
        timed_request(stream_port, {"messages": []})


class _Clock:
    """A monotonic clock that moves only when told (stands in for `time` in bench.paired)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class _Server:
    """What bench.paired needs of a server: starts at once, ready in 100 s of the clock."""

    def __init__(self, clock: _Clock, port: int) -> None:
        self.clock, self.port, self.env = clock, port, {}
        self.base_url = f"http://127.0.0.1:{port}"
        self.stopped = False

    def start(self) -> None:
        self.clock.now += 100.0

    def wait_ready(self, timeout_s: float) -> float:
        return 100.0

    def stop(self, grace_s: float = 30.0) -> int | None:
        self.stopped = True
        return 0


def test_the_turns_stop_before_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--deadline-s: the turns end in time to stop the servers (20 s before it), what ran is
    kept and the summary says it was cut; a server that could not be ready with --turns-s
    to spare is never started."""
    import contextlib
    import types

    import bench.paired as paired

    clock = _Clock()
    made: dict[int, _Server] = {}

    def server(kind: str, prof: object, **kw: Any) -> _Server:
        made[kw["port"]] = _Server(clock, kw["port"])
        return made[kw["port"]]

    def request(port: int, body: dict[str, Any]) -> dict[str, float]:
        clock.now += 10.0  # each request takes 10 s of the clock
        return {"ttft_ms": 20.0, "e2e_ms": 100.0, "tokens": 8.0, "tpot_ms": 10.0}

    monkeypatch.setattr(paired, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(paired, "bench_server", server)
    monkeypatch.setattr(paired, "timed_request", request)
    monkeypatch.setattr(paired, "random_prompts", lambda model, n, count, seed: ["p"] * count)
    monkeypatch.setattr(paired, "ensure_model", lambda args, prof: "model")
    monkeypatch.setattr(paired, "favoured_client", contextlib.nullcontext)
    monkeypatch.setattr(paired, "stop_all_on_exit", lambda: None)
    monkeypatch.setattr(paired, "stop_all", lambda: None)
    stats = types.SimpleNamespace(snapshot=lambda url: {}, timings=lambda a, b: {})
    monkeypatch.setattr(paired, "engine_stats", stats)
    monkeypatch.setattr(paired, "engine_sample", lambda timings: {})
    argv = ["--out", str(tmp_path), "--requests", "50", "--warmups", "1", "--turns-s", "250"]
    argv += ["--deadline-s", "500", "--server", "a=vllm", "--server", "b=gateway"]
    argv += ["--server", "c=gateway"]
    assert paired.main(argv) == 0
    result = json.loads((tmp_path / "summary.json").read_text())
    # servers must be ready by 1000 + 500 - 20 - 250 = 1230: a is at 1100, b at 1200, and
    # c, with 30 s left, is not started
    assert result["dropped"] == {"c": "not started: 30 s left to start it"}
    assert sorted(made) == [18600, 18610]
    assert all(s.stopped for s in made.values())
    # warm-ups until 1220, then turns of 20 s while the clock is at most 1480: 14 of 50
    assert result["cut_at_deadline"] is True
    assert {k: len(v) for k, v in result["samples"].items()} == {"a": 14, "b": 14}
    assert clock.now == 1500.0
