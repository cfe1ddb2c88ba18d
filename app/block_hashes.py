"""The prefix cache's block hashes as vLLM computes them, with less Python per block.

vLLM's engine core builds each request's chain of block hashes (one per block of 16 tokens
on a GPU) on its input thread, under the interpreter lock, so the work cannot overlap the
engine loop's own Python: while a burst of 256 requests of 1,024 tokens comes in, one
engine step stretches by about as long as the input thread spends building them
(docs/benchmarks/profiling.md, sessions 40-41). vLLM's hasher calls four helpers per
block for keys only multimodal, LoRA, cache-salted and prompt-embedding requests have; for
every other request each block's hash is
`hash_fn((parent or NONE_HASH, tuple(block), None))`, vLLM's own `hash_block_tokens`, and
this computes just that: 0.088 against 0.123 ms for a 1,024-token prompt in 16-token
blocks on the 2-core box (the hash function itself, pickle and SHA-256, is the rest).

Requests with any extra key go to vLLM's own hasher. The first `CHECKED` requests hashed
here are hashed by vLLM's as well and compared: a vLLM that hashes otherwise gets its own
hasher back for good (with a warning), as does any error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

CHECKED = 16

Hasher = Callable[[Any], list[Any]]

_log = logging.getLogger("vllm.gateway")


class BlockHasher:
    """The state behind one hasher of `hasher`: whether it still hashes, how many more
    requests it checks against `vllm_hasher`."""

    def __init__(
        self, block_size: int, hash_fn: Callable[[Any], bytes], vllm_hasher: Hasher, utils: Any
    ) -> None:
        self.block_size = block_size
        self.hash_fn = hash_fn
        self.vllm_hasher = vllm_hasher
        self.utils = utils  # vLLM's kv_cache_utils: NONE_HASH and the extra keys
        self.to_check = CHECKED
        self.on = True

    def new_hashes(self, request: Any, start: int) -> list[Any]:
        """The hashes of the request's full blocks from token `start` on (one at least)."""
        if not self.on or not self._plain(request, start):
            return self.vllm_hasher(request)
        try:
            hashes = self._hashes(request, start)
        except Exception:
            self._off("failed", exc_info=True)
            return self.vllm_hasher(request)
        if self.to_check:
            self.to_check -= 1
            theirs = self.vllm_hasher(request)
            if hashes != theirs:
                self._off("differ from vLLM's")
                return theirs
        return hashes

    def _plain(self, request: Any, start: int) -> bool:
        """No extra key in any block: none of vLLM's sources of one, and vLLM's own
        function finds none for this first new block."""
        if request.mm_features or request.lora_request or request.cache_salt:
            return False
        if getattr(request, "prompt_embeds", None) is not None:
            return False
        if not isinstance(getattr(request, "_all_token_ids", None), list):
            return False
        end = start + self.block_size
        keys, _ = self.utils.generate_block_hash_extra_keys(request, start, end, 0)
        return keys is None

    def _hashes(self, request: Any, start: int) -> list[Any]:
        tokens: list[int] = request._all_token_ids
        size, hash_fn, none_hash = self.block_size, self.hash_fn, self.utils.NONE_HASH
        parent = request.block_hashes[-1] if request.block_hashes else None
        hashes = []
        for at in range(start, len(tokens) - size + 1, size):
            parent = hash_fn((parent or none_hash, tuple(tokens[at : at + size]), None))
            hashes.append(parent)
        return hashes

    def _off(self, why: str, exc_info: bool = False) -> None:
        self.on = False
        _log.warning(
            "block hashes by the gateway %s: vLLM's own from now on", why, exc_info=exc_info
        )


def hasher(
    block_size: int, hash_fn: Callable[[Any], bytes], vllm_hasher: Hasher, utils: Any
) -> Hasher:
    """A request's new full blocks' hashes, as `vllm_hasher` would give them. A plain
    function, as vLLM's, whose first lines are vLLM's: a request calls it after every
    token it decodes, nearly always with no new full block (`.state`: its BlockHasher)."""
    state = BlockHasher(block_size, hash_fn, vllm_hasher, utils)

    def request_block_hasher(request: Any) -> list[Any]:
        start = len(request.block_hashes) * block_size
        if start + block_size > request.num_tokens:
            return []
        return state.new_hashes(request, start)

    request_block_hasher.state = state  # type: ignore[attr-defined]
    return request_block_hasher


def install(core: Any = None, utils: Any = None) -> bool:
    """Have vLLM's engine core (`vllm.v1.engine.core`, as it imported
    `get_request_block_hasher`) wrap each hasher it makes in a `hasher`. Call
    in the engine core's process before its EngineCore is built. False, and nothing
    changed, where that vLLM has no such function."""
    if core is None or utils is None:
        import vllm.v1.core.kv_cache_utils
        import vllm.v1.engine.core

        core, utils = vllm.v1.engine.core, vllm.v1.core.kv_cache_utils
    vllms = getattr(core, "get_request_block_hasher", None)
    if not callable(vllms) or not hasattr(utils, "generate_block_hash_extra_keys"):
        return False
    if hasattr(vllms, "vllm_own"):
        return True  # installed already

    def get_request_block_hasher(hash_block_size: int, caching_hash_fn: Any) -> Hasher:
        own = vllms(hash_block_size, caching_hash_fn)
        return hasher(hash_block_size, caching_hash_fn, own, utils)

    setattr(get_request_block_hasher, "vllm_own", vllms)  # noqa: B010
    core.get_request_block_hasher = get_request_block_hasher
    return True
