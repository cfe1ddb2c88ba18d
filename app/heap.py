"""Give the C heap's free pages back to the system once start-up is over.

Loading a tokenizer leaves most of what it allocated on the way free but kept by glibc's
malloc: loading Qwen3's 151,936-id `tokenizer.json` raised a process's RSS by 178 MiB, of
which `malloc_trim(0)` gave back 120 (CPU box, transformers 5); an HTTP worker loads two
(its own and vLLM's) and checks fastokens. Freed chunks in the middle of the heap are only
returned by an explicit trim, so each process trims once, when it is ready to serve.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path

logger = logging.getLogger(__name__)


def rss_kib() -> int | None:
    """This process's resident set (VmRSS), or None where /proc does not say."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def trim_heap() -> tuple[int, int] | None:
    """`malloc_trim(0)` where the C library has it (glibc); RSS in KiB before and after,
    or None where there is no such call (musl, macOS)."""
    try:  # the process's own symbols, the C library's among them (no ldconfig lookup)
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    before = rss_kib()
    trim(0)
    after = rss_kib()
    if before is None or after is None:
        return None
    return before, after


def trim_after_start() -> None:
    """Trim, and log what it gave back."""
    trimmed = trim_heap()
    if trimmed is None:
        logger.info("start-up heap not trimmed (no malloc_trim here)")
        return
    before, after = trimmed
    logger.info("start-up heap trimmed: RSS %d -> %d MiB", before // 1024, after // 1024)
