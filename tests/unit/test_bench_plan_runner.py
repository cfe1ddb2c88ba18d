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

from bench import engine_stats, vllm_bench
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


class Clock:
    """`time` for `bench.vllm_bench`: a run takes the seconds its argv says."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def run(self, args: argparse.Namespace) -> None:
        self.now += args.seconds


def _timed(
    plan: list[dict[str, Any]],
    stop_in: float,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> list[str]:
    """The client's events for `plan` (each argv: the run's seconds), as `event tag`."""
    clock = Clock()
    monkeypatch.setattr(vllm_bench, "time", clock)
    monkeypatch.setattr(engine_stats, "snapshot", lambda url: None)
    parse = lambda argv: argparse.Namespace(seconds=float(argv[0]))  # noqa: E731
    run_items(plan, clock.now + stop_in, parse, clock.run, {})
    return [f"{e['event']} {e['tag']}" for e in _events(capsys.readouterr().out)]


def test_the_client_skips_a_run_that_took_too_long_before_to_end_in_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a point's run took 20 s: with 15 s left the next one is skipped, a short point runs;
    # once it has, its 2 s count rather than a `min_s` of 15, with 13 s left
    plan = [
        {"tag": "a-r1-long", "argv": ["20"], "point": "long", "min_s": 1},
        {"tag": "a-r2-long", "argv": ["20"], "point": "long", "min_s": 1},
        {"tag": "a-r2-short", "argv": ["2"], "point": "short", "min_s": 1},
        {"tag": "a-r3-short", "argv": ["2"], "point": "short", "min_s": 15},
    ]
    assert _timed(plan, 35, monkeypatch, capsys) == [
        "start a-r1-long",
        "end a-r1-long",
        "skip a-r2-long",
        "start a-r2-short",
        "end a-r2-short",
        "start a-r3-short",
        "end a-r3-short",
    ]
    # without the measured time the second long run would start with 15 s left (min_s 1)
    unmeasured = [dict(item, point=item["tag"]) for item in plan]
    assert "start a-r2-long" in _timed(unmeasured, 35, monkeypatch, capsys)


def test_the_client_skips_a_round_whole_when_it_would_not_end_in_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # two servers' rounds of 10 s runs; 15 s are left as round 2 starts: neither runs
    plan = [
        {"tag": f"{name}-r{rnd}", "argv": ["10"], "point": "p", "min_s": 1, "pair": rnd}
        for rnd, names in ((1, "ab"), (2, "ba"), (3, "ab"))
        for name in names
    ]
    assert _timed(plan, 35, monkeypatch, capsys) == [
        "start a-r1",
        "end a-r1",
        "start b-r1",
        "end b-r1",
        "skip b-r2",
        "skip a-r2",
        "skip a-r3",
        "skip b-r3",
    ]
    # unpaired, b's second run would have started (and a's been skipped)
    unpaired = [{k: v for k, v in item.items() if k != "pair"} for item in plan]
    assert _timed(unpaired, 35, monkeypatch, capsys)[4:6] == ["start b-r2", "end b-r2"]


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


def test_a_plan_for_several_servers_marks_each_round_as_a_pair(tmp_path: Path) -> None:
    runner = Recorder(tmp_path)
    runner.args = argparse.Namespace(python="py", seed=0)
    a, b = FakeServer("a", port=1), FakeServer("b", port=2)
    entries: list[Any] = [(a, "a", 1), (b, "b", 1), (b, "b", 2), (a, "a", 2)]
    plan, runs, owners = runner.plan_of(entries, "m")
    points = len(runner.profile.points())
    assert [item["pair"] for item in plan] == [1] * 2 * points + [2] * 2 * points
    assert all(item["tag"].endswith(item["point"]) for item in plan)  # "...-128x64-c8"
    assert list(runs) == [item["tag"] for item in plan]
    assert [owners[item["tag"]] for item in plan[::points]] == [a, b, b, a]
    alone, _, _ = runner.plan_of(entries[:1], "m")  # one server: no rounds to keep whole
    assert [item["tag"] for item in alone] == [item["tag"] for item in plan[:points]]
    assert not any("pair" in item for item in alone)


def test_runs_skipped_for_the_deadline_are_recorded_without_a_line_each(tmp_path: Path) -> None:
    a = FakeServer("a")
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    for tag in ("a-r2", "a-r3"):
        events.put({"event": "skip", "tag": tag, "reason": "deadline"})
    events.put({"event": "skip", "tag": "a-r4", "reason": "nothing listens at ..."})
    events.put(None)
    runner = Recorder(tmp_path)
    runs = {t: dict(RUN) for t in ("a-r2", "a-r3", "a-r4")}
    runner._collect(events, runs, dict.fromkeys(runs, a))
    assert runner.data["skipped"] == ["a-r2", "a-r3", "a-r4"]
    assert [r["error"] for r in runner.data["runs"]] == ["skipped: deadline"] * 2 + [
        "skipped: nothing listens at ..."
    ]
    assert runner.lines == ["a-r4: skipped (nothing listens at ...)"]  # run_plans sums up the rest
