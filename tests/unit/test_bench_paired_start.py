"""bench.paired_start.start_each: servers started in turn; a hung or failed one dropped."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.paired_start import start_each
from bench.servers import ServerError


@dataclass
class FakeServer:
    """Records its calls; `ready_after` None: never ready (wait_ready raises as the real
    one does at its timeout)."""

    label: str
    ready_after: float | None
    calls: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.calls.append("start")

    def wait_ready(self, timeout_s: float) -> float:
        self.calls.append(f"wait {timeout_s:g}")
        if self.ready_after is None or self.ready_after > timeout_s:
            raise ServerError(f"{self.label} not ready after {timeout_s:.0f} s")
        return self.ready_after

    def stop(self, grace_s: float = 30.0) -> int | None:
        self.calls.append("stop")
        return 0


def test_a_server_not_ready_in_time_is_stopped_and_the_rest_still_start() -> None:
    made = {
        "rust": FakeServer("rust", 133.0),
        "gwold": FakeServer("gwold", None),
        "gateway": FakeServer("gateway", 400.0),
        "gw1": FakeServer("gw1", 90.0),
    }
    lines: list[str] = []
    order: list[str] = []

    def maker(label: str) -> FakeServer:
        order.append(label)
        return made[label]

    ready, dropped = start_each(
        ((label, lambda label=label: maker(label)) for label in made), 300.0, lines.append
    )
    assert order == ["rust", "gwold", "gateway", "gw1"]  # one after another, in turn
    assert list(ready) == ["rust", "gw1"]
    assert ready["rust"] is made["rust"]
    assert dropped == {
        "gwold": "gwold not ready after 300 s",
        "gateway": "gateway not ready after 300 s",
    }
    assert made["gwold"].calls == ["start", "wait 300", "stop"]
    assert made["rust"].calls == ["start", "wait 300"]  # ready ones are left running
    assert lines == [
        "paired: rust ready after 133 s",
        "paired: gwold dropped: gwold not ready after 300 s",
        "paired: gateway dropped: gateway not ready after 300 s",
        "paired: gw1 ready after 90 s",
    ]


def test_a_server_that_fails_to_start_is_dropped_too() -> None:
    class Broken(FakeServer):
        def start(self) -> None:
            raise OSError("address in use")

    broken = Broken("vllm", 10.0)
    ready, dropped = start_each([("vllm", lambda: broken)], 300.0, lambda _: None)
    assert ready == {}
    assert dropped == {"vllm": "address in use"}
    assert broken.calls == ["stop"]


def test_a_server_the_deadline_leaves_no_time_for_is_not_started() -> None:
    """With `ready_by`, a server waits at most until then; one with under a minute left is
    not started at all (sessions 22 and 23: the third server spent the call starting)."""
    now = [0.0]
    made = {
        "rust": FakeServer("rust", 125.0),
        "gateway": FakeServer("gateway", 130.0),
        "gwold": FakeServer("gwold", 130.0),
    }
    lines: list[str] = []

    def maker(label: str) -> FakeServer:
        server = made[label]
        now[0] += server.ready_after or 0.0  # the clock moves while it starts
        return server

    ready, dropped = start_each(
        ((label, lambda label=label: maker(label)) for label in made),
        300.0,
        lines.append,
        ready_by=300.0,
        clock=lambda: now[0],
    )
    assert list(ready) == ["rust", "gateway"]
    assert made["rust"].calls == ["start", "wait 300"]
    assert made["gateway"].calls == ["start", "wait 175"]  # the time left, not 300
    assert made["gwold"].calls == []  # 45 s left: never started
    assert dropped == {"gwold": "not started: 45 s left to start it"}
    assert lines[-1] == "paired: gwold dropped: not started: 45 s left to start it"
