"""`app.chat.wire.ChunkWriter`: the SSE frames of a chat stream."""

from __future__ import annotations

import json

from app.chat.wire import DONE_FRAME, ChunkWriter, FrameGroups, usage_dict
from app.schemas.chat import ChatCompletionRequest, continuous_usage, include_usage


def frame_body(frame: bytes) -> dict[str, object]:
    assert frame.startswith(b"data: ") and frame.endswith(b"\n\n")
    body: dict[str, object] = json.loads(frame[6:])
    return body


def test_a_choice_chunk_carries_usage_only_when_given() -> None:
    writer = ChunkWriter.create("chatcmpl-1", 7, "m")
    plain = frame_body(writer.choice(0, {"content": "a"}))
    assert "usage" not in plain and plain["choices"] == [
        {"index": 0, "delta": {"content": "a"}, "logprobs": None, "finish_reason": None}
    ]
    counted = frame_body(writer.choice(0, {"content": "b"}, usage=usage_dict(5, 2)))
    assert counted["usage"] == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    assert counted["id"] == "chatcmpl-1" and counted["object"] == "chat.completion.chunk"


def test_usage_names_cached_prompt_tokens_only_where_known() -> None:
    assert "prompt_tokens_details" not in usage_dict(5, 2)
    assert usage_dict(5, 2, 0)["prompt_tokens_details"] == {"cached_tokens": 0}
    writer = ChunkWriter.create("chatcmpl-1", 7, "m")
    tail = frame_body(writer.usage(usage_dict(300, 4, 256)))
    assert tail["choices"] == []
    assert tail["usage"] == {
        "prompt_tokens": 300,
        "completion_tokens": 4,
        "total_tokens": 304,
        "prompt_tokens_details": {"cached_tokens": 256},
    }


def test_continuous_usage_needs_include_usage() -> None:
    def options(**fields: bool) -> ChatCompletionRequest:
        return ChatCompletionRequest.model_validate(
            {"messages": [{"role": "user", "content": "hi"}], "stream_options": fields}
        )

    both = options(include_usage=True, continuous_usage_stats=True).stream_options
    alone = options(continuous_usage_stats=True).stream_options
    assert include_usage(both) and continuous_usage(both)
    assert not include_usage(alone) and not continuous_usage(alone)
    assert not continuous_usage(None) and not include_usage(None)


def test_frame_groups_hold_a_finishing_frame_for_what_follows() -> None:
    """Frames under way go out at once; a finishing one waits for the next write (another
    choice's frame, or the end), so the frames and their order are unchanged."""
    groups = FrameGroups()
    assert groups.frame(b"a0 ", finishing=False) == b"a0 "
    assert groups.frame(b"b0 ", finishing=False) == b"b0 "
    assert groups.frame(b"a-end ", finishing=True) is None
    assert groups.frame(b"b1 ", finishing=False) == b"a-end b1 "
    assert groups.frame(b"b-end ", finishing=True) is None
    assert groups.end(b"usage ") == b"b-end usage " + DONE_FRAME
    assert groups.end() == DONE_FRAME  # nothing held twice
