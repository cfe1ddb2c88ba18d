"""Chat generation: one engine request, answered whole or as an SSE stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.access_log import record_engine_marks, record_mark, record_usage
from app.chat import wire
from app.chat.budget import budgeted
from app.chat.prompt import Prompt
from app.engine import Engine, cached_tokens
from app.engine_errors import ABORTED, as_gateway_error, engine_failure, error_frame
from app.errors import GatewayError
from app.greedy_n import fan_out
from app.reasoning import ReasoningStream, split_reasoning
from app.text_stream import SequenceTexts
from app.token_bytes import TokenTexts
from app.tool_calls import ToolCall, ToolCallDelta, ToolCallStream, parse_tool_calls


@dataclass(frozen=True)
class ReasoningMode:
    """How `<think>` output is returned."""

    parse: bool = True  # separate reasoning from content
    keep: bool = True  # return it (False: `return_reasoning: false`)
    in_reasoning: bool = False  # the prompt itself opened `<think>`


@dataclass
class ChatJob:
    """Everything needed to run one chat request on the engine."""

    request_id: str
    created: int
    model: str
    prompt: Prompt
    params: Any  # vllm.SamplingParams
    top_logprobs: int | None = None  # None: no logprobs
    include_usage: bool = False
    continuous_usage: bool = False  # usage in every chunk (vLLM's continuous_usage_stats)
    reasoning: ReasoningMode = field(default_factory=ReasoningMode)
    reasoning_budget: int | None = None  # max_reasoning_tokens (n=1 only)
    tool_calls: bool = False  # turn <tool_call> blocks into message.tool_calls
    answer_params: Any = None  # a constrained answer's own SamplingParams, after thinking
    active: dict[str, Callable[[], object]] | None = None  # in-flight registry (for drain)
    arrival_time: float | None = None  # time.time() when the request arrived (vLLM's timings)
    copies: int = 1  # choices per engine sequence (n > 1 with greedy sampling: app.greedy_n)
    constraint_param: str | None = None  # the field the output constraint came from
    cached_tokens: int | None = None  # set at the first output: the prompt's prefix-cache hits


def _split(text: str, mode: ReasoningMode) -> tuple[str | None, str]:
    if not mode.parse:
        return None, text
    reasoning, content = split_reasoning(text, in_reasoning=mode.in_reasoning)
    return (reasoning if mode.keep else None), content


async def _steps(engine: Engine, job: ChatJob) -> AsyncIterator[Sequence[Any]]:
    """The engine's outputs per step (vLLM CompletionOutputs, or budgeted Steps), registered
    as in flight (so a drain can abort them); an engine abort becomes a 503 error instead
    of a silently truncated answer. The plain case iterates the engine's own generator:
    no generator of ours in between, one hop less per step."""
    ids = (job.request_id, job.request_id + "-answer")

    def abort() -> object:
        return asyncio.ensure_future(asyncio.gather(*(engine.abort(i) for i in ids)))

    if job.active is not None:
        job.active[job.request_id] = abort
    plain = job.reasoning_budget is None and job.answer_params is None
    source: Any  # an async generator either way: vLLM's RequestOutputs or our Steps
    if plain:
        source = engine.generate(job.prompt.token_ids, job.params, job.request_id, job.arrival_time)
    else:
        source = budgeted(
            engine,
            job.prompt.token_ids,
            job.params,
            job.request_id,
            job.reasoning_budget,
            job.reasoning.in_reasoning,
            job.answer_params,
            job.arrival_time,
        )
    texts = _own_texts(engine, job) if plain else None
    first = True
    try:
        async for step in source:
            if first:
                first = False
                if plain:
                    record_engine_marks(getattr(step, "metrics", None))
                job.cached_tokens = cached_tokens(step if plain else step[0])
            outputs = step.outputs if plain else step
            for out in outputs:
                if out.finish_reason == "abort":
                    raise ABORTED
                if texts is not None:
                    out.text = texts.text(out)
            yield fan_out(outputs, job.copies)
    finally:
        if job.active is not None:
            job.active.pop(job.request_id, None)
        await source.aclose()


def _own_texts(engine: Engine, job: ChatJob) -> SequenceTexts | None:
    """The gateway's own decoding, where the engine returns token ids only."""
    if getattr(job.params, "detokenize", True) or engine.detokenizer is None:
        return None
    return SequenceTexts(engine.detokenizer, bool(job.params.include_stop_str_in_output))


class _Choice:
    __slots__ = ("finish", "logprobs", "parser", "sent_role", "text", "texts", "tokens", "tools")

    def __init__(
        self, mode: ReasoningMode, texts: TokenTexts, streaming: bool, tool_calls: bool = False
    ) -> None:
        use_parser = streaming and mode.parse
        self.parser = ReasoningStream(in_reasoning=mode.in_reasoning) if use_parser else None
        self.tools = ToolCallStream() if streaming and tool_calls else None
        self.sent_role = False
        self.tokens = 0
        self.text: list[str] = []
        self.logprobs: list[dict[str, Any]] = []
        self.finish: str | None = None
        self.texts = texts  # each token's text and bytes, for logprobs


async def complete(engine: Engine, job: ChatJob) -> dict[str, Any]:
    """Run the request to the end and build a `chat.completion` body."""
    choices: dict[int, _Choice] = {}
    steps = _steps(engine, job)
    try:
        async for outputs in steps:
            for out in outputs:
                choice = choices.get(out.index)
                if choice is None:
                    record_mark("first_output")
                    choice = choices[out.index] = _Choice(
                        job.reasoning, TokenTexts(engine.token_bytes), streaming=False
                    )
                choice.text.append(out.text)
                choice.tokens += len(out.token_ids)
                if job.top_logprobs is not None and out.logprobs:
                    choice.logprobs.extend(
                        wire.logprobs_content(
                            out.token_ids, out.logprobs, job.top_logprobs, choice.texts
                        )
                    )
                if out.finish_reason is not None:
                    choice.finish = out.finish_reason
    except GatewayError:
        raise
    except Exception as exc:
        raise engine_failure(exc, job.constraint_param) from exc
    finally:
        await steps.aclose()  # type: ignore[attr-defined]
    if not choices:
        raise GatewayError("The engine returned no output.", status=500, code="engine_error")
    body = []
    for index in sorted(choices):
        choice = choices[index]
        reasoning, content = _split("".join(choice.text), job.reasoning)
        calls: list[ToolCall] = []
        if job.tool_calls:
            content, calls = parse_tool_calls(content)
        logprobs = None
        if job.top_logprobs is not None:
            logprobs = {"content": choice.logprobs, "refusal": None}
        body.append(
            {
                "index": index,
                "message": wire.assistant_message(content, reasoning, calls),
                "logprobs": logprobs,
                "finish_reason": wire.finish_reason(choice.finish or "stop", bool(calls)),
            }
        )
    usage = _usage(job, choices)
    record_usage(usage["prompt_tokens"], usage["completion_tokens"])
    return wire.chat_completion(job.request_id, job.created, job.model, body, usage)


def _usage(job: ChatJob, choices: dict[int, _Choice]) -> dict[str, Any]:
    """The usage so far: the prompt, every choice's tokens, the prefix cache's share."""
    done = sum(c.tokens for c in choices.values())
    return wire.usage_dict(len(job.prompt.token_ids), done, job.cached_tokens)


def _delta(
    choice: _Choice, mode: ReasoningMode, text: str, final: bool, framed: bool = False
) -> dict[str, Any]:
    """The delta for new text: reasoning, content and tool calls separated, role first.

    `framed`: a frame goes out for this output whatever its text (it carries logprobs), so
    a choice's first frame has the role even when its first token's text is held back (a
    character split across tokens)."""
    delta: dict[str, Any] = {}
    if choice.parser is None:
        content = text
        reasoning = ""
    else:
        reasoning, content = choice.parser.feed(text)
        if final:
            more_r, more_c = choice.parser.finish()
            reasoning += more_r
            content += more_c
    calls: list[ToolCallDelta] = []
    if choice.tools is not None:
        content, calls = choice.tools.feed(content)
        if final:
            more_c, more_calls = choice.tools.finish()
            content += more_c
            calls += more_calls
    if not choice.sent_role and (reasoning or content or calls or final or framed):
        delta["role"] = "assistant"
        choice.sent_role = True
    if reasoning and mode.keep:
        delta["reasoning_content"] = reasoning
        delta["reasoning"] = reasoning
    if content:
        delta["content"] = content
    elif final and "role" in delta and not calls:
        delta["content"] = ""
    if calls:
        delta["tool_calls"] = [call.wire() for call in calls]
    return delta


async def stream(engine: Engine, job: ChatJob) -> AsyncGenerator[bytes, None]:
    """SSE frames; always ends with `[DONE]`, with an error frame if the engine fails.

    The first frame carries the first generated text (no early empty frame), so time to
    first token is what clients measure. Closing the generator aborts the engine request.
    """
    writer = wire.ChunkWriter.create(job.request_id, job.created, job.model)
    mode = job.reasoning
    choices: dict[int, _Choice] = {}
    steps = _steps(engine, job)
    groups = wire.FrameGroups()
    tail = b""
    try:
        async for outputs in steps:
            for out in outputs:
                choice = choices.get(out.index)
                if choice is None:
                    record_mark("first_output")
                    texts = TokenTexts(engine.token_bytes)
                    choice = choices[out.index] = _Choice(mode, texts, True, job.tool_calls)
                choice.tokens += len(out.token_ids)
                finish = wire.finish_reason(out.finish_reason)
                logprobs = None
                if job.top_logprobs is not None and out.logprobs:
                    logprobs = wire.logprobs_content(
                        out.token_ids, out.logprobs, job.top_logprobs, choice.texts
                    )
                delta = _delta(choice, mode, out.text, finish is not None, bool(logprobs))
                if choice.tools is not None and choice.tools.called:
                    finish = wire.finish_reason(finish, tool_called=True)
                if delta or finish is not None or logprobs:
                    usage = _usage(job, choices) if job.continuous_usage else None
                    frame = writer.choice(out.index, delta, finish, logprobs, usage)
                    write = groups.frame(frame, finishing=finish is not None)
                    if write is not None:
                        yield write
        if job.include_usage:
            tail = writer.usage(_usage(job, choices))
    except Exception as exc:
        if not choices:  # refused before any output: app.routes.respond answers with its status
            raise as_gateway_error(exc, job.constraint_param) from exc
        tail = error_frame(exc, job.constraint_param)
    finally:
        usage = _usage(job, choices)
        record_usage(usage["prompt_tokens"], usage["completion_tokens"])
        await steps.aclose()  # type: ignore[attr-defined]
    yield groups.end(tail)
