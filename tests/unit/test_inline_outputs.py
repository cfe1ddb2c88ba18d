"""app.inline_outputs: the engine loop's own messages sent at once, everything else to
vLLM's queue; and the engine core's setup that installs it."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from vllm.v1.engine import EngineCoreOutputs
from vllm.v1.engine.core import EngineCoreProc
from vllm.v1.serial_utils import MsgpackDecoder

from app import engine_core_setup
from app.inline_outputs import InlineOutputs, install


@dataclass
class FakeSocket:
    path: str
    sent: list[list[Any]] = field(default_factory=list)

    def send_multipart(self, frames: list[Any], copy: bool = True) -> None:
        assert copy
        self.sent.append([bytes(f) for f in frames])


def _inline(vllm_queue: queue.Queue[Any]) -> tuple[InlineOutputs, dict[str, FakeSocket]]:
    sockets: dict[str, FakeSocket] = {}

    def make(path: str) -> FakeSocket:
        sockets[path] = FakeSocket(path)
        return sockets[path]

    out = InlineOutputs(vllm_queue, ["ipc://a", "ipc://b"], 3, make, lambda o: [repr(o).encode()])
    return out, sockets


def test_the_loops_client_messages_go_out_at_once_on_the_clients_socket() -> None:
    vllm_queue: queue.Queue[Any] = queue.Queue()
    out, sockets = _inline(vllm_queue)
    first, second = EngineCoreOutputs(), EngineCoreOutputs()
    out.put_nowait((1, first))
    out.put_nowait((1, second))
    out.put((0, EngineCoreOutputs()))
    assert vllm_queue.empty()
    assert [len(s.sent) for s in sockets.values()] == [2, 1]  # one socket each, made once
    assert list(sockets) == ["ipc://b", "ipc://a"]
    assert first.engine_index == second.engine_index == 3  # as vLLM's output thread sets
    assert out.sent == 3


def test_everything_else_goes_to_vllms_queue() -> None:
    vllm_queue: queue.Queue[Any] = queue.Queue()
    out, sockets = _inline(vllm_queue)
    dead = EngineCoreProc.ENGINE_CORE_DEAD
    coordinator = (-1, EngineCoreOutputs())
    out.put_nowait(dead)
    out.put_nowait(coordinator)
    out.put_nowait((5, EngineCoreOutputs()))  # no such client: vLLM's thread decides
    other = threading.Thread(target=out.put_nowait, args=((0, EngineCoreOutputs()),))
    other.start()
    other.join()
    assert not sockets and out.sent == 0
    assert out.qsize() == 4  # the output thread's side reads vLLM's queue
    assert out.get() == dead and out.get() is coordinator


def test_install_sends_what_vllms_client_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With vLLM's own encoder and zmq sockets: a PULL socket bound where a client's is
    gets the outputs, decodable as vLLM's client decodes them."""
    import zmq

    context = zmq.Context()
    pull = context.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")

    @dataclass
    class Core:
        output_queue: Any = field(default_factory=queue.Queue)

    core = Core()
    inline = install(core, [f"tcp://127.0.0.1:{port}"], 0)
    assert core.output_queue is inline
    outputs = EngineCoreOutputs(finished_requests={"r1"})
    core.output_queue.put_nowait((0, outputs))
    assert pull.poll(5000)
    got = MsgpackDecoder(EngineCoreOutputs).decode(pull.recv_multipart())
    assert got.finished_requests == {"r1"} and got.engine_index == 0
    pull.close(0)


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("run_engine_core", "run_busy_loop", "process_output_sockets"):
        monkeypatch.setattr(EngineCoreProc, name, EngineCoreProc.__dict__[name])
    monkeypatch.setattr(engine_core_setup, "_vllm_target", None)
    yield


def test_the_engine_loop_installs_it_from_the_output_threads_addresses(
    restored: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed: list[tuple[list[str], int]] = []
    monkeypatch.setattr(
        "app.inline_outputs.install", lambda core, paths, index: installed.append((paths, index))
    )
    threads: list[str] = []
    EngineCoreProc.process_output_sockets = lambda self, paths, coord, index: threads.append(
        "output thread"
    )

    class Core:
        output_queue: queue.Queue[Any] = queue.Queue()

    def vllm_target(*_a: Any, **_k: Any) -> None:
        core = Core()
        # as EngineCoreProc.__init__ starts its output thread, then runs the loop
        thread = threading.Thread(
            target=EngineCoreProc.process_output_sockets, args=(core, ["ipc://x"], None, 2)
        )
        thread.start()
        thread.join()
        EngineCoreProc.run_busy_loop(core)

    EngineCoreProc.run_busy_loop = lambda self: None
    engine_core_setup._vllm_target = vllm_target
    with caplog.at_level("INFO", logger="vllm.gateway"):
        engine_core_setup.run_engine_core(engine_core_setup.EngineCoreSetup(inline_outputs=True))
    assert threads == ["output thread"]  # vLLM's own still runs
    assert installed == [(["ipc://x"], 2)]
    assert "step outputs sent by the engine loop itself (1 client(s))" in caplog.text


def test_without_the_addresses_vllms_thread_keeps_sending(restored: None) -> None:
    class Core:
        output_queue: queue.Queue[Any] = queue.Queue()

    said = engine_core_setup._inline_outputs(Core(), wait_s=0.05)
    assert said == "by vLLM's output thread (its client addresses were not found)"
