"""How long the gateway takes to tokenize each turn of a growing conversation: with the
parts of earlier turns remembered (`app.encode_turns`), with nothing remembered, and whole.

`python -m bench.encode_turns --model DIR [--turns 10] [--tokens 300] [--repeats 5]` builds
a conversation of random-id messages (`bench.first_text`: user and assistant in turn,
`--tokens` each), renders each turn's prompt with the model's chat template as the chat
route does, and times it three ways: "remembered", `app.encode.encode` with one tokenizer
across the turns (as an HTTP worker serving the conversation); "afresh", the same with
the tokenizer's parts forgotten before each turn (every part encoded); "whole",
`app.encode.encode_texts` on the whole prompt (the encoding before `app.encode_turns`,
without its hop through the event loop). Checks that every way gives
`tokenizer.encode`'s ids; prints, as JSON, each turn's prompt length and the medians in
milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from bench.first_text import prompts_from


def conversation_prompts(tokenizer: Any, turns: int, tokens: int, seed: int) -> list[str]:
    """Each turn's rendered prompt: the conversation so far, ending with a user message."""
    texts = prompts_from(tokenizer, tokens, 2 * turns, random.Random(seed))
    prompts: list[str] = []
    messages: list[dict[str, str]] = []
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": texts[2 * turn - 1]})
        messages.append({"role": "user", "content": texts[2 * turn]})
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompts.append(str(prompt))
    return prompts


async def time_turns(tokenizer: Any, prompts: Sequence[str], way: str) -> list[float]:
    """Milliseconds each prompt's encoding took one `way` (see above), in order."""
    from app.encode import encode, encode_texts, forget_turns

    took: list[float] = []
    for prompt in prompts:
        if way == "afresh":
            forget_turns(tokenizer)
        start = time.perf_counter()
        if way == "whole":
            (ids,) = encode_texts(tokenizer.backend_tokenizer, [prompt])
        else:
            ids = await encode(tokenizer, prompt)
        took.append((time.perf_counter() - start) * 1e3)
        if ids != tokenizer.encode(prompt, add_special_tokens=False):
            raise AssertionError(f"the ids of a {len(prompt)}-character prompt differ ({way})")
    return took


async def measure(tokenizer: Any, prompts: Sequence[str], repeats: int) -> dict[str, Any]:
    from app.encode import forget_turns

    runs: dict[str, list[list[float]]] = {"remembered": [], "afresh": [], "whole": []}
    for _ in range(repeats):
        for way in runs:
            forget_turns(tokenizer)  # each pass starts with nothing seen
            runs[way].append(await time_turns(tokenizer, prompts, way))
    medians = {
        way: [round(statistics.median(t[i] for t in taken), 3) for i in range(len(prompts))]
        for way, taken in runs.items()
    }
    return {
        "prompt_chars": [len(p) for p in prompts],
        "ms_p50_per_turn": medians,
        "ms_total": {way: round(sum(values), 2) for way, values in medians.items()},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model directory (its tokenizer)")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=300, help="tokens per message")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    prompts = conversation_prompts(tokenizer, args.turns, args.tokens, args.seed)
    print(json.dumps(asyncio.run(measure(tokenizer, prompts, args.repeats))))


if __name__ == "__main__":
    main()
