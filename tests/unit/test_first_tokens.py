"""app.first_tokens: a step's first tokens handed out before the running streams' tokens."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from app.first_tokens import first_outputs_first, first_tokens_first


@dataclass
class _Out:
    request_id: str


@dataclass
class _State:
    is_prefilling: bool


def test_outputs_of_requests_still_prefilling_go_first_in_their_order() -> None:
    outputs = [_Out("run-1"), _Out("new-1"), _Out("run-2"), _Out("gone"), _Out("new-2")]
    states = {
        "run-1": _State(False),
        "new-1": _State(True),
        "run-2": _State(False),
        "new-2": _State(True),
    }  # "gone": aborted, no state any more (vLLM skips its output)
    moved = first_outputs_first(outputs, states)
    assert [o.request_id for o in moved] == ["new-1", "new-2", "run-1", "run-2", "gone"]


def test_nothing_to_move_keeps_the_very_same_sequence() -> None:
    states = {"a": _State(False), "b": _State(False), "c": _State(True)}
    running = [_Out("a"), _Out("b")]
    assert first_outputs_first(running, states) is running
    one = [_Out("c")]
    assert first_outputs_first(one, states) is one
    only_new = [_Out("c"), _Out("c")]
    assert first_outputs_first(only_new, states) is only_new
    assert first_outputs_first([], states) == []


def test_an_output_processor_without_what_it_needs_is_left_alone() -> None:
    class Other:
        def process_outputs(self, outputs: list[Any]) -> None: ...

    other = Other()
    assert first_tokens_first(other) is False
    assert "process_outputs" not in vars(other)
    assert first_tokens_first(None) is False


def test_vllms_output_processor_hands_the_first_token_out_first() -> None:
    """vLLM's own OutputProcessor and RequestOutputCollectors: in a step that lists a
    running stream's next token before a new request's first, the new request's
    collector gets its output first once the order is applied, and not before."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest
    from vllm.v1.engine.output_processor import OutputProcessor, RequestOutputCollector

    order: list[str] = []

    class Collector(RequestOutputCollector):
        def put(self, output: Any) -> None:
            order.append(output.request_id)
            super().put(output)

    def processor_with_one_running() -> OutputProcessor:
        processor = OutputProcessor(None, log_stats=False)
        params = SamplingParams(max_tokens=8, detokenize=False)
        params.output_kind = RequestOutputKind.DELTA
        for rid in ("running", "new"):
            request = EngineCoreRequest(
                request_id=rid,
                prompt_token_ids=[1, 2, 3],
                mm_features=None,
                sampling_params=params,
                pooling_params=None,
                arrival_time=time.time(),
                lora_request=None,
                cache_salt=None,
                data_parallel_rank=None,
                external_req_id=rid,
            )
            processor.add_request(request, None, queue=Collector(params.output_kind, rid))
        processor.process_outputs([EngineCoreOutput("running", [5])])  # its first token
        order.clear()
        return processor

    step = [EngineCoreOutput("running", [6]), EngineCoreOutput("new", [7])]
    as_vllm = processor_with_one_running()
    as_vllm.process_outputs(list(step))
    assert order == ["running", "new"]  # vLLM's own order: the engine core's

    ours = processor_with_one_running()
    assert first_tokens_first(ours) is True
    ours.process_outputs(list(step))
    assert order == ["new", "running"]
