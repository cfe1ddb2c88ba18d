"""app.heap: free C-heap pages given back to the system after start-up."""

from __future__ import annotations

import ctypes
import json
import logging
import subprocess
import sys

import pytest

from app import heap

# A child process, so this test's heap is its own: 100,000 blocks of 1 KiB malloc'd and
# written, all but every 100th freed (those keep the freed ones from the heap's top, where
# free() alone would give them back), then trimmed.
_FRAGMENTED = """
import ctypes, ctypes.util, json
from app.heap import rss_kib, trim_heap
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(1024) for _ in range(100_000)]
for block in blocks:
    ctypes.memset(block, 1, 1024)
for index, block in enumerate(blocks):
    if index % 100:
        libc.free(block)
freed = rss_kib()
print(json.dumps({"freed": freed, "trim": trim_heap()}))
"""


def _has_malloc_trim() -> bool:
    """Looked up as app.heap looks it up: in the process's own symbols."""
    try:
        return hasattr(ctypes.CDLL(None), "malloc_trim")
    except OSError:
        return False


@pytest.mark.skipif(not _has_malloc_trim(), reason="no glibc malloc_trim on this system")
def test_trim_gives_back_what_freed_blocks_held() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FRAGMENTED], check=True, capture_output=True, text=True
    ).stdout
    result = json.loads(out)
    before, after = result["trim"]
    assert before >= result["freed"] - 1024
    # ~97 MiB were freed in the middle of the heap; the trim returns most of them
    assert before - after > 50 * 1024, result


def test_rss_kib_reads_this_process() -> None:
    kib = heap.rss_kib()
    assert kib is not None and kib > 1024


def test_no_malloc_trim_gives_none_and_logs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def missing(name: str | None) -> object:
        raise OSError("no C library here")

    monkeypatch.setattr(heap.ctypes, "CDLL", missing)
    assert heap.trim_heap() is None
    with caplog.at_level(logging.INFO, logger="app.heap"):
        heap.trim_after_start()
    assert "not trimmed" in caplog.text


@pytest.mark.skipif(not _has_malloc_trim(), reason="no glibc malloc_trim on this system")
def test_trim_after_start_logs_the_rss(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="app.heap"):
        heap.trim_after_start()
    assert "start-up heap trimmed: RSS" in caplog.text
