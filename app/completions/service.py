"""Legacy completions: one engine request per prompt, answered whole or as an SSE stream.

Choice `i` of prompt `p` has index `p * n + i`, as in OpenAI's API. With `echo`, a
choice's text (and logprobs) start with its prompt; with `echo` and `max_tokens: 0`
they hold the prompt only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from app.access_log import record_engine_marks, record_mark, record_usage
from app.chat.wire import FrameGroups
from app.completions import wire
from app.completions.prepare import CompletionJob
from app.engine import Engine, cached_tokens
from app.engine_errors import ABORTED, as_gateway_error, engine_failure, error_frame
from app.errors import GatewayError
from app.greedy_n import fan_out
from app.token_bytes import TokenTexts


@dataclass
class _Choice:
    index: int
    texts: TokenTexts  # each token's text, for logprobs
    text: list[str] = field(default_factory=list)
    logprobs: wire.LegacyLogprobs = field(default_factory=wire.LegacyLogprobs)
    tokens: int = 0
    echoed: bool = False
    finish: str | None = None


@dataclass(frozen=True)
class _Piece:
    """New output of one choice: text, logprobs and finish reason (None while running)."""

    choice: _Choice
    text: str
    logprobs: wire.LegacyLogprobs | None
    finish: str | None


def _engine_ids(job: CompletionJob) -> list[str]:
    return [f"{job.request_id}-{i}" for i in range(len(job.prompts))]


async def _outputs(engine: Engine, job: CompletionJob) -> AsyncIterator[tuple[int, Any]]:
    """(prompt index, RequestOutput) from every prompt's engine request, as they come."""
    generators = [
        engine.generate(prompt.token_ids, job.params, engine_id, job.arrival_time)
        for prompt, engine_id in zip(job.prompts, _engine_ids(job), strict=True)
    ]
    if len(generators) == 1:
        try:
            async for output in generators[0]:
                yield 0, output
        finally:
            await generators[0].aclose()  # type: ignore[attr-defined]
        return
    queue: asyncio.Queue[tuple[int, Any, BaseException | None, bool]] = asyncio.Queue()

    async def pump(index: int, source: AsyncIterator[Any]) -> None:
        try:
            async for output in source:
                await queue.put((index, output, None, False))
        except Exception as exc:
            await queue.put((index, None, exc, True))
        else:
            await queue.put((index, None, None, True))

    tasks = [asyncio.ensure_future(pump(i, g)) for i, g in enumerate(generators)]
    try:
        running = len(tasks)
        while running:
            index, output, error, done = await queue.get()
            if error is not None:
                raise error
            if done:
                running -= 1
            else:
                yield index, output
    finally:
        for task in tasks:
            task.cancel()  # cancelling a vLLM generate() aborts its request
        await asyncio.gather(*tasks, return_exceptions=True)


async def _pieces(
    engine: Engine, job: CompletionJob, choices: dict[int, _Choice]
) -> AsyncGenerator[_Piece, None]:
    """Every choice's new output, echo and logprobs applied, as the engine makes it."""
    active = _register(engine, job)
    outputs = _outputs(engine, job)
    try:
        async for prompt_index, result in outputs:
            prompt = job.prompts[prompt_index]
            for out in fan_out(result.outputs, job.copies):
                if out.finish_reason == "abort":
                    raise ABORTED
                index = prompt_index * job.n + out.index
                choice = choices.get(index)
                if choice is None:
                    record_engine_marks(getattr(result, "metrics", None))
                    cached = cached_tokens(result)
                    if cached is not None:
                        job.cached_tokens.setdefault(prompt_index, cached)
                    record_mark("first_output")
                    choice = choices[index] = _Choice(index, TokenTexts(engine.token_bytes))
                text, ids, positions = "", [], []
                if job.echo and not choice.echoed:
                    choice.echoed = True
                    text, ids = prompt.text, list(prompt.token_ids)
                    positions = list(result.prompt_logprobs or [None] * len(ids))
                if not job.echo_only:
                    choice.tokens += len(out.token_ids)
                    text += out.text
                    ids += list(out.token_ids)
                    positions += list(out.logprobs or [])
                logprobs = None
                if job.logprobs is not None:
                    logprobs = choice.logprobs.add(ids, positions, job.logprobs, choice.texts)
                finish = wire.finish_reason(out.finish_reason)
                if job.echo_only and finish is not None:
                    finish = "length"
                choice.text.append(text)
                choice.finish = finish or choice.finish
                yield _Piece(choice, text, logprobs, finish)
    finally:
        if active is not None:
            active.pop(job.request_id, None)
        await outputs.aclose()  # type: ignore[attr-defined]


def _register(engine: Engine, job: CompletionJob) -> dict[str, Callable[[], object]] | None:
    """Register the request as in flight, so a drain can abort it."""
    active = job.active
    if active is not None:
        ids = _engine_ids(job)
        active[job.request_id] = lambda: asyncio.ensure_future(
            asyncio.gather(*(engine.abort(i) for i in ids))
        )
    return active


def _usage(job: CompletionJob, choices: dict[int, _Choice]) -> dict[str, Any]:
    prompt_tokens = sum(len(p.token_ids) for p in job.prompts)
    cached = sum(job.cached_tokens.values()) if job.cached_tokens else None
    return wire.usage_dict(prompt_tokens, sum(c.tokens for c in choices.values()), cached)


async def complete(engine: Engine, job: CompletionJob) -> dict[str, Any]:
    """Run every prompt to the end and build a `text_completion` body."""
    choices: dict[int, _Choice] = {}
    pieces = _pieces(engine, job, choices)
    try:
        async for _ in pieces:
            pass
    except GatewayError:
        raise
    except Exception as exc:
        raise engine_failure(exc, job.constraint_param) from exc
    finally:
        await pieces.aclose()
    body = [
        wire.choice(
            c.index,
            "".join(c.text),
            c.logprobs.wire() if job.logprobs is not None else None,
            c.finish or "stop",
        )
        for c in sorted(choices.values(), key=lambda c: c.index)
    ]
    usage = _usage(job, choices)
    record_usage(usage["prompt_tokens"], usage["completion_tokens"])
    return wire.completion(job.request_id, job.created, job.model, body, usage)


async def stream(engine: Engine, job: CompletionJob) -> AsyncGenerator[bytes, None]:
    """SSE frames, one per choice and engine step; always ends with `[DONE]`."""
    choices: dict[int, _Choice] = {}
    pieces = _pieces(engine, job, choices)
    groups = FrameGroups()
    tail = b""
    try:
        async for piece in pieces:
            has_logprobs = piece.logprobs is not None and piece.logprobs.tokens
            if not piece.text and piece.finish is None and not has_logprobs:
                continue
            logprobs = piece.logprobs.wire() if piece.logprobs is not None else None
            body = wire.choice(piece.choice.index, piece.text, logprobs, piece.finish)
            usage = _usage(job, choices) if job.continuous_usage else None
            frame = wire.chunk(job.request_id, job.created, job.model, [body], usage)
            write = groups.frame(frame, finishing=piece.finish is not None)
            if write is not None:
                yield write
        if job.include_usage:
            tail = wire.chunk(job.request_id, job.created, job.model, [], _usage(job, choices))
    except Exception as exc:
        if not choices:  # refused before any output: app.routes.respond answers with its status
            raise as_gateway_error(exc, job.constraint_param) from exc
        tail = error_frame(exc, job.constraint_param)
    finally:
        usage = _usage(job, choices)
        record_usage(usage["prompt_tokens"], usage["completion_tokens"])
        with contextlib.suppress(Exception):
            await pieces.aclose()
    yield groups.end(tail)
