"""One client process for several servers' runs: the client's skips (deadline, a server
that no longer listens) and the harness's record of them (a server that died)."""

from __future__ import annotations

import argparse
import json
import queue
import socket
from pathlib import Path
from typing import Any

import pytest

from bench import engine_stats
from bench.plan_runner import PlanRunner
from bench.profiles import PROFILES
from bench.vllm_bench import listening, run_items
from tests.bench_fakes import FakeServer


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[8:]) for line in text.splitlines() if line.startswith("@@bench ")]


def test_the_client_skips_a_server_that_no_longer_listens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_stats, "snapshot", lambda url: None)  # no /metrics here
    with socket.socket() as up, socket.socket() as gone:
        up.bind(("127.0.0.1", 0))
        up.listen()
        gone.bind(("127.0.0.1", 0))  # bound, not listening: a connection is refused
        urls = {name: f"http://127.0.0.1:{s.getsockname()[1]}" for name, s in
                (("up", up), ("gone", gone))}  # fmt: skip
        assert listening(urls["up"]) and not listening(urls["gone"])
        ran: list[str] = []
        plan = [
            {"tag": "a-r1", "argv": [urls["up"]]},
            {"tag": "b-r1", "argv": [urls["gone"]]},
            {"tag": "a-r2", "argv": [urls["up"]]},
        ]
        rc = run_items(
            plan, None, lambda argv: argparse.Namespace(base_url=argv[0]),
            lambda args: ran.append(args.base_url), {},
        )  # fmt: skip
    assert rc == 0
    assert ran == [urls["up"], urls["up"]]  # b's run never reached vLLM's ready check
    events = [(e["event"], e["tag"]) for e in _events(capsys.readouterr().out)]
    assert events == [
        ("start", "a-r1"),
        ("end", "a-r1"),
        ("skip", "b-r1"),
        ("start", "a-r2"),
        ("end", "a-r2"),
    ]


def test_the_client_skips_what_would_start_after_its_deadline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = [{"tag": "a-r1", "argv": []}, {"tag": "a-r2", "argv": [], "min_s": 1e9}]
    run_items(plan, 2e9, lambda argv: argparse.Namespace(), lambda args: None, {})
    events = _events(capsys.readouterr().out)
    assert [(e["event"], e["tag"]) for e in events] == [
        ("start", "a-r1"),
        ("end", "a-r1"),
        ("skip", "a-r2"),
    ]
    assert events[-1]["reason"] == "deadline"


class Recorder(PlanRunner):
    def __init__(self, results_dir: Path) -> None:
        self.args = argparse.Namespace()
        self.profile = PROFILES["cpu"]
        self.results_dir = results_dir
        self.data = {"runs": []}
        self.lines: list[str] = []

    def remaining(self) -> float:
        return 1e9

    def save(self) -> None:
        pass

    def log(self, msg: str) -> None:
        self.lines.append(msg)


RUN = {"num_prompts": 4, "num_warmups": 0, "output_len": 1}


def _start(tag: str) -> dict[str, Any]:
    return {"event": "start", "tag": tag, "time": 0.0}


def test_one_client_for_two_servers_goes_on_after_one_dies(tmp_path: Path) -> None:
    a, b = FakeServer("a"), FakeServer("b")
    runs = {t: dict(RUN) for t in ("a-r1", "b-r1", "b-r2", "a-r2")}
    owners: dict[str, Any] = {"a-r1": a, "b-r1": b, "b-r2": b, "a-r2": a}
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    for tag in ("a-r1", "b-r1"):
        events.put(_start(tag))
        events.put({"event": "end", "tag": tag, "ok": False})
    runner = Recorder(tmp_path)
    a.running = False  # a dies during its first run: the client skips its second
    events.put(_start("b-r2"))
    events.put({"event": "end", "tag": "b-r2", "ok": False})
    events.put({"event": "skip", "tag": "a-r2", "reason": "nothing listens at ..."})
    events.put(None)  # the client exits
    runner._collect(events, runs, owners)
    assert [r.get("error", "")[:7] for r in runner.data["runs"]] == ["client "] * 3 + ["skipped"]
    assert "a died during a-r1" in runner.lines
    assert runner.data["skipped"] == ["a-r2"]
    assert a.load == [True, False] and b.load == [True, False] * 2  # under load in its runs


def test_the_client_is_stopped_when_every_server_has_died(tmp_path: Path) -> None:
    a = FakeServer("a", running=False)
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    events.put(_start("a-r1"))
    events.put({"event": "end", "tag": "a-r1", "ok": False})
    events.put(_start("a-r2"))  # never read: the harness stops waiting
    runner = Recorder(tmp_path)
    runs = {"a-r1": dict(RUN), "a-r2": dict(RUN)}
    runner._collect(events, runs, {"a-r1": a, "a-r2": a})
    assert "started" not in runs["a-r2"]
    assert events.qsize() == 1
