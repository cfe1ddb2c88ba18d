"""Time to first chunk and to first text under load: `python -m bench.first_text_load SPEC`.

`vllm bench serve` times a server's first chunk with `choices`. `vllm serve` sends one
(an empty role chunk, then deltas whose content may be "") as soon as the first token is
generated; the gateway's first chunk waits for visible text. With random weights many
first tokens have none yet (part of a UTF-8 character, a skipped special token; in the
gateway before 2026-12-04 also whitespace, held in case a `<think>` followed), so at 32
or 64 streams the two TTFTs measure different moments (`bench.first_text` shows it one
request at a time). This probe drives a server as the benchmark does (`concurrency`
streams at once, random prompts shaped like the workload's, `ignore_eos`, every stream
read to its end) and times both moments for every request, the same way for either
server: the like-for-like comparison.

SPEC is a JSON file: {"port", "model", "prompts", "out_len", "sampling", "concurrency"}.
The result is one JSON line on stdout (`summarize`). The process raises its session's
CPU weight first, as the benchmark client does (`bench.machine.favour_client`).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.report_data import nearest_rank
from bench.sse import StreamTimes, data_event, stream_body


async def one_stream(session: Any, url: str, body: dict[str, Any]) -> StreamTimes:
    """Send one streamed request and read it to its end; ValueError when not a 200."""
    times = StreamTimes()
    start = time.perf_counter()
    async with session.post(url, json=body) as response:
        if response.status != 200:
            answer = (await response.read())[:300].decode(errors="replace")
            raise ValueError(f"HTTP {response.status}: {answer}")
        async for line in response.content:
            event = data_event(line)
            if event is not None:
                times.see(time.perf_counter() - start, event)
    return times


Timed = tuple[int, StreamTimes]  # the request's place in the sending order, its times


async def drive(spec: dict[str, Any]) -> tuple[list[Timed], list[str], float]:
    """Every prompt, `concurrency` at a time: each request's times (in sending order),
    the errors, and the wall seconds from the first request to the last answer."""
    import aiohttp

    concurrency = int(spec["concurrency"])
    url = f"http://127.0.0.1:{spec['port']}/v1/chat/completions"
    pending = list(reversed(list(enumerate(spec["prompts"]))))
    done: list[Timed] = []
    errors: list[str] = []
    timeout = aiohttp.ClientTimeout(total=600)
    connector = aiohttp.TCPConnector(limit=concurrency)

    sampling = spec.get("sampling", {})

    async def worker(session: Any) -> None:
        while pending:
            index, prompt = pending.pop()
            body = stream_body(spec["model"], prompt, spec["out_len"], sampling)
            try:
                done.append((index, await one_stream(session, url, body)))
            except (TimeoutError, ValueError, aiohttp.ClientError) as exc:
                errors.append(str(exc) or type(exc).__name__)

    start = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return sorted(done, key=lambda item: item[0]), errors, time.perf_counter() - start


def _ms(values: list[float], q: float) -> float:
    return round(1000 * nearest_rank(values, q), 2)


def _p50_ms(values: list[float]) -> float | None:
    return round(1000 * statistics.median(values), 2) if values else None


def summarize(
    done: list[Timed], errors: list[str], wall_s: float, concurrency: int
) -> dict[str, Any]:
    """Medians and p90s of the time to the first chunk with choices (what `vllm bench
    serve` times) and to the first chunk with text; the share of requests whose first
    chunk had text; requests per second over the whole probe. The first wave (the first
    `concurrency` requests, sent at once) and the later ones (each sent as one ended) are
    also given apart: a burst of arrivals against a steady stream."""
    failed = {"failed": len(errors), "first_error": errors[0]} if errors else {}
    timed = [(i, t) for i, t in done if t.first is not None and t.text is not None]
    if not timed:
        return {"concurrency": concurrency, "requests": 0, **failed}
    firsts = [t.first for _, t in timed if t.first is not None]
    texts = [t.text for _, t in timed if t.text is not None]
    wave = [t.text for i, t in timed if i < concurrency and t.text is not None]
    later = [t for i, t in timed if i >= concurrency]
    return {
        **failed,
        "concurrency": concurrency,
        "requests": len(timed),
        "first_chunk_ms_p50": _p50_ms(firsts),
        "first_text_ms_p50": _p50_ms(texts),
        "first_chunk_ms_p90": _ms(firsts, 0.9),
        "first_text_ms_p90": _ms(texts, 0.9),
        "first_chunk_has_text_share": round(
            sum(t.first_has_text for _, t in timed) / len(timed), 3
        ),
        "first_wave_first_text_ms_p50": _p50_ms(wave),
        "later_first_chunk_ms_p50": _p50_ms([t.first for t in later if t.first is not None]),
        "later_first_text_ms_p50": _p50_ms([t.text for t in later if t.text is not None]),
        "wall_s": round(wall_s, 2),
        "req_per_s": round(len(done) / wall_s, 2) if wall_s > 0 else None,
    }


def prompt_count(concurrency: int) -> int:
    """Requests per probe: three waves of `concurrency`, 40 at least."""
    return max(40, 3 * concurrency)


def run_probe(
    python: str, spec: dict[str, Any], spec_path: Path, timeout_s: float
) -> dict[str, Any]:
    """Run the probe in a process of its own (its own session, so that its CPU weight is
    raised as the benchmark client's is) and return its result; {"error": ...} when it
    fails. The spec file (the prompts: 2.4 MB at c=256 on the H200) goes once it is read."""
    spec_path.write_text(json.dumps(spec) + "\n")
    try:
        done = subprocess.run(
            [python, "-m", "bench.first_text_load", str(spec_path)],
            capture_output=True, text=True, timeout=timeout_s, start_new_session=True,
            cwd=Path(__file__).resolve().parent.parent,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"concurrency": spec["concurrency"], "error": f"timed out after {timeout_s:.0f} s"}
    finally:
        spec_path.unlink(missing_ok=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip()[-300:]
        return {"concurrency": spec["concurrency"], "error": f"exit {done.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main(argv: list[str]) -> int:
    from bench.machine import favour_client

    favour_client()
    with open(argv[0], encoding="utf-8") as fh:
        spec = json.load(fh)
    started = datetime.now(UTC).isoformat()  # for bench.access_marks' probe rows
    done, errors, wall_s = asyncio.run(drive(spec))
    result = summarize(done, errors, wall_s, int(spec["concurrency"]))
    print(json.dumps({**result, "started": started}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
