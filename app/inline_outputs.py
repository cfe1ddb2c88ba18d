"""The engine core's step outputs sent from its engine loop (an experiment, off by default).

vLLM's engine core hands each step's outputs, one `(client_index, EngineCoreOutputs)` per
engine client with something to say, to a queue that its output thread empties: encode,
send on that client's PUSH socket. Handing over costs the engine loop the interpreter lock:
the woken output thread takes it at the loop's next release and holds it while it
encodes, and pyzmq releases and takes it again around every send. In a model of the loop
on the 2-core CI box (steps of Python with lock-releasing calls between), the hand-over
lengthened a 2.3 ms step by 0.25-0.45 ms, and sending the same messages from the loop
itself by 0-0.05 ms (docs/benchmarks/profiling.md, "Session 46").

`InlineOutputs` stands in for the engine core's `output_queue`: what the engine loop's
thread puts there with a client index (step outputs, utility replies, aborts) is encoded
and sent at once, on PUSH sockets of its own connected to the same client addresses (a
client's PULL socket takes any number of peers); anything else (the coordinator's `-1`,
the shutdown marker, whatever another thread puts there) goes to vLLM's queue and output
thread as before. A client then gets the loop's messages in the order they were made; a
message from the output thread (an input-thread error for a request that never ran) may
come before or after them, as it can between two vLLM threads.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

SocketMaker = Callable[[str], Any]
"""Makes a connected PUSH socket for one client's output address."""


class InlineOutputs:
    """The engine core's `output_queue`, with the engine loop's own messages sent inline."""

    def __init__(
        self,
        vllm_queue: queue.Queue[Any],
        output_paths: Sequence[str],
        engine_index: int,
        make_socket: SocketMaker,
        encode: Callable[[Any], Sequence[Any]],
        loop_thread: int | None = None,
    ) -> None:
        self._queue = vllm_queue
        self._paths = list(output_paths)
        self._engine_index = engine_index
        self._make_socket = make_socket
        self._encode = encode
        self._loop_thread = threading.get_ident() if loop_thread is None else loop_thread
        self._sockets: dict[int, Any] = {}
        self.sent = 0  # messages sent inline (for tests and the log)

    def put_nowait(self, item: Any) -> None:
        if not self._inline(item):
            self._queue.put_nowait(item)
            return
        client_index, outputs = item
        outputs.engine_index = self._engine_index  # as vLLM's output thread sets it
        socket = self._sockets.get(client_index)
        if socket is None:
            socket = self._sockets[client_index] = self._make_socket(self._paths[client_index])
        socket.send_multipart(self._encode(outputs), copy=True)
        self.sent += 1

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if self._inline(item):
            self.put_nowait(item)
        else:
            self._queue.put(item, block, timeout)

    def _inline(self, item: Any) -> bool:
        return (
            threading.get_ident() == self._loop_thread
            and isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], int)
            and 0 <= item[0] < len(self._paths)
        )

    def __getattr__(self, name: str) -> Any:
        # get, get_nowait, empty, qsize, ...: the output thread's side, vLLM's queue
        return getattr(self._queue, name)


def install(engine_core: Any, output_paths: Sequence[str], engine_index: int) -> InlineOutputs:
    """Replace `engine_core.output_queue` (called on the engine loop's thread)."""
    import zmq
    from vllm.v1.engine import core
    from vllm.v1.serial_utils import MsgpackEncoder

    context = zmq.Context()
    encoder = MsgpackEncoder()

    def make_socket(path: str) -> Any:
        return core.make_zmq_socket(context, path, zmq.PUSH, linger=4000)

    inline = InlineOutputs(
        engine_core.output_queue, output_paths, engine_index, make_socket, encoder.encode
    )
    engine_core.output_queue = inline
    return inline
