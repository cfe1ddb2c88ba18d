"""Where a py-spy recording's samples went: `py-spy record --format raw` collapsed stacks
(one `frame;frame;... COUNT` line each) summed by the leaf frame's package, by our own
functions (`app/`, self and inclusive) and by leaf function; with `--subprocesses`, one
summary per process. Used by `bench.profile`."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

# leaf-frame buckets, first match wins (matched against the frame's file path)
BUCKETS = [
    ("gateway app/", re.compile(r"(^|/)app/")),
    (
        "vllm output processing (detokenize, RequestOutput)",
        re.compile(
            r"vllm/(v1/engine/(output_processor|detokenizer|logprobs|async_llm)|outputs|"
            r"tokenizers?/|transformers_utils/)"
        ),
    ),
    (
        "vllm engine client (ZMQ, msgspec decode)",
        re.compile(
            r"vllm/v1/engine/core_client|"
            r"vllm/v1/serial_utils|zmq|msgspec"
        ),
    ),
    ("vllm serving layer (entrypoints)", re.compile(r"vllm/entrypoints")),
    ("vllm other", re.compile(r"vllm/")),
    ("tokenizers / transformers", re.compile(r"tokenizers|transformers/")),
    ("pydantic", re.compile(r"pydantic")),
    ("json / orjson", re.compile(r"(^|/)json/|orjson")),
    ("starlette / fastapi", re.compile(r"starlette|fastapi")),
    ("uvicorn / httptools / h11", re.compile(r"uvicorn|httptools|h11")),
    ("prometheus_client", re.compile(r"prometheus_client")),
    ("asyncio / uvloop", re.compile(r"asyncio|uvloop")),
]


def parse_frame(frame: str) -> tuple[str, str]:
    """py-spy raw frames look like `function (path/file.py:123)`."""
    m = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame, ""
    return m.group(1), m.group(2)


def bucket_of(path: str, func: str) -> str:
    for name, rx in BUCKETS:
        if rx.search(path):
            return name
    if not path:
        return "native / unknown"
    return "other Python (stdlib etc.)"


def split_processes(raw: Path) -> dict[str, list[str]]:
    """`py-spy --subprocesses` roots every stack in `process PID:"cmdline"` frames (parent
    first): the raw lines of each sampled process, keyed by its innermost such frame."""
    out: dict[str, list[str]] = collections.defaultdict(list)
    for line in raw.read_text(errors="replace").splitlines():
        frames = line.split(";")
        n = 0
        while n < len(frames) - 1 and frames[n].startswith("process "):
            n += 1
        key = frames[n - 1][len("process ") :][:120] if n else "main"
        out[key].append(";".join(frames[n:]))
    return dict(out)


def summarize_processes(raw: Path) -> dict[str, Any]:
    """Per-process summaries (largest first) of a `--subprocesses` recording."""
    per = split_processes(raw)
    total = sum(_samples(lines) for lines in per.values()) or 1
    ranked = sorted(per.items(), key=lambda kv: -_samples(kv[1]))
    return {
        key: {"share_pct": round(100.0 * _samples(lines) / total, 1), **summarize(lines)}
        for key, lines in ranked
    }


def _samples(lines: list[str]) -> int:
    return sum(int(c) for c in (ln.rpartition(" ")[2] for ln in lines) if c.isdigit())


def stacks(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """Each raw collapsed-stack line's frames (outermost first) and samples; lines that are
    not one are skipped."""
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            yield stack.split(";"), int(count)


def summarize(raw: Path | list[str]) -> dict[str, Any]:
    lines = raw.read_text(errors="replace").splitlines() if isinstance(raw, Path) else raw
    leaf: collections.Counter[str] = collections.Counter()
    app_self: collections.Counter[str] = collections.Counter()
    app_incl: collections.Counter[str] = collections.Counter()
    vllm_incl: collections.Counter[str] = collections.Counter()  # the engine core's steps
    top_leaf: collections.Counter[str] = collections.Counter()
    total = 0
    for frames, count in stacks(lines):
        total += count
        func, path = parse_frame(frames[-1])
        leaf[bucket_of(path, func)] += count
        top_leaf[f"{func} ({_short(path)})"] += count
        if "/app/" in "/" + path:
            app_self[f"{func} ({_short(path)})"] += count
        seen = set()
        for fr in frames:
            f, p = parse_frame(fr)
            into = app_incl if "/app/" in "/" + p else vllm_incl if "vllm/" in p else None
            key = f"{f} ({_short(p)})"
            if into is not None and key not in seen:
                seen.add(key)
                into[key] += count
    pct = (lambda n: round(100.0 * n / total, 1)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "by_leaf_bucket_pct": {k: pct(v) for k, v in leaf.most_common()},
        "app_self_pct": {k: pct(v) for k, v in app_self.most_common(15)},
        "app_inclusive_pct": {k: pct(v) for k, v in app_incl.most_common(15)},
        "top_leaf_functions_pct": {k: pct(v) for k, v in top_leaf.most_common(25)},
        "vllm_inclusive_pct": {k: pct(v) for k, v in vllm_incl.most_common(25)},
    }


def _short(path: str) -> str:
    for marker in ("site-packages/", "/app/", "lib/python3"):
        if marker in path:
            return path[path.index(marker) + (len(marker) if marker != "/app/" else 1) :]
    return path
