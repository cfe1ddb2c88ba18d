"""How long the gateway's prompt encoding takes on this machine: whole against in pieces.

`python -m bench.encode_speed --model DIR [--tokens 1024,256] [--texts 40]` loads the
model's tokenizer, makes prompts as `vllm bench serve`'s random dataset does
(`bench.first_text`: random ids, decoded, fitted to the token count when re-encoded) and
times, per text, the Hugging Face tokenizer's `encode` against `app.encode.encode_sync`
(the gateway's way without `fastokens`), `encode_batch` over 2, 4 and 8 pieces and, where
it is installed and agrees, `fastokens` (`app.fast_encode`, the gateway's way with it); it
checks that every way gives the same ids and prints medians in milliseconds as JSON.
`wave_mean_ready_ms`: all the texts at once, as a burst brings them, one after another
against `app.encode`'s batches (the mean time until a text's ids are ready).
Seconds, not minutes: run it on a device before a benchmark to see what the host's CPUs
make of it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from app import fast_encode
from app.cpus import usable_cpus
from bench.first_text import prompts_from


def ways(tokenizer: Any) -> dict[str, Callable[[str], list[int]]]:
    """The encodings to time, by name; each returns the ids."""
    from app.encode import encode_sync
    from app.encode_pieces import cut, encode_each

    backend = tokenizer.backend_tokenizer

    def pieces(count: int) -> Callable[[str], list[int]]:
        return lambda text: encode_each(backend, cut(text, count))

    named: dict[str, Callable[[str], list[int]]] = {
        "hf_encode": lambda text: list(tokenizer.encode(text, add_special_tokens=False)),
        "encode_sync": lambda text: encode_sync(tokenizer, text),
        "pieces_2": pieces(2),
        "pieces_4": pieces(4),
        "pieces_8": pieces(8),
    }
    # the gateway's fastokens where it is installed and agrees; loaded, not attached, so
    # the other ways stay as they are
    fast, _ = fast_encode.load(tokenizer)
    if fast is not None:
        named["fastokens"] = lambda text: fast_encode.encode_texts(fast, [text])[0]
    return named


def time_ways(
    named: dict[str, Callable[[str], list[int]]], texts: Sequence[str], repeats: int
) -> dict[str, list[float]]:
    """Median milliseconds per way, one median per repeat (ways interleaved per text)."""
    medians: dict[str, list[float]] = {name: [] for name in named}
    for text in texts:
        results = {name: way(text) for name, way in named.items()}
        if len({tuple(ids) for ids in results.values()}) != 1:
            raise AssertionError(f"the ways disagree on a text of {len(text)} characters")
    for _ in range(repeats):
        samples: dict[str, list[float]] = {name: [] for name in named}
        for text in texts:
            for name, way in named.items():
                start = time.perf_counter()
                way(text)
                samples[name].append((time.perf_counter() - start) * 1e3)
        for name, values in samples.items():
            medians[name].append(round(statistics.median(values), 3))
    return medians


def wave(tokenizer: Any, texts: Sequence[str], repeats: int) -> dict[str, list[float]]:
    """All `texts` at once, as a burst of requests brings them to an HTTP worker: the mean
    milliseconds until a text's ids are ready, one per repeat, encoded one after another
    (`encode_sync`, as the gateway did) against in batches of one text per usable CPU
    (`app.encode.encode_texts`, as `app.encode`'s wave does; a batch's texts are all ready
    when its last is)."""
    from app.encode import encode_sync, encode_texts

    backend = tokenizer.backend_tokenizer
    cap = usable_cpus()
    batches = [list(texts[i : i + cap]) for i in range(0, len(texts), cap)]
    each = [encode_sync(tokenizer, text) for text in texts]
    if [ids for batch in batches for ids in encode_texts(backend, batch)] != each:
        raise AssertionError("the wave's batches disagree with encode_sync")
    out: dict[str, list[float]] = {"one_after_another": [], "batches": []}
    for _ in range(repeats):
        ready: list[float] = []
        start = time.perf_counter()
        for text in texts:
            encode_sync(tokenizer, text)
            ready.append(time.perf_counter() - start)
        out["one_after_another"].append(round(statistics.mean(ready) * 1e3, 3))
        ready = []
        start = time.perf_counter()
        for batch in batches:
            encode_texts(backend, batch)
            ready += [time.perf_counter() - start] * len(batch)
        out["batches"].append(round(statistics.mean(ready) * 1e3, 3))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model directory (its tokenizer)")
    parser.add_argument("--tokens", default="1024,256", help="prompt lengths in tokens")
    parser.add_argument("--texts", type=int, default=40, help="prompts per length")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over them")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    rng = random.Random(0)
    report: dict[str, Any] = {"cpus": usable_cpus(), "lengths": {}}
    for tokens in (int(value) for value in args.tokens.split(",")):
        texts = prompts_from(tokenizer, tokens, args.texts, rng)
        report["lengths"][tokens] = {
            "chars_p50": statistics.median(len(text) for text in texts),
            "ms_p50_per_repeat": time_ways(ways(tokenizer), texts, args.repeats),
            "wave_mean_ready_ms": wave(tokenizer, texts, args.repeats),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
