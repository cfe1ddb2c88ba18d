"""Time to first chunk and to first text, one streamed request at a time.

`vllm bench serve` starts its TTFT clock at the first chunk with `choices`, whatever it
holds: `vllm serve` sends an empty role chunk when the first token is generated, the
gateway's first chunk waits for visible text. With random weights many tokens are parts
of a UTF-8 character that the detokenizer holds back, so the two TTFTs measure different
moments. This probe measures both moments for both servers on prompts shaped like the
benchmark's (random token ids, decoded), so the report can compare like with like.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from bench.sse import StreamTimes, chat_stream, stream_body


def random_prompts(tokenizer_path: str, input_len: int, count: int, seed: int) -> list[str]:
    """Prompts made as `vllm bench serve --dataset-name random` makes them: random ids
    (no special tokens), decoded, and fitted to `input_len` tokens when re-encoded."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    return prompts_from(tokenizer, input_len, count, random.Random(seed))


def prompts_from(tokenizer: Any, input_len: int, count: int, rng: random.Random) -> list[str]:
    """`random_prompts` with a loaded tokenizer and a random generator of the caller's."""
    special = set(tokenizer.all_special_ids)
    allowed = [i for i in range(int(tokenizer.vocab_size)) if i not in special]
    return [
        fit_to_length(tokenizer, [rng.choice(allowed) for _ in range(input_len)], input_len, rng)
        for _ in range(count)
    ]


def fit_to_length(tokenizer: Any, ids: list[int], length: int, rng: random.Random) -> str:
    """Text whose encoding is `length` tokens (vLLM's `gen_prompt_decode_to_target_len`):
    decoding random ids and encoding the text again seldom gives the same count, so cut
    or extend and try again, ten times at most."""
    prompt = ""
    for _ in range(11):
        prompt = tokenizer.decode(ids)
        ids = tokenizer.encode(prompt, add_special_tokens=False)
        if len(ids) == length:
            break
        if len(ids) > length:
            ids = ids[:length]
        else:
            ids += [rng.randrange(int(tokenizer.vocab_size)) for _ in range(length - len(ids))]
    return str(prompt)


def timed_stream(port: int, body: dict[str, Any]) -> tuple[float | None, float | None, bool]:
    """(first chunk with choices, first chunk with text) in seconds from sending, and
    whether that first chunk had the text; ValueError with the server's answer when it is
    not a 200. Stops reading at the first text."""
    times = StreamTimes()
    with chat_stream(port, body) as events:
        for now, event in events:
            times.see(now, event)
            if times.text is not None:
                break
    return times.first, times.text, times.first_has_text


def first_text_probe(
    port: int,
    model: str,
    prompts: list[str],
    out_len: int,
    sampling: dict[str, float],
) -> dict[str, Any]:
    """Medians over `prompts`, sent one at a time (concurrency 1)."""
    firsts: list[float] = []
    texts: list[float] = []
    with_text = 0
    errors: list[str] = []
    for prompt in prompts:
        try:
            first, first_text, first_has_text = timed_stream(
                port, stream_body(model, prompt, out_len, sampling)
            )
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if first is None or first_text is None:
            continue
        firsts.append(first * 1000)
        texts.append(first_text * 1000)
        with_text += first_has_text
    failed = {"failed": len(errors), "first_error": errors[0]} if errors else {}
    if not firsts:
        return {"requests": 0, **failed}
    return {
        **failed,
        "requests": len(firsts),
        "first_chunk_ms_p50": round(statistics.median(firsts), 2),
        "first_text_ms_p50": round(statistics.median(texts), 2),
        "first_chunk_has_text_share": round(with_text / len(firsts), 3),
    }
