"""How long decoding generated tokens takes on this machine: vLLM's detokenizer against
the gateway's own (`app.text_stream`).

`python -m bench.decode_speed --model DIR [--prompt-tokens 1024,128] [--output-tokens 128]`
loads the model's tokenizer and, per request, builds vLLM's `FastIncrementalDetokenizer`
(what `AsyncLLM`'s output handler builds for a request it detokenizes: its
`DecodeStream` primed with the prompt's ids) and the gateway's `TextStream`, feeds both
the same random output ids one at a time, checks that they give the same text, and prints
as JSON the medians of the first token (building included: vLLM's first step decodes the
prompt) and of the later tokens, in milliseconds and microseconds, from a second pass
(the gateway keeps each token's bytes once read, so the first pass warms it as a server
that has run a while is warm). Seconds, not minutes:
run it on a device to see what the host's CPUs make of it. It builds vLLM's class
directly, an internal one, so a vLLM release that changes it needs this file changed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

from app.cpus import usable_cpus

Step = Callable[[int], str]


def vllm_stream(tokenizer: Any, prompt: list[int]) -> Step:
    """vLLM's detokenizer for one request with default sampling: its text per token."""
    from vllm import SamplingParams
    from vllm.v1.engine.detokenizer import FastIncrementalDetokenizer

    request = types.SimpleNamespace(
        request_id="bench",
        prompt_token_ids=prompt,
        sampling_params=SamplingParams(max_tokens=1 << 20),
    )
    owner = types.SimpleNamespace(_tokenizer=tokenizer.backend_tokenizer)
    detokenizer = FastIncrementalDetokenizer(owner, request)

    def step(token_id: int) -> str:
        detokenizer.update([token_id], False)
        return str(detokenizer.get_next_output_text(False, True))

    return step


def own_stream(tokenizer: Any) -> Callable[[list[int]], Step]:
    """The gateway's detokenizer for this tokenizer: a new stream per request."""
    from app.text_stream import own_detokenizer
    from app.token_bytes import TokenBytes

    detokenizer = own_detokenizer(tokenizer, TokenBytes(tokenizer))
    if detokenizer is None:
        raise SystemExit("the gateway leaves this tokenizer's decoding to vLLM")

    def make(prompt: list[int]) -> Step:
        stream = detokenizer.stream()  # the prompt does not change a byte-level token's text
        return lambda token_id: stream.push([token_id])

    return make


def time_request(
    make: Callable[[list[int]], Step], prompt: list[int], output: Sequence[int]
) -> tuple[str, float, float]:
    """The text, the first token's milliseconds (making the stream included) and the later
    tokens' microseconds each."""
    start = time.perf_counter()
    step = make(prompt)
    texts = [step(output[0])]
    first = time.perf_counter()
    texts += [step(token_id) for token_id in output[1:]]
    end = time.perf_counter()
    later = (end - first) / max(1, len(output) - 1)
    return "".join(texts), (first - start) * 1e3, later * 1e6


def time_both(
    tokenizer: Any,
    ours: Callable[[list[int]], Step],
    prompts: Sequence[list[int]],
    outputs: Sequence[list[int]],
) -> dict[str, dict[str, float]]:
    """Medians per detokenizer over the requests; `ours` makes the gateway's streams."""
    makers: dict[str, Callable[[list[int]], Step]] = {
        "vllm": lambda prompt: vllm_stream(tokenizer, prompt),
        "gateway": ours,
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in makers}
    for prompt, output in zip(prompts, outputs, strict=True):
        texts = set()
        for name, make in makers.items():
            text, first_ms, later_us = time_request(make, prompt, output)
            texts.add(text)
            samples[name].append((first_ms, later_us))
        if len(texts) != 1:
            raise AssertionError("vLLM's detokenizer and the gateway's gave different texts")
    return {
        name: {
            "first_token_ms_p50": round(statistics.median(s[0] for s in values), 4),
            "later_token_us_p50": round(statistics.median(s[1] for s in values), 3),
        }
        for name, values in samples.items()
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model directory (its tokenizer)")
    parser.add_argument("--prompt-tokens", default="1024,128", help="prompt lengths in ids")
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--requests", type=int, default=40, help="requests per prompt length")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    ours = own_stream(tokenizer)
    rng = random.Random(0)
    size = len(tokenizer)
    # a chat prompt is encoded text, so it ends where a character does: so do these
    end = list(tokenizer.encode("\n", add_special_tokens=False))
    report: dict[str, Any] = {"cpus": usable_cpus(), "prompt_tokens": {}}
    for length in (int(value) for value in args.prompt_tokens.split(",")):
        prompts = [
            [rng.randrange(size) for _ in range(length - len(end))] + end
            for _ in range(args.requests)
        ]
        outputs = [
            [rng.randrange(size) for _ in range(args.output_tokens)] for _ in range(args.requests)
        ]
        # a pass to warm both: the gateway reads each token's bytes once and keeps them, as
        # a server that has run a while has the tokens it generates
        time_both(tokenizer, ours, prompts, outputs)
        report["prompt_tokens"][length] = time_both(tokenizer, ours, prompts, outputs)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
